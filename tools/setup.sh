#!/usr/bin/env bash
# Set up everything motionstaff needs on a fresh machine with Python 3.11+:
#   bash tools/setup.sh [host|test]     (default: host)
# Creates .venv, installs the package with the chosen extra; for `test` also the Node.js
# MicroPython runtime and the Debian packages the browser and video tests use.
set -euo pipefail
cd "$(dirname "$0")/.."
extra="${1:-host}"
PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
.venv/bin/python -m pip install -q -e ".[$extra]"
if [ "$extra" = "test" ]; then
  # Debian packages: Node.js for the MicroPython WebAssembly port, Chromium for the viewer test,
  # ffmpeg for mp4 rendering. Installed only where missing (needs root, as on CI).
  need=()
  command -v node >/dev/null 2>&1 || need+=(nodejs npm)
  [ -x /usr/bin/chromium ] || need+=(chromium)
  command -v ffmpeg >/dev/null 2>&1 || need+=(ffmpeg)
  # offscreen OpenGL for MuJoCo's renderer (MUJOCO_GL=egl, or osmesa)
  [ -e /usr/lib/x86_64-linux-gnu/libOSMesa.so.8 ] || [ -e /usr/lib/aarch64-linux-gnu/libOSMesa.so.8 ] \
    || need+=(libosmesa6 libegl1 libgl1-mesa-dri libgbm1)
  if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
      apt-get update -qq >/dev/null
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
    else
      echo "setup: please install: ${need[*]}" >&2
    fi
  fi
  # Blender, to check that Blender's own importer reads the BVH files we write
  if ! command -v blender >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq blender >/dev/null \
      || echo "setup: blender could not be installed; its test will be skipped" >&2
  fi
  [ -f tools/ci_deps.sh ] && bash tools/ci_deps.sh
  [ -f tools/setup_mpy.sh ] && bash tools/setup_mpy.sh
fi
