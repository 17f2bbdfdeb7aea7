"""Compile (load) the unit's compiled kernels before the first frame, not in one.

    from device.capture.warmup import warm_up
    warm_up(skeleton, sensor_names, estimator="ekf", camera=False)   # once a process: seconds saved

numba compiles a kernel, or loads it from its on-disk cache, at the kernel's first call, and
the first call of any kernel in a process sets numba itself up (its typing registries). On this
machine that was 0.5 s inside the frame where calibration ends (the first linearisation of the
EKF), and another ~30 ms in the frame of the first branch recovery; a Raspberry Pi 4 is several
times slower, and with no cache (a fresh install) it compiles for seconds. A real-time loop
skips the frames that pass meanwhile. So the unit calls warm_up when it is built: a throwaway
estimator of the same kind on a copy of the skeleton takes one step on a synthetic frame (every
IMU present, each with a fused orientation), the branch recovery's IK takes one step, and the
marker finder scans a small image: every kernel the capture loop will call is ready. Nothing of
the unit's own state is touched; numba's kernels are per process, so the first unit of a
process pays it and the others find them ready. Without numba (or MOTIONSTAFF_NUMBA=0) it
does nothing; a failure here only means a kernel compiles at its first use, as before.
"""

import copy

import numpy as np

_DONE = set()


def warm_up(skeleton, sensor_names, estimator="ekf", camera=False, dt_s=1 / 30.0):
    """Run every compiled kernel the unit will use once; True if it ran (False: nothing to do)."""
    from device.body import dynamics_numba
    if not dynamics_numba.available():
        return False
    key = (estimator, bool(camera))
    if key in _DONE:
        return False
    _DONE.add(key)
    try:
        _run(skeleton, list(sensor_names), estimator, camera, dt_s)
    except Exception:            # never fatal: the kernel compiles at its first use instead
        return False
    return True


def _run(skeleton, names, estimator, camera, dt_s):
    sk = copy.deepcopy(skeleton)
    have = {f.name for f in sk.features if f.kind == "imu"}
    names = [n for n in names if n in have]
    if estimator not in ("orient", "none"):
        from device.estimate import make_estimator
        from device.estimate.observation import Observation
        est = make_estimator(estimator, sk, dt_s)
        est.initialise(sk.home.copy())
        g = -np.asarray(sk.gravity, float)
        obs = Observation(dt_s, imu={n: (np.zeros(3), g) for n in names},
                          orient={n: np.eye(3) for n in names})
        est.step(obs)
        if camera:
            # the 2D markers' compiled rows and kinematics (search windows, marker updates)
            from device.estimate.observation import Camera
            cam = Camera.look_at(eye_m=(3.0, 0.0, 1.0), target_m=(0.0, 0.0, 1.0), f_px=600.0,
                                 width_px=640, height_px=480)
            est.predicted_markers2d(cam)
    if names:
        from device.body.ik_batch import OrientationIKBatch
        ik = OrientationIKBatch(sk, names, np.array([sk.home, sk.home]))
        ik.set_orientations(np.broadcast_to(np.eye(3), (len(names), 3, 3)))
        ik.iterate(ik.model.to_si(np.array([sk.home, sk.home])))
        ik.residual_deg(ik.model.to_si(sk.home[None]))
    if camera:
        from device.sensors.markers import find_markers
        img = np.zeros((80, 80), np.uint8)          # above detect_blobs' 4096 px: the compiled scan
        img[36:44, 36:44] = 255
        find_markers(img, {"m%d" % k: (40.0, 40.0, 30.0) for k in range(12)})
        find_markers(img, {"m": (40.0, 40.0, 30.0)})
