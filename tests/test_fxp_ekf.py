"""device/core/ekf_q.py: the fixed-point torque-state EKF against its float twin, on real motion.

The fixed-point filter must track device/estimate/ekf_joint_float.py (same model, same
parameters) within 5% of an 8-bit staff step, 0.05 * range / 255, on every joint angle row.
"""

import math
import os
import random

import pytest

from device.core import fxp
from device.core.ekf_q import EkfQ
from device.estimate.ekf_joint_float import EkfJointFloat

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BVH_DIR = os.path.join(REPO, "..", "shared", "data", "bvh")


def _read_bvh_rotations(path):
    """(names, rows in degrees (list per row), frame time s): rotation channels only."""
    try:
        from host.bvh import read_bvh  # the real importer, when it exists

        staff = read_bvh(path)
        names, rows = [], []
        for i, r in enumerate(staff.rows):
            if "rotation" in r.name.lower():
                names.append(r.name)
                rows.append([float(v) for v in staff.values[i]])
        return names, rows, 1.0 / staff.fps
    except ImportError:
        pass
    # minimal fallback: channel names from the hierarchy, then the MOTION table
    names = []
    joint = None
    with open(path) as f:
        lines = f.read().splitlines()
    i = 0
    while not lines[i].strip().startswith("MOTION"):
        w = lines[i].split()
        if w and w[0] in ("ROOT", "JOINT"):
            joint = w[1]
        elif w and w[0] == "CHANNELS":
            names += ["%s.%s" % (joint, c) for c in w[2:]]
        i += 1
    frame_s = float(lines[i + 2].split(":")[1])
    data = [[float(v) for v in ln.split()] for ln in lines[i + 3:] if ln.strip()]
    keep = [c for c, n in enumerate(names) if "rotation" in n.lower()]
    rows = []
    for c in keep:
        row, prev = [], None
        for fr in data:
            v = fr[c]
            if prev is not None:  # unwrap
                v -= 360.0 * math.floor((v - prev + 180.0) / 360.0)
            row.append(v)
            prev = v
        rows.append(row)
    return [names[c] for c in keep], rows, frame_s


def _clip(name):
    path = os.path.join(BVH_DIR, name)
    if not os.path.isfile(path):
        pytest.skip("real data absent: %s (expected ../shared/data/bvh beside the repo)" % path)
    return _read_bvh_rotations(path)


def _run(rows, frame_s, seed, drop=0.05, noise_deg=0.5):
    n = len(rows)
    rng = random.Random(seed)
    f = EkfQ(n, fxp.from_float(frame_s, 30), m_q32=fxp.from_float(0.2, 32),
             c_q20=fxp.from_float(0.05, 20),
             qn_q40=[fxp.from_float(v, 40) for v in (1e-9, 1e-5, 4.0)],
             r_q40=fxp.from_float(math.radians(noise_deg) ** 2, 40),
             p0_q40=[fxp.from_float(v, 40) for v in (1e-2, 1.0, 100.0)])
    z0 = [fxp.from_float(math.radians(r[0]), 20) for r in rows]
    f.reset(z0)
    t = EkfJointFloat.twin_of(f)
    worst_deg = [0.0] * n
    for k in range(len(rows[0])):
        zq = []
        for j in range(n):
            if rng.random() < drop:
                zq.append(None)
            else:
                zq.append(fxp.from_float(math.radians(rows[j][k] + rng.gauss(0.0, noise_deg)), 20))
        f.step(zq)
        # the float twin sees the same measurements, decoded exactly
        t.step([None if v is None else v / 2.0 ** 20 for v in zq])
        for j in range(n):
            d = abs(math.degrees(f.x_q20[3 * j] / 2.0 ** 20 - t.x[3 * j]))
            if d > worst_deg[j]:
                worst_deg[j] = d
    return f, t, worst_deg


@pytest.mark.parametrize("clip,frames", [("131_03.bvh", 600), ("dataset-1_kick_normal_001.bvh", 358)])
def test_fixed_tracks_float_on_real_motion(clip, frames):
    names, rows, frame_s = _clip(clip)
    rows = [r[:frames] for r in rows]
    f, t, worst_deg = _run(rows, frame_s, seed=11)
    for j, name in enumerate(names):
        span = max(rows[j]) - min(rows[j])
        # an 8-bit staff step of the row's (fitted) range; rows that barely move use 1 degree
        step_deg = max(span, 1.0) / 255.0
        assert worst_deg[j] <= 0.05 * step_deg, (name, worst_deg[j], step_deg)
    # and the filter actually follows the motion (better than the 0.5 deg measurement noise)
    err = [abs(math.degrees(f.x_q20[3 * j] / 2.0 ** 20) - rows[j][-1]) for j in range(len(rows))]
    assert sorted(err)[len(err) // 2] < 0.5


def test_covariance_symmetric_positive_and_bit_reproducible():
    rng = random.Random(5)
    a = EkfQ(3, 1 << 23, c_q20=1 << 18, g_q20=[0, 3 << 20, 40 << 20],
             m_q32=[1 << 28, 1 << 32, 5 << 32])
    b = EkfQ(3, 1 << 23, c_q20=1 << 18, g_q20=[0, 3 << 20, 40 << 20],
             m_q32=[1 << 28, 1 << 32, 5 << 32])
    for k in range(500):
        z = [rng.randint(-(1 << 21), 1 << 21) if rng.random() > 0.1 else None for _ in range(3)]
        zd = [rng.randint(-(1 << 22), 1 << 22) if k % 3 == 0 else None for _ in range(3)]
        a.step(z, zd)
        b.step(z, zd)
        for j in range(3):
            p00, p01, p02, p11, p12, p22 = a.p_q40[6 * j:6 * j + 6]
            assert p00 > 0 and p11 > 0 and p22 > 0
            # Cauchy-Schwarz on each 2x2 minor (PSD), with a few LSB of slack for rounding
            assert p01 * p01 <= p00 * p11 + (p00 + p11) * 4
            assert p12 * p12 <= p11 * p22 + (p11 + p22) * 4
    assert a.x_q20 == b.x_q20 and a.p_q40 == b.p_q40 and a.checksum() == b.checksum()


def test_missing_measurements_drop_out():
    f = EkfQ(2, 1 << 23)
    g = EkfQ(2, 1 << 23)
    f.step([1 << 20, None])
    g.step([1 << 20, 5 << 20])
    # joint 0 is identical whatever joint 1 saw; joint 1 only predicted
    assert f.x_q20[0:3] == g.x_q20[0:3] and f.p_q40[0:6] == g.p_q40[0:6]
    h = EkfQ(2, 1 << 23)
    h.predict()
    assert f.x_q20[3:6] == h.x_q20[3:6] and f.p_q40[6:12] == h.p_q40[6:12]


def test_no_floats_on_the_path():
    f = EkfQ(4, 1 << 23, c_q20=1 << 16, g_q20=1 << 20)
    for k in range(50):
        f.step([k << 14, None, -k << 14, 3 << 20], b_q20=[1, 2, 3, 4], m_q32=[1 << 32] * 4)
    assert all(type(v) is int for v in f.x_q20 + f.p_q40)


def test_state_saturates():
    f = EkfQ(1, 1 << 30, p0_q40=[1 << 40, 1 << 40, 1 << 70])
    f.x_q20[2] = 1 << 40  # an absurd torque
    for _ in range(5):
        f.predict()
    assert f.x_q20[1] == (1 << 31) - 1 and f.x_q20[0] == (1 << 31) - 1


def test_bad_parameters():
    with pytest.raises(ValueError):
        EkfQ(0, 1 << 23)
    with pytest.raises(ValueError):
        EkfQ(2, 0)
    with pytest.raises(ValueError):
        EkfQ(2, 1 << 23, m_q32=[1, 0])
    with pytest.raises(ValueError):
        EkfQ(2, 1 << 23, m_q32=[1, 2, 3])
    with pytest.raises(ValueError):
        EkfQ(2, 1 << 23, qn_q40=[1, 2])
