"""Review breaks of the staff file (issue 18) and the physics twin (issue 14), each a regression test."""

import json
import struct

import numpy as np
import pytest

from device.servo import dynamixel as dx
from device.servo.emulate import make_emulator
from host.staff import Row, Staff
from protocol.errors import FormatError

DATA_LIMIT_ERROR = 0x06          # Protocol 2.0 status error: "data exceeds the limit value"
MAX_POSITION_LIMIT = 48
MIN_POSITION_LIMIT = 52


# --- staff file ---------------------------------------------------------------------------

def test_budget_refuses_infinite_values():
    """An inf value cannot be held within any budget: refused, not clamped to the range's end."""
    from device.body.human import human_model
    sk = human_model()
    v = np.repeat(sk.home[:, None], 20, axis=1) + np.linspace(0, 1, 20)[None, :]
    v[4, 10] = np.inf
    rows = [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation") for d in sk.dofs]
    st = Staff(v, rows, fps=30.0, bits=8, skeleton=sk)
    with pytest.raises(ValueError, match="not finite"):
        st.refit("budget", max_error_mm=5.0)


# --- Dynamixel emulator vs the XM430 control table ---------------------------------------

def _status(reply):
    s = dx.parse_status(reply)
    assert s is not None
    return s


@pytest.mark.parametrize("goal", [4096, 100000, -1, -(1 << 31)])
def test_dynamixel_goal_outside_position_limits_is_refused(goal):
    """XM430 (position mode): a Goal Position outside Min..Max Position Limit (0..4095 by
    default) is not written; the status reports Data Limit Error."""
    emu = make_emulator("dynamixel", ids=(1,))
    lim = _status(emu.feed(dx.read(1, MAX_POSITION_LIMIT, 8)))[2]
    assert struct.unpack("<ii", lim) == (4095, 0)
    _status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1)))
    _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 3000)))
    assert _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, goal & 0xFFFFFFFF)))[1] == DATA_LIMIT_ERROR
    got = struct.unpack("<i", _status(emu.feed(dx.read(1, dx.GOAL_POSITION, 4)))[2])[0]
    assert got == 3000
    assert emu.positions[1] == 3000
    # in a sync write (no status) the servo keeps its goal too
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, [(1, goal & 0xFFFFFFFF)]))
    assert struct.unpack("<i", _status(emu.feed(dx.read(1, dx.GOAL_POSITION, 4)))[2])[0] == 3000
    # a goal inside the limits still goes
    assert _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 4095)))[1] == 0
    assert emu.positions[1] == 4095


# --- the physics twin ---------------------------------------------------------------------

def _flipped_op3(tmp_path):
    """The OP3 with head_pan mounted the other way (direction +1: units grow with -joint)."""
    import host.physics  # noqa: F401
    import os
    from device.servo.robot import HERE
    from host.physics.models import load_robot
    d = json.load(open(os.path.join(HERE, "op3-dynamixel.json")))
    for s in d["servos"]:
        if s["name"] == "head_pan":
            s["direction"] = 1
    p = tmp_path / "op3-dynamixel.json"
    p.write_text(json.dumps(d))
    return load_robot(str(p))


def test_present_current_has_the_sign_of_present_velocity_on_a_flipped_servo(tmp_path):
    """Present Current and Present Velocity share one sign convention (positive = the way
    Present Position counts up), whichever way the servo is mounted."""
    pytest.importorskip("mujoco")
    from host.physics.twin import Twin
    rm = _flipped_op3(tmp_path)
    tw = Twin(rm, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, [(s.id, s.to_units(s.home_deg)) for s in rm.servos]))
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(s.id, 1) for s in rm.servos]))
    pan = rm.servos[rm.servo_names.index("head_pan")]
    for goal_deg in (40.0, -40.0):
        tw.advance(0.4)
        start = struct.unpack("<i", _status(emu.feed(dx.read(pan.id, dx.PRESENT_POSITION, 4)))[2])[0]
        emu.feed(dx.write(pan.id, dx.GOAL_POSITION, 4, pan.to_units(goal_deg)))
        tw.advance(0.03)                              # accelerating: torque pushes the way it moves
        r = _status(emu.feed(dx.read(pan.id, 126, 10)))[2]
        cur, vel, pos = struct.unpack("<hii", r)
        up = pan.to_units(goal_deg) > start
        assert (pos > start) == up
        assert (vel > 0) == up and vel != 0
        assert (cur > 0) == up and cur != 0


# --- simulate: bad input -----------------------------------------------------------------

def _op3_staff(values, fps=50):
    from device.servo.robot import load_robot as load_description
    names = [s.name for s in load_description("op3-dynamixel").servos]
    v = np.full((len(names), 10), values, dtype=float)
    return Staff(v, [Row(n, "deg", -180.0, 180.0, True) for n in names], fps=fps, bits=16)


def test_simulate_a_staff_with_every_value_missing_is_one_line(tmp_path, capsys):
    pytest.importorskip("mujoco")
    from host.cli import main
    from host.formats import write_motion
    p = tmp_path / "empty.png"
    write_motion(str(p), _op3_staff(np.nan))
    assert main(["simulate", str(p), "--robot", "op3-dynamixel", "--json"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(p) in err[0] and "missing" in err[0]


def test_simulate_another_robots_staff_names_the_file(tmp_path, capsys):
    """A staff of the OP3's servo rows on the SO-101: the one line names the file (it began
    'motionstaff: : the staff ...')."""
    pytest.importorskip("mujoco")
    from host.cli import main
    from host.formats import write_motion
    p = tmp_path / "op3rows.png"
    write_motion(str(p), _op3_staff(0.0))
    assert main(["simulate", str(p), "--robot", "so101-feetech"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ": :" not in err[0] and str(p) in err[0]


@pytest.mark.parametrize("args", [{"height_m": float("nan")}, {"height_m": 0.0}, {"height_m": -1.75},
                                  {"height_m": float("inf")}, {"height_m": 1e300}, {"mass_kg": float("nan")},
                                  {"mass_kg": -75.0}, {"height_m": "1.75"}])
def test_header_body_arguments_that_lie_are_format_errors(args):
    """A header's built-in body with absurd arguments (and a hash forged to match): one
    FormatError, never a skeleton of NaN / negative bones nor an OverflowError."""
    from host.skeletoncode import BODIES, decode_skeleton, skeleton_hash
    try:
        sha = skeleton_hash(BODIES["human48"][0](**args))
    except Exception:
        sha = "00000000"
    code = dict(args, body="human48", sha=sha)
    with pytest.raises(FormatError, match="human48"):
        decode_skeleton(code)


@pytest.mark.parametrize("feature", [["X", "pelvis", "marker", [float("nan"), 0, 0]],
                                     ["X", "pelvis", "bogus", [0, 0, 0]],
                                     ["X", "pelvis", "marker", [0, 0, 0], [0, 0, 0, 0]]])
def test_header_body_features_that_lie_are_format_errors(feature):
    from host.skeletoncode import BODIES, decode_skeleton, skeleton_hash
    code = {"body": "human48", "sha": skeleton_hash(BODIES["human48"][0]()), "features": [feature]}
    with pytest.raises(FormatError):
        decode_skeleton(code)


def test_dynamixel_eeprom_is_locked_while_torque_is_on():
    """With the limits enforced, widening them is an EEPROM write, which an X series servo
    refuses (Access Error) while its torque is on."""
    emu = make_emulator("dynamixel", ids=(1,))
    _status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1)))
    assert _status(emu.feed(dx.write(1, MAX_POSITION_LIMIT, 4, 100000)))[1] == 0x07
    assert _status(emu.feed(dx.write(1, 11, 1, 4)))[1] == 0x07          # operating mode too
    lim = _status(emu.feed(dx.read(1, MAX_POSITION_LIMIT, 8)))[2]
    assert struct.unpack("<ii", lim) == (4095, 0)
    assert _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 100000)))[1] == DATA_LIMIT_ERROR
    # torque off: the EEPROM takes the write (Max Position Limit 4095 is the top of the range)
    _status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 0)))
    assert _status(emu.feed(dx.write(1, MAX_POSITION_LIMIT, 4, 3000)))[1] == 0
    _status(emu.feed(dx.write(1, dx.TORQUE_ENABLE, 1, 1)))
    assert _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 3001)))[1] == DATA_LIMIT_ERROR
    assert _status(emu.feed(dx.write(1, dx.GOAL_POSITION, 4, 3000)))[1] == 0


def test_emulate_physics_refuses_the_other_feetech_series(capsys):
    """The SO-101's STS3215s speak STS (little-endian words); an SCS emulator in front of its
    twin would serve a bus the robot does not have."""
    pytest.importorskip("mujoco")
    from host.cli import main
    assert main(["emulate", "feetech-scs", "--physics", "so101-feetech"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "feetech" in err[0] and "not feetech-scs" in err[0]


def test_a_released_servo_at_rest_is_not_moving():
    """Torque off and still: Moving (122) is 0 (its profile follows the joint, so setpoint and
    the last goal differ; that is no motion)."""
    pytest.importorskip("mujoco")
    from host.physics.models import load_robot
    from host.physics.twin import Twin
    rm = load_robot("op3-dynamixel")
    tw = Twin(rm, seed=0)
    emu = make_emulator("dynamixel", ids=tw.ids, clock=tw.clock, body=tw)
    emu.feed(dx.sync_write(dx.GOAL_POSITION, 4, [(s.id, s.to_units(s.home_deg)) for s in rm.servos]))
    emu.feed(dx.sync_write(dx.TORQUE_ENABLE, 1, [(s.id, 1) for s in rm.servos]))
    pan = rm.servos[rm.servo_names.index("head_pan")]
    emu.feed(dx.write(pan.id, dx.GOAL_POSITION, 4, pan.to_units(20.0)))
    tw.advance(0.8)
    assert _status(emu.feed(dx.read(pan.id, 122, 1)))[2] == b"\x00"     # on, arrived
    emu.feed(dx.write(pan.id, dx.TORQUE_ENABLE, 1, 0))
    tw.advance(0.5)                                   # a vertical axis: it stays where it is
    assert abs(tw.rm.servo_deg(np.degrees(tw.data.qpos[tw.rm.qadr]))[rm.servo_names.index("head_pan")] - 20.0) < 2.0
    assert _status(emu.feed(dx.read(pan.id, 122, 1)))[2] == b"\x00"     # off, at rest


@pytest.mark.parametrize("wrap", [2, -1, [0, 7]])
def test_compact_header_wrap_is_zero_or_one(wrap):
    from protocol import staffheader
    c = {"format": "motionstaff", "version": 2, "fps": 30, "bits": 8, "frames": 1, "rows": ["a", "b"],
         "lo": [0, 0], "hi": [1, 1], "wrap": wrap}
    with pytest.raises(FormatError, match="wrap"):
        staffheader.unpack(c)
    c["wrap"] = [0, 1]
    assert [r["wrap"] for r in staffheader.unpack(c)["rows"]] == [False, True]
