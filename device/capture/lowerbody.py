"""The lower-body unit: IMUs on the pelvis, thighs, shanks and feet of the human model.

    from device.capture.lowerbody import legs_skeleton, lower_body_config
    sk = legs_skeleton()              # human-floating, 20 dofs: root 6, hip 3 + knee 2 + ankle 2 per leg
    cfg = lower_body_config()         # 7 sensors (pelvis, thighs, shanks, feet), body "human-legs"
    cfg = lower_body_config(low_shank=True)      # 9: a second IMU on each shank above the ankle

The skeleton is the human model with a floating pelvis (device/body/human.py, body
"human-floating") and only the root and leg dofs: the trunk, arms, head and toes keep their
home pose rigidly (their mass rides on the pelvis, so the dynamics of the legs are the whole
body's), which is what a unit without upper-body sensors can honestly claim. Toes have no
sensor and are held straight. The same torque-state EKF runs on it (60 states instead of 162).

Sensor names are link + "_imu" (l_shank_low_imu for the second shank sensor); mount_rpy_deg
is the nominal mounting, which the calibration replaces (device/capture/functional.py).
"""

from device.body.human import human_model
from device.body.skeleton import Skeleton

BODY = "human-legs"
LEG_DOFS = ("hip_flex", "hip_abd", "hip_rot", "knee_flex", "knee_rot", "ankle_flex", "ankle_inv")
# the EKF on a walking person: accelerometers see heel strikes and soft tissue the floating-body
# model has no term for (5 m/s^2), and the fused orientations, calibrated in the stance, are
# followed closely (0.003 rad). Chosen on the SIMULATED subject with honest sensors performing
# the walk (benchmarks/realimu.py, docs/estimation.md), never on the real trial's reference:
# mean RMS of the six sagittal angles 6.42 deg with the defaults (1.0, 0.02), 6.19 (3.0, 0.02),
# 4.82 (3.0, 0.01), 4.03 (5.0, 0.005), 4.02 (10.0, 0.005), 3.92 (5.0, 0.003)
EKF_OPTIONS = {"accel_sigma_m_s2": 5.0, "orient_sigma_rad": 0.003}
# knee and ankle axes (device/capture/functional.py): each thigh keeps its own swing axis, the
# shank's and the foot's are fitted level to their proximal segment's by Seel's hinge condition
HINGE = "seel-distal"
SEGMENTS = ("pelvis", "l_thigh", "r_thigh", "l_shank", "r_shank", "l_foot", "r_foot")


def legs_skeleton(mass_kg=75.0, height_m=1.75):
    h = human_model(mass_kg=mass_kg, height_m=height_m, floating=True)
    keep = {"root_tx", "root_ty", "root_tz", "root_yaw", "root_pitch", "root_roll"}
    keep.update("%s_%s" % (s, d) for s in "lr" for d in LEG_DOFS)
    dofs = [d for d in h.dofs if d.name in keep]
    imus = {ln + "_imu" for ln in SEGMENTS}
    feats = [f for f in h.features if f.kind != "imu" or f.name in imus]
    return Skeleton(h.links, dofs, feats, name=BODY, gravity=h.gravity, meta=dict(h.meta, held=(
        "trunk, arms, head, toes: rigid at home")))


def lower_body_config(rate_hz=100.0, low_shank=False, estimator="ekf", chip="bno055"):
    """The built-in lower-body unit config (real sensors, subject null: replay or a Pi)."""
    from device.capture.config import _ADDR, DEFAULT_BUS_HZ, PI4_BUSES, check
    names = list(SEGMENTS) + (["l_shank_low", "r_shank_low"] if low_shank else [])
    sk = legs_skeleton()
    pos = {f.name: [float(x) for x in f.position] for f in sk.features if f.kind == "imu"}
    sensors = []
    # two BNO055 a bus (0x28, 0x29), the Pi's buses at 400 kHz: a BNO055's read is about 4.3 ms
    # there with its clock stretching, so a third would not fit the 10 ms frame at 100 Hz
    # (device/capture/busbudget.py); 7 sensors take four buses, 9 all five
    if len(names) > 2 * len(PI4_BUSES):
        raise ValueError("%d BNO055 do not fit two a bus on the Pi's %d buses" % (len(names), len(PI4_BUSES)))
    buses = PI4_BUSES[:(len(names) + 1) // 2]
    for i, n in enumerate(names):
        b, k = i // 2, i % 2
        link = n.replace("_low", "")
        p = pos.get(link + "_imu", [0.0, 0.0, 0.0])
        if n.endswith("_low"):
            p = [0.04, 0.0, -0.36]              # just above the ankle (the shank is 0.44 m long)
        sensors.append({"name": n + "_imu", "chip": chip, "bus": buses[b],
                        "addr": _ADDR[chip][k], "mux": None,
                        "link": link, "position": p, "mount_rpy_deg": [0.0, 0.0, 0.0]})
    cfg = {"format": "motionstaff-unit", "version": 1, "rate_hz": float(rate_hz), "bits": 16,
           "body": BODY, "estimator": estimator, "subject": None,
           "estimator_options": dict(EKF_OPTIONS) if estimator in ("ekf", "ekf-euler") else {},
           "calibration": {"still_s": 5.0, "functional_s": 4.0, "hinge": HINGE},
           "buses": {name: "i2c://%s?hz=%d" % (name.split("-")[-1], DEFAULT_BUS_HZ) for name in buses},
           "sensors": sensors, "outputs": []}
    return check(cfg)
