"""A null-modem cable between two programs: two serial twins (device/servo/emulate/serialtwin.py,
a pty each, paced at the baud rate behind a 4 KiB driver buffer), each one's line carried to the
other, on the wall clock. Prints the two pty paths, then runs until Ctrl-C or --duration-s.

    python tools/cable.py --baud 115200            # -> /dev/pts/5 /dev/pts/6
    motionstaff capture --realtime --link /dev/pts/5 &
    motionstaff follow --link /dev/pts/6 --port /dev/pts/7 --robot op3-dynamixel

What one end writes crosses at baud / 10 bytes a second and reaches the other end's reader, as on
a real cable between a Pi's UART and a robot computer's USB serial adapter (faults: none; the
serial twin's LineFaults would add them).
"""

import argparse
import sys
import time

sys.path.insert(0, __file__.rsplit("/tools/", 1)[0])

from device.servo.emulate.serialtwin import SerialTwin  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baud", type=int, default=115200)
    ap.add_argument("--duration-s", type=float)
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    a_end, b_end = SerialTwin(baud=a.baud), SerialTwin(baud=a.baud)
    print(a_end.path, b_end.path, flush=True)
    try:
        while a.duration_s is None or time.monotonic() - t0 < a.duration_s:
            b_end.send_back(a_end.pump())
            a_end.send_back(b_end.pump())
            time.sleep(0.001)           # the carrier's poll period (a wall-clock tool, not a test)
    except KeyboardInterrupt:
        pass
    finally:
        a_end.close()
        b_end.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
