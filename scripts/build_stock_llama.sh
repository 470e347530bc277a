#!/usr/bin/env bash
# Builds llama-cpp-python at the version specdraft pins WITHOUT specdraft's patches (what a CPU user gets
# from `pip install llama-cpp-python`), once, into the user cache, and prints the folder of its llama.cpp
# libraries. Benchmarks take that folder to time "stock" beside specdraft's build in one run:
#     specdraft bench rag --backend llama-cpp --model qwen2.5-coder-1.5b --stock-llama-lib "$(bash scripts/build_stock_llama.sh)"
#     python benchmarks/llama_pass_cost.py --stock-lib "$(bash scripts/build_stock_llama.sh)"
# Flags: llama-cpp-python's defaults except -DGGML_NATIVE=OFF. A native build (-march=native) enables
# AVX-512/AMX where the machine has them and crashed on its first decode on the 2-core machine the
# benchmarks run on (scripts/setup.sh); specdraft's own build is AVX2 too, so both are compared on the
# same instruction set. It keeps llama-cpp-python's OpenMP thread pool (specdraft's build drops it only
# because it shares a process with torch; this build runs in a process of its own).
# Progress goes to stderr, the folder alone to stdout. ~8 min the first time on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SPECDRAFT_VENV:-.venv}"
version="$(sed -n 's/^LLAMA_CPP_VERSION=\([0-9.]*\).*/\1/p' scripts/setup.sh)"
cache="${SPECDRAFT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specdraft}"
target="$cache/stock-llama/llama-cpp-python-$version"
if ! ls "$target"/llama_cpp/lib/libllama.* >/dev/null 2>&1; then
    sdist="$cache/sources/llama_cpp_python-$version.tar.gz"
    if [ ! -f "$sdist" ]; then
        mkdir -p "$cache/sources"
        "$VENV/bin/python" -m pip download -q --no-deps --no-binary :all: -d "$cache/sources" "llama-cpp-python==$version" >&2
    fi
    echo "[stock-llama] building llama-cpp-python $version, unpatched, -DGGML_NATIVE=OFF (once: ~8 min)" >&2
    rm -rf "$target.tmp"
    CMAKE_ARGS="-DGGML_NATIVE=OFF" FORCE_CMAKE=1 "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        --no-deps --no-cache-dir --target "$target.tmp" "$sdist" >&2
    rm -rf "$target" && mv "$target.tmp" "$target"
fi
echo "$target/llama_cpp/lib"
