#!/usr/bin/env bash
# One command, fresh machine to full test run (slow real-model tests included).
# Extra arguments go to pytest (for example: ./test.sh -m "not slow" -x).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/setup_vllm.sh  # vLLM's CPU build in its own virtualenv, for tests/core/backends/engine/test_engine_vllm.py (not start.sh's)
# Two workers, one CPU each (tests/conftest.py pins them), whole files per worker, the real-model files first.
exec .venv/bin/python -m pytest -n "${SPECDRAFT_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
