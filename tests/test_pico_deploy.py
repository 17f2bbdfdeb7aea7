"""`deploy` puts on a Pico exactly what the emulated Pico boots; `emulate pico` refuses bad input.

The emulated board's filesystem (tools/mpy/pico.py -> host/pico_image.py) and deploy's mpremote
copies are compared byte for byte; the LittleFS image reads back to the same files.
"""

import json
import os
import shutil
import subprocess

import pytest

from host import cli, pico_emulator, pico_image
from host.commands import deploy
from protocol.errors import FormatError
from tools.mpy import pico

CFG = {"format": "motionstaff-receiver", "version": 1,
       "failsafe": {"timeout_ms": 300, "action": "home"},
       "servos": [{"name": "a", "pin": 2, "row": "r0", "neutral_us": 1500, "us_per_deg": 10.0,
                   "min_us": 800, "max_us": 2200},
                  {"name": "b", "pin": 7, "row": 1, "neutral_us": 1450, "us_per_deg": 9.5,
                   "min_us": 900, "max_us": 2100}]}


def _write(tmp_path, cfg, name="receiver.json"):
    p = tmp_path / name
    p.write_text(json.dumps(cfg))
    return str(p)


def test_deploy_copies_what_the_emulated_pico_boots(tmp_path, monkeypatch, capsys):
    path = _write(tmp_path, CFG)
    seen = {}

    def fake_run(cmd, *a, **kw):
        i = 0
        while i < len(cmd):
            if cmd[i] == "cp":
                src, dest = cmd[i + 1], cmd[i + 2][1:]
                with open(src, "rb") as f:
                    seen[dest] = f.read()
                i += 3
            else:
                i += 1
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(deploy.subprocess, "run", fake_run)
    assert cli.main(["deploy", "--port", "/dev/ttyACM0", "--config", path]) == 0
    from device.firmware import config

    emulated = dict(pico.receiver_files(config.load(path)))
    assert set(seen) == set(emulated)
    for dest in emulated:
        assert seen[dest] == emulated[dest], dest     # byte for byte (mpy-cross is deterministic)
    # the LittleFS image holds those same files
    assert pico_image.image_files(pico_image.littlefs_image(sorted(emulated.items()))) == sorted(emulated.items())
    # and the dry run lists every one of them
    capsys.readouterr()
    assert cli.main(["deploy", "--port", "/dev/ttyACM0", "--config", path, "--dry-run"]) == 0
    out = capsys.readouterr().out
    for dest in emulated:
        assert ":" + dest in out, dest
    assert "%d files" % len(emulated) in out


@pytest.mark.parametrize("change, msg", [
    (lambda c: c["servos"][0].update(pin=23), "GP23 is not a pin"),
    (lambda c: c["servos"][0].update(pin=1), "link UART"),
    (lambda c: c["servos"][1].update(pin=18), "share PWM slice 1 channel A"),
    (lambda c: c.update(servos=[dict(CFG["servos"][0], pin=p, name="s%d" % p) for p in range(2, 20)]),
     "18 servos, but the RP2040 has 16 PWM outputs"),
    (lambda c: c.update(uart={"id": 0, "tx": 4, "rx": 5}), "UART0 cannot use tx GP4"),
])
def test_configs_that_do_not_fit_the_board(tmp_path, capsys, change, msg):
    cfg = json.loads(json.dumps(CFG))
    change(cfg)
    path = _write(tmp_path, cfg)
    for argv in (["emulate", "pico", "--config", path], ["deploy", "--port", "x", "--config", path, "--dry-run"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err


def test_sixteen_servos_fit(tmp_path):
    pins = list(range(2, 16)) + [16, 17]        # GP16/17 take slice 0, free while GP0/1 are UART
    cfg = dict(CFG, servos=[dict(CFG["servos"][0], pin=p, name="s%d" % p) for p in pins])
    from device.firmware import config

    pico_emulator.check_board(config.check(cfg))
    cfg["servos"][1]["pin"] = 18                 # GP18 = slice 1 A, as GP2 (servo 0)
    with pytest.raises(FormatError, match="share PWM"):
        pico_emulator.check_board(config.check(cfg))


def _fake_firmware(tmp_path, uf2=None, rom=None):
    fw = tmp_path / ("fw%d" % len(os.listdir(tmp_path)))
    fw.mkdir()
    real = pico_emulator._shared_firmware()
    (fw / pico_emulator.UF2_NAME).write_bytes(uf2 if uf2 is not None else
                                              open(os.path.join(real, pico_emulator.UF2_NAME), "rb").read())
    (fw / pico_emulator.ROM_NAME).write_bytes(rom if rom is not None else
                                              open(os.path.join(real, pico_emulator.ROM_NAME), "rb").read())
    return str(fw)


def test_missing_or_corrupt_firmware_and_no_node(tmp_path, capsys, monkeypatch):
    pico.require()
    path = _write(tmp_path, CFG)
    real = open(os.path.join(pico_emulator._shared_firmware(), pico_emulator.UF2_NAME), "rb").read()
    bad = bytearray(real)
    bad[512 * 40] ^= 0xFF                       # a block's first magic word
    cases = [(_fake_firmware(tmp_path, uf2=bytes(bad)), "UF2 block 40 is corrupt"),
             (_fake_firmware(tmp_path, uf2=real[:1000]), "not a MicroPython UF2"),
             (_fake_firmware(tmp_path, rom=b"\0" * 16384), "not the RP2040 B1 boot ROM"),
             (str(tmp_path / "nowhere"), "the MicroPython UF2 cannot be read")]
    for fw, msg in cases:
        assert cli.main(["emulate", "pico", "--config", path, "--firmware", fw]) == 2
        err = capsys.readouterr().err.strip()
        assert msg in err and len(err.splitlines()) == 1, err
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert cli.main(["emulate", "pico", "--config", path]) == 2
    assert "Node.js is not installed" in capsys.readouterr().err
    monkeypatch.undo()
    monkeypatch.setenv("MOTIONSTAFF_MPY_DIR", str(tmp_path))
    assert cli.main(["emulate", "pico", "--config", path]) == 2
    assert "pico.mjs is missing" in capsys.readouterr().err
    monkeypatch.undo()
    assert cli.main(["emulate", "pico"]) == 2
    assert "give --robot NAME or --config" in capsys.readouterr().err


def test_emulate_pico_pty_end_to_end(tmp_path):
    """`motionstaff emulate pico`: a pty onto the emulated Pico's UART0; the log has its pulses."""
    import signal
    import sys
    import time

    import serial

    from protocol import packets as pk

    pico.require()
    cfg = dict(CFG, failsafe={"timeout_ms": 5000, "action": "hold"}, heartbeat_ms=0,
               servos=[dict(sv, max_vel_dps=100000.0) for sv in CFG["servos"]])
    path = _write(tmp_path, cfg)
    log = tmp_path / "servos.csv"
    p = subprocess.Popen([sys.executable, "-m", "host.cli", "emulate", "pico", "--config", path,
                          "--log", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        port = p.stdout.readline().decode().strip()      # printed once the firmware is up
        assert port.startswith("/dev/"), p.stderr.read().decode()
        s = serial.Serial(port, 115200, timeout=0.2)
        enc = pk.Encoder(clock_us=lambda: 0)
        rows = [{"name": "r0", "unit": "deg", "lo": -90.0, "hi": 90.0, "wrap": False},
                {"name": "r1", "unit": "deg", "lo": -90.0, "hi": 90.0, "wrap": False}]
        s.write(b"".join(enc.header({"format": "motionstaff", "version": 1, "fps": 20.0, "bits": 8,
                                     "frames": 0, "rows": rows, "skeleton": None, "source": "",
                                     "captured": ""})))
        s.write(enc.frame([0, 255]))
        s.write(enc.hello())
        got, beats = b"", []
        end = time.monotonic() + 120
        while not beats and time.monotonic() < end:       # the reply comes when the Pico gets there
            got += s.read(64)
            beats = [q for q in pk.Decoder().feed(got) if q.name == "HEARTBEAT"]
        assert beats and beats[0].fields["frames"] == 1
        def widths():
            rows = log.read_text().splitlines()[1:]
            return dict((int(r.split(",")[1]), float(r.split(",")[2])) for r in rows if r.count(",") == 2)

        # code 0 of -90..90 deg on servo a: 1500 - 900 = 600 us -> min 800; 255 on b: 1450 + 855 -> 2100
        want = {2: 800.0, 7: 2100.0}
        while time.monotonic() < end and any(abs(widths().get(k, 0) - v) >= 0.5 for k, v in want.items()):
            s.read(64)                                     # the pulses follow within a period
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 0 and "pulse changes" in err.decode()
    lines = log.read_text().splitlines()
    assert lines[0] == "time_s,pin,pulse_us"
    got = widths()
    assert abs(got[2] - 800.0) < 0.5 and abs(got[7] - 2100.0) < 0.5, got
