#!/usr/bin/env bash
# One command, fresh machine to full test run (slow real-model tests included).
# Extra arguments go to pytest (for example: ./test.sh -m "not slow" -x).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/python -m pytest "$@"
