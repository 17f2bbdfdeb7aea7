"""`motionstaff download --port PORT [--list] [--all | NAME...] [-o DIR]`: copy recordings off a unit.

    motionstaff download --port /dev/ttyACM0 --list
    motionstaff download --port /dev/ttyACM0 --all -o recordings/
    motionstaff download --port /dev/ttyACM0 rec0003.msr

Chunked and CRC-checked, resumable (an interrupted file continues from its .part), with a
progress bar; each container becomes a PNG staff on arrival. Names from the unit that would
land outside DIR are refused.
"""

import os
import sys

from host.download import Client, DownloadError, open_link, target_path

HELP = "list and download recordings from a capture unit over the serial link"


def add_arguments(p):
    p.add_argument("--port", required=True, help="serial port or pyserial URL of the unit")
    p.add_argument("--baud", type=int, default=115200)
    p.add_argument("--list", action="store_true", help="list the unit's recordings and stop")
    p.add_argument("--all", action="store_true", help="download every recording")
    p.add_argument("names", nargs="*", metavar="NAME", help="recordings to download")
    p.add_argument("-o", "--output", default=".", help="folder to write into (default: .)")
    p.add_argument("--timeout", type=float, default=2.0, help="seconds of silence before asking again")
    p.add_argument("--no-convert", action="store_true", help="keep the container only, no PNG")


def _bar(name, total):
    from host.progress import is_terminal, progress
    bar = progress(total=total, desc=name, unit="B", leave=True,
                   **({"unit_scale": True} if is_terminal() else {}))

    def update(have, size):
        bar.update(have - bar.n)
    return bar, update


def run(args):
    if not args.list and not args.all and not args.names:
        raise DownloadError("say what to download: --all, NAME..., or --list")
    with open_link(args.port, args.baud) as link:
        c = Client(link, timeout_s=args.timeout)
        entries = c.listing()
        if args.list:
            for name, size, crc in entries:
                print("%-40s %10d  %08x" % (name, size, crc))
            return 0
        os.makedirs(args.output, exist_ok=True)
        table = {n: (s, k) for n, s, k in entries}
        wanted = [n for n, _, _ in entries] if args.all else args.names
        failed = 0
        for name in wanted:
            if name not in table:
                print("motionstaff: %s: the unit has no such recording" % name, file=sys.stderr)
                failed += 1
                continue
            try:
                target_path(args.output, name)
            except DownloadError as e:
                print("motionstaff: %s" % e, file=sys.stderr)
                failed += 1
                continue
            size, crc = table[name]
            bar, update = _bar(name, size)
            try:
                path = c.fetch(name, args.output, size, crc, progress=update, convert=not args.no_convert)
            finally:
                bar.close()
            print("%s (%d bytes)%s" % (path, size, "" if args.no_convert else " -> " + os.path.splitext(path)[0] + ".png"))
        return 2 if failed else 0
