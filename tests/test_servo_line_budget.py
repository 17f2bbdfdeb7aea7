"""A robot whose frame of commands does not fit its controller's line at its rate is refused.

Bytes are the driver's own (the same the emulators and the vendor SDKs see), 10 bits a byte
at the robot's baud; a frame may take at most 80 % of 1 / rate_hz (device/servo/linebudget.py).
"""

import copy
import json

import pytest

from device.servo import dynamixel
from device.servo.linebudget import line_budget
from device.servo.robot import HERE, Robot, load_robot
from protocol.errors import FormatError


def _op3():
    with open("%s/op3-dynamixel.json" % HERE) as f:
        return json.load(f)


def test_builtin_robots_fit_their_lines_with_the_drivers_own_bytes():
    b = line_budget(load_robot("op3-dynamixel"))
    # one GroupSyncWrite of 20 goal positions: 14 bytes of packet + 5 a servo
    n = len(load_robot("op3-dynamixel").servos)
    assert b["bytes"] == len(dynamixel.sync_write(116, 4, [(i, 2048) for i in range(n)])) == 14 + 5 * n
    assert b["line_ms"] == pytest.approx(b["bytes"] * 10 / 1e6 * 1000)
    assert b["fits"] and b["period_ms"] == pytest.approx(10.0)
    for name in ("khr17-maestro", "so101-feetech"):
        assert line_budget(load_robot(name))["fits"]


def test_a_frame_over_the_line_is_refused_with_the_rate_that_fits():
    d = _op3()
    d["baud"] = 57600                      # the Dynamixel factory default
    d["rate_hz"] = 100
    with pytest.raises(FormatError) as e:
        Robot(d, "slow.json")
    msg = str(e.value)
    n = len(d["servos"])
    line_ms = (14 + 5 * n) * 10 / 57600 * 1000           # 19.8 ms against 10 ms
    assert msg.startswith("slow.json: a frame of %d servos is %d bytes on the dynamixel line, %.1f ms at 57600 baud"
                          % (n, 14 + 5 * n, line_ms))
    assert "lower rate_hz to %d or less" % int(0.8 * 1000 / line_ms) in msg
    # at that rate it fits
    d["rate_hz"] = int(0.8 * 1000 / line_ms)
    assert Robot(copy.deepcopy(d), "slow.json").rate_hz == d["rate_hz"]


def test_play_refuses_the_robot_before_opening_a_port(tmp_path, capsys):
    from host.cli import main
    d = _op3()
    d["baud"] = 57600
    d["rate_hz"] = 100
    f = tmp_path / "slow.json"
    f.write_text(json.dumps(d))
    clip = tmp_path / "c.csv"
    clip.write_text("t,x\n0,1\n")
    assert main(["play", str(clip), "--port", "/dev/nonexistent-port", "--robot", str(f), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "lower rate_hz to" in err and "nonexistent" not in err


def test_a_description_its_driver_refuses_names_the_file_and_the_controller():
    """The line check builds the driver at load: what the driver refuses (an unknown option,
    a channel no board has, an unknown controller) is a one-line FormatError naming the file,
    not a bare ValueError from inside the driver."""
    with open("%s/khr17-maestro.json" % HERE) as f:
        base = json.load(f)
    far = copy.deepcopy(base)
    far["servos"][0]["id"] = 30                          # one Maestro has channels 0-23
    cases = ((dict(base, controller_options={"bards": [12]}), "unknown controller option 'bards'"),
             (far, "maestro channel 30"),
             (dict(base, controller="maestro2"), "unknown controller 'maestro2'"))
    for d, what in cases:
        with pytest.raises(FormatError) as e:
            Robot(copy.deepcopy(d), "khr.json")
        msg = str(e.value)
        assert msg.startswith("khr.json: controller ") and what in msg and "\n" not in msg, msg
    # on two daisy-chained boards channel 30 is the second board's channel 6
    far["controller_options"] = {"boards": [12, 13]}
    assert Robot(far, "khr.json").servos[0].id == 30


def test_an_ascii_controllers_longest_frame_is_counted_not_the_home_one():
    """The SSC-32 sends positions as decimal text: a servo at 900 us is "P900", at 2500 "P2500".
    20 servos homed at 900 us: the frame at home is 131 bytes, at their max 151, what the
    driver writes there (a capture port), and that is the count."""
    from device.servo.ssc32 import SSC32
    with open("%s/khr17-maestro.json" % HERE) as f:
        d = json.load(f)
    d["controller"], d["controller_options"], d["baud"], d["rate_hz"] = "ssc32", {}, 9600, 5
    one = d["servos"][0]
    d["servos"] = [dict(copy.deepcopy(one), name="s%d" % i, id=i, neutral=1500, units_per_deg=10,
                        min=500, max=2500, home_deg=-60.0) for i in range(20)]
    r = Robot(d, "ssc.json")

    class Capture:
        def __init__(self):
            self.data = bytearray()

        def write(self, b):
            self.data += bytes(b)
            return len(b)

    sizes = []
    for deg in (-60.0, 0.0, 100.0):
        drv = SSC32(Capture())
        drv.send_positions([(s.id, s.to_units(deg)) for s in r.servos])
        sizes.append(len(drv.port.data))
    assert sizes == [131, 151, 151]
    assert line_budget(r)["bytes"] == 151
