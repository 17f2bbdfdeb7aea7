#!/usr/bin/env bash
# The README's main-job command: set up a desktop install, then run the demo on the
# built-in simulated capture unit.
#   bash tools/demo.sh [demo args...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh host
exec .venv/bin/motionstaff demo "$@"
