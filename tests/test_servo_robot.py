"""Robot descriptions, row mappings and the Limiter's guarantees (hypothesis over anything)."""

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from device.servo.limiter import Limiter
from device.servo.robot import load_robot, builtin_names, Robot
from protocol.errors import FormatError


def test_builtins_and_mappings():
    names = builtin_names()
    assert {"khr17-maestro", "op3-dynamixel", "so101-feetech"} <= set(names)
    from device.body.human import human_model
    human = human_model().dof_names
    khr = load_robot("khr17-maestro")
    assert len(khr.servos) == 17 and khr.controller == "maestro"
    assert max(s.id for s in khr.servos) < 24
    assert len(khr.row_map(human)) == 17 and khr.mapping_used == "human"
    cmu_rows = ["%s.%s" % (j, c) for j in ("Hips", "LeftHip", "LeftKnee", "LeftAnkle", "RightHip", "RightKnee",
                                           "RightAnkle", "LeftShoulder", "LeftElbow", "RightShoulder",
                                           "RightElbow", "Head") for c in ("Zrotation", "Yrotation", "Xrotation")]
    for n in names:
        r = load_robot(n)
        assert len(r.row_map(human, "human")) == len(r.servos)
        assert len(r.row_map(cmu_rows, "cmu")) >= 3
        for s in r.servos:
            assert s.lo_deg <= s.home_deg <= s.hi_deg
            assert s.to_units(s.lo_deg - 1000) == (s.min if s.direction > 0 else s.max)
            assert s.min <= s.to_units(1e9) <= s.max
    assert load_robot("op3-dynamixel").row_map([s.name for s in load_robot("op3-dynamixel").servos])


def test_cmu_mapping_on_real_clip():
    from pathlib import Path
    clip = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "bvh" / "131_01.bvh"
    if not clip.exists():
        pytest.skip("CMU clip not found at %s" % clip)
    from host.bvh import read_bvh
    staff = read_bvh(str(clip))
    for n in builtin_names():
        r = load_robot(n)
        assert len(r.row_map(staff.names)) == len(r.servos) and r.mapping_used == "cmu"


def _robot_dict(**kw):
    d = {"format": "motionstaff-robot", "version": 1, "name": "t", "controller": "maestro",
         "servos": [{"name": "a", "id": 0, "neutral": 6000, "units_per_deg": 44.44, "min": 4000, "max": 8000,
                     "max_vel_dps": 90, "max_acc_dps2": 0, "map": {"m": "x"}}]}
    d.update(kw)
    return d


@pytest.mark.parametrize("bad, msg", [
    ({"format": "x"}, "format"), ({"version": 2}, "version"), ({"servos": []}, "servos"),
    ({"failsafe": {"action": "explode"}}, "action"), ({"rate_hz": float("nan")}, "rate_hz"),
    ({"servos": [{"name": "a", "id": 0, "neutral": 1, "units_per_deg": 1, "min": 5, "max": 5}]}, "min"),
    ({"servos": [{"name": "a", "id": 0, "neutral": 1, "units_per_deg": 1, "min": 0, "max": 9, "direction": 2}]},
     "direction"),
    ({"servos": [{"name": "a", "id": 0, "neutral": 1, "units_per_deg": 1, "min": 0, "max": 9},
                 {"name": "b", "id": 0, "neutral": 1, "units_per_deg": 1, "min": 0, "max": 9}]}, "repeats"),
])
def test_bad_descriptions(bad, msg):
    with pytest.raises(FormatError, match=msg):
        Robot(_robot_dict(**bad), "r.json")


def test_bad_files(tmp_path):
    p = tmp_path / "r.json"
    p.write_text("{nope")
    with pytest.raises(FormatError, match="r.json: not valid JSON"):
        load_robot(str(p))
    with pytest.raises(FormatError, match="built-in"):
        load_robot("no-such-robot")
    p.write_text(json.dumps(_robot_dict()))
    r = load_robot(str(p))
    with pytest.raises(ValueError, match="no staff row"):
        r.row_map(["y"])
    with pytest.raises(ValueError, match="mapping"):
        r.row_map(["x"], "other")


ANY = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.none(),
                st.floats(-1e3, 1e3), st.just(float("nan")), st.sampled_from([1e308, -1e308, "x"]))


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(["khr17-maestro", "op3-dynamixel", "so101-feetech"]),
       st.lists(st.tuples(st.lists(ANY, min_size=0, max_size=25),
                          st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.floats(0, 0.2))),
                min_size=1, max_size=40))
def test_limiter_never_leaves_limits_or_exceeds_velocity(name, frames):
    robot = load_robot(name)
    servos = robot.servos
    lim = Limiter(servos, max_dt_s=0.05)
    prev = list(lim.pos)
    prev_units = [s.to_units(p) for s, p in zip(servos, prev)]
    for targets, dt in frames:
        out = lim.step(targets, dt)
        ok_dt = dt if (isinstance(dt, float) and math.isfinite(dt) and dt > 0) else 0.0
        for i, s in enumerate(servos):
            assert s.lo_deg <= out[i] <= s.hi_deg
            # velocity: the step is at most max_vel * dt (dt as given: the real time elapsed)
            assert abs(out[i] - prev[i]) <= s.max_vel_dps * min(ok_dt, 0.05) + 1e-9
            u = s.to_units(out[i])
            assert s.min <= u <= s.max
            assert abs(u - prev_units[i]) <= s.max_vel_dps * min(ok_dt, 0.05) * s.units_per_deg + 1
            prev_units[i] = u
        prev = out


def test_limiter_reaches_target_and_respects_acceleration():
    robot = load_robot("op3-dynamixel")
    s = robot.servos[12]          # r_knee, 0..140
    lim = Limiter([s], start_deg=[0.0], max_dt_s=0.05)
    vel = []
    for _ in range(400):
        p0 = lim.pos[0]
        lim.step([100.0], 0.01)
        vel.append((lim.pos[0] - p0) / 0.01)
    assert abs(lim.pos[0] - 100.0) < 1e-6
    assert max(vel) <= s.max_vel_dps + 1e-9
    acc = np.diff(vel) / 0.01
    assert acc.max() <= s.max_acc_dps2 + 1e-6


def test_limiter_holds_on_missing_and_counts():
    robot = load_robot("khr17-maestro")
    lim = Limiter(robot.servos)
    before = list(lim.pos)
    assert lim.step([float("nan")] * 17, 0.02) == before
    assert lim.invalid == 17
    lim.step([1e9] * 17, 0.02)
    assert lim.clamped == 17 and lim.rate_limited > 0
