"""One place that knows every motion file format: read_motion / write_motion by extension.

    from host.formats import read_motion, write_motion, register_reader
    staff = read_motion("walk.bvh", bits=16)       # options a reader does not take are ignored
    write_motion("walk.png", staff, colour=True)
    register_reader(".c3d", "host.c3d:read_c3d")  # other parts add their formats here

Readers are `f(path, **opts) -> Staff`, writers `f(path, staff, **opts)`, named "module:function"
and imported only when used.
"""

import importlib
import inspect
import os

from protocol.errors import FormatError

READERS = {
    ".png": "host.stafffile:read_staff",
    ".bvh": "host.bvh:read_bvh",
    ".csv": "host.csvio:read_csv",
    ".msr": "host.commands.capture:read_msr",   # the unit's recording container
    ".c3d": "host.c3d:read_c3d",                # marker capture -> joint angles by IK
}
WRITERS = {
    ".png": "host.stafffile:write_staff",
    ".bvh": "host.bvh:write_bvh",
    ".csv": "host.csvio:write_csv",
}


def register_reader(ext, target):
    """Add or replace the reader for an extension (".c3d", "module:function")."""
    READERS[ext.lower()] = target


def register_writer(ext, target):
    WRITERS[ext.lower()] = target


def extension(path):
    return os.path.splitext(os.fspath(path))[1].lower()


def _resolve(table, path, verb):
    ext = extension(path)
    if ext not in table:
        raise FormatError("%s: cannot %s %r files (known: %s)"
                          % (os.fspath(path), verb, ext or "extensionless", " ".join(sorted(table))))
    mod, _, fn = table[ext].partition(":")
    return getattr(importlib.import_module(mod), fn)


def _call(fn, *args, **opts):
    params = inspect.signature(fn).parameters
    if not any(p.kind == p.VAR_KEYWORD for p in params.values()):
        opts = {k: v for k, v in opts.items() if k in params}
    return fn(*args, **{k: v for k, v in opts.items() if v is not None})


def read_motion(path, **opts):
    """Read any known motion file as a Staff (FormatError for unknown extensions or bad data)."""
    if not os.path.exists(path):
        raise FileNotFoundError(2, "No such file or directory", os.fspath(path))
    return _call(_resolve(READERS, path, "read"), path, **opts)


def write_motion(path, staff, **opts):
    """Write a Staff in the format its extension names."""
    return _call(_resolve(WRITERS, path, "write"), path, staff, **opts)
