"""The `motionstaff` command line: a table of subcommands, each in host/commands/<name>.py.

    motionstaff convert walk.bvh walk.png --bits 8
    motionstaff info walk.png --json

Each subcommand module is imported only when chosen. Bad input (FormatError, ValueError,
OSError) becomes one line on stderr and exit status 2, never a traceback.
"""

import argparse
import importlib
import os
import sys

from protocol.errors import FormatError

# name -> module; the module has HELP, add_arguments(parser) and run(args) -> int
COMMANDS = {
    "demo": "host.commands.demo",
    "convert": "host.commands.convert",
    "info": "host.commands.info",
    "diff": "host.commands.diff",
    "show": "host.commands.show",
    "capture": "host.commands.capture",
    "calibrate": "host.commands.calibrate",
    "play": "host.commands.play",
    "emulate": "host.commands.emulate",
    "simulate": "host.commands.simulate",
    "robots": "host.commands.robots",
    "edit": "host.commands.edit",
    "retarget": "host.commands.retarget",
    "render": "host.commands.render",
    "view": "host.commands.view",
    "download": "host.commands.download",
    "export": "host.commands.export",
    "gestures": "host.commands.gestures",
    "stream": "host.commands.stream",
    "orient": "host.commands.orient",
    "deploy": "host.commands.deploy",
    "import-imu": "host.commands.import_imu",
    "follow": "host.commands.follow",
}


def version():
    """The installed package's version (pyproject.toml's when run from a checkout)."""
    try:
        from importlib.metadata import version as v
        return v("motionstaff")
    except Exception:
        import re
        here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "pyproject.toml")
        try:
            with open(here) as f:
                m = re.search(r'^version\s*=\s*"([^"]+)"', f.read(), re.M)
            return m.group(1) if m else "unknown"
        except OSError:
            return "unknown"


def _module(name):
    return importlib.import_module(COMMANDS[name])


def build_parser(only=None):
    parser = argparse.ArgumentParser(
        prog="motionstaff",
        description="Write a body's motion down like music (the motion staff) and play it on robots.",
    )
    parser.add_argument("--version", action="version", version="motionstaff " + version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        if only is not None and name != only:
            # a cheap placeholder so that --help lists every command without importing it
            sub.add_parser(name, add_help=False)
            continue
        mod = _module(name)
        p = sub.add_parser(name, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
    return parser


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    chosen = next((a for a in argv if not a.startswith("-")), None)
    if chosen not in COMMANDS:
        chosen = None
    try:
        if chosen is None:
            parser = argparse.ArgumentParser(prog="motionstaff",
                                             description="Write a body's motion down like music "
                                             "(the motion staff) and play it back on robots.")
            parser.add_argument("--version", action="version", version="motionstaff " + version())
            sub = parser.add_subparsers(dest="command", metavar="COMMAND")
            for name in COMMANDS:
                try:
                    sub.add_parser(name, help=_module(name).HELP)
                except ImportError as e:  # a command whose optional dependency is missing
                    sub.add_parser(name, help="(unavailable: %s)" % e)
            args = parser.parse_args(argv)
            parser.print_help()
            return 0 if not argv else 2
        parser = build_parser(only=chosen)
        args = parser.parse_args(argv)
        return int(_module(chosen).run(args) or 0)
    except BrokenPipeError:
        # the reader of our output went away (`motionstaff info x | head`): not an error of ours
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except KeyboardInterrupt:
        print("motionstaff: interrupted", file=sys.stderr)
        return 130
    except (FormatError, ValueError, OSError, EOFError) as e:
        msg = str(e).strip().splitlines()[0] if str(e).strip() else e.__class__.__name__
        if isinstance(e, OSError) and getattr(e, "filename", None) and e.strerror:
            msg = "%s: %s" % (e.filename, e.strerror)
        print("motionstaff: %s" % msg, file=sys.stderr)
        return 2
    except MemoryError:
        print("motionstaff: out of memory (input too large?)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
