#!/usr/bin/env bash
# The README's test command: set everything up, then run the whole test suite.
#   bash tools/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh test
exec .venv/bin/python -m pytest -n 2 -q "$@"
