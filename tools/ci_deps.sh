#!/bin/sh
# What the host-tools tests need beyond the package's own dependencies (issue 6).
# Debian: chromium for the viewer test (Playwright drives /usr/bin/chromium, never its own
# browser build), ffmpeg for `render -o OUT.mp4`.
set -e
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    if ! command -v chromium >/dev/null || ! command -v ffmpeg >/dev/null; then
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium ffmpeg
    fi
fi
PY=${PY:-.venv/bin/python}
# PyPI: ezc3d (C3D import/export), playwright (the Python driver only; no `playwright install`)
"$PY" -m pip install -q "ezc3d>=1.5" "playwright>=1.40" "scipy>=1.11" "matplotlib>=3.8" "tqdm>=4.66" "pillow>=10"
