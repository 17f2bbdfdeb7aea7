#!/usr/bin/env bash
# Install the MicroPython WebAssembly port (npm) used by tools/mpy/run.mjs and the tests, and
# rp2040js + uf2 for tools/mpy/pico.mjs (the emulated Pico; firmware in ../shared/firmware/rp2040).
#   bash tools/setup_mpy.sh          # needs node >= 18 and npm on PATH
# CI runs this before pytest; the MicroPython tests fail (not skip) when it has not been run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        apt-get update -qq && apt-get install -y -qq nodejs npm
    else
        echo "setup_mpy: node and npm are required (apt-get install nodejs npm)" >&2
        exit 1
    fi
fi
cd "$here/mpy"
if [ -f package-lock.json ]; then npm ci --no-audit --no-fund --silent; else npm install --no-audit --no-fund --silent; fi
node run.mjs --no-manifest - <<'PY'
import sys
print("MicroPython %s ready" % (sys.implementation.version,))
PY
# the emulated RP2040 (tools/mpy/pico.mjs: npm rp2040js + uf2) that boots the real rp2 port
node --input-type=module -e 'await import("rp2040js"); await import("uf2"); console.log("rp2040js ready")'
