"""Capture-unit benchmark: timing of the simulated unit, held-out accuracy, AHRS anchor.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python benchmarks/capture.py   # prints three tables
    .venv/bin/python benchmarks/capture.py --quick    # shorter runs
    MOTIONSTAFF_DATA=../shared/data .venv/bin/python benchmarks/capture.py --no-timing

1. Timing (virtual clock, one core): the unit's work per frame (driver reads over the simulated
   I2C buses and multiplexers, blob detection, estimation, encoding, recording) against the frame
   period, its thread CPU time against a quarter of the period, the bus time of the slowest bus
   beside it (the I2C twin's clock: bits, acknowledge, START/STOP, BNO055 clock stretching), and
   separately the simulator's own work (subject kinematics, chip truth, rendering), which a real
   unit does not do. Goals: 30 Hz, 48 dofs, one IMU per segment (+ camera markers), unit CPU p99
   under 8.3 ms; 100 Hz with 18 dofs.
2. Held-out motions (not the bundled clip) performed by the simulated subject: joint-angle RMS
   against the truth, 8-bit staffs as recorded (goal <= 2 deg). The EKF (default) runs on the
   human model performing the clip (device/capture/retarget.py); "orient" on the clip's own
   BVH skeleton. 2b: MPU-9250s with and without the magnetometer in the orient filter.
3. Anchor: the per-sensor attitude filter of the gyro/accel path against x-io's Fusion
   (imufusion) and VQF on the real BROAD recording (inclination error vs the optical reference,
   and time per sample).
"""

import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
DATA = os.environ.get("MOTIONSTAFF_DATA") or os.path.join(os.path.dirname(HERE), "..", "shared", "data")

from device.capture.config import default_config, sim_buses  # noqa: E402
from device.capture.loop import CaptureLoop  # noqa: E402
from device.capture.unit import build_unit  # noqa: E402


def joint_error_deg(loop, unit, codes, settle_s=1.6):
    """Recorded 8-bit codes minus the truth, rotation rows, wrapped to +-180 deg, after the
    calibration and blend-in (settle_s): (frames, rotation dofs)."""
    from protocol import staffcodec as sc
    est = np.array([[np.nan if x is None else x for x in sc.decode_column(c, loop.los, loop.his, 8)]
                    for c in codes])
    tru = loop.truth_values()
    rot = np.array([d.kind == "rotation" for d in unit.skeleton.dofs])
    k0 = int(settle_s * unit.rate_hz)
    return (est[k0:, rot] - tru[k0:, rot] + 180) % 360 - 180


def timing(quick):
    rows = []
    # the torque-state EKF (the default estimator) first; "orient" (pass-through) for reference.
    # 100 Hz with BNO055s does not fit the bus (their clock stretching: 4.3 ms a sensor at
    # 400 kHz; 3 on a bus > 10 ms) and is refused: MPU-6050s through their FIFO instead
    cases = [("ekf: human48 + 22 IMU + 46 markers", dict(body="human", camera=True), 30.0),
             ("ekf: human48 + 22 IMU", dict(body="human"), 30.0),
             ("ekf: CMU clip retargeted, human48 + 22 IMU", dict(body="clip"), 30.0),
             ("ekf: humanoid18 + 11 MPU-6050", dict(body="humanoid18", chip="mpu6050"), 100.0),
             ("orient: human48 + 22 IMU + 46 markers", dict(body="human", camera=True, estimator="orient"), 30.0),
             ("orient: CMU clip 96 dofs + 31 IMU", dict(body="clip", estimator="orient"), 30.0)]
    for name, kw, rate in cases:
        cfg = default_config(rate_hz=rate, **kw)
        if cfg["subject"] is not None:
            cfg["subject"]["max_s"] = 30.0            # retargeting (ekf on a clip): what is captured
        unit = build_unit(cfg)
        loop = CaptureLoop(unit)
        loop.run(frames=int(rate * 1.5))                # calibration and warm-up, not measured
        loop.stats = type(loop.stats)(loop.period_s, loop.stats.stages)
        loop.run(frames=loop.frame_index + int(rate * (5 if quick else 20)))
        s = loop.stats.summary()
        rows.append((name, unit.skeleton.ndof, rate, s["period_ms"], s["estimate_mean_ms"], s["busy_mean_ms"],
                     s["busy_p99_ms"], s["cpu_mean_ms"], s["cpu_p99_ms"], s["period_ms"] / 4.0,
                     max(b["s"] for b in unit.bus_budget) * 1000.0, s["bus_p99_ms"],
                     s["spare_mean_pct"], s["simulate_mean_ms"], s["overruns"], s["frames"]))
    print("## 1. Timing (virtual clock; unit work vs the frame period, bus time beside it)\n")
    print("Unit work: read (drivers over the simulated buses, blob detection), estimate, encode, record,")
    print("output; not the simulator (subject, chips' registers, rendering), not the bus wait. CPU: the")
    print("thread's CPU time of that work (time.thread_time; what the other processes on this shared")
    print("machine do not inflate). Bus: the slowest bus's time a frame (budget: measured by")
    print("device/capture/busbudget.py; p99: as run, with retries of dropped transfers). Overruns: frames")
    print("whose wall work + bus time exceeded the period (wall time on a loaded machine).\n")
    print("| case | dofs | Hz | period ms | estimate mean ms | unit mean ms | unit p99 ms | CPU mean ms | CPU p99 ms | quarter period ms | bus budget ms | bus p99 ms | spare % | simulator ms | overruns | frames |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %.0f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f | %.1f | %.1f | %.2f | %d | %d |" % r)
    return rows


def accuracy(quick):
    print("\n## 2. Held-out motions: joint-angle RMS vs --truth (8-bit staff codes)\n")
    print("| clip | estimator | body | dofs | seconds | RMS deg | max deg | estimate ms | EKF failures |")
    print("|---|---|---|---|---|---|---|---|---|")
    clips = ["131_03.bvh", "05_20-mb.bvh", "05_20-daz.bvh", "dataset-1_kick_normal_001.bvh"]
    runs = [(c, e) for c in clips + [None] for e in ("ekf", "orient")]
    for clip, estimator in runs:
        path = os.path.join(DATA, "bvh", clip) if clip else None
        if path and not os.path.exists(path):
            continue
        # ekf: the human model performs the clip (retargeted); orient: the clip's own skeleton
        cfg = default_config(body="clip" if clip else "human", estimator=estimator)
        if estimator == "orient" and clip:
            # the clip's own skeleton: up to 45 IMU links (05_20-daz), whose BNO055 reads fit
            # 30 Hz only over 8 buses (a Pi 4 has 5: capture refuses that unit on 5)
            cfg["buses"] = sim_buses(["i2c-%d" % k for k in range(1, 9)])
        cfg["subject"]["max_s"] = 4.0 if quick else 12.0
        unit = build_unit(cfg, clip_path=path)
        loop = CaptureLoop(unit, truth=True)
        codes = []
        loop.outputs.append(lambda k, t, v, c: codes.append(c))
        secs = min(unit.subject.duration_s, 4.0 if quick else 12.0)
        loop.run(duration_s=secs)
        d = joint_error_deg(loop, unit, codes)
        st = loop.stats.summary()
        print("| %s | %s | %s | %d | %.1f | %.2f | %.1f | %.2f | %s |" % (
            clip or "synthetic", estimator, unit.skeleton.name, unit.skeleton.ndof, secs,
            np.sqrt(np.nanmean(d ** 2)), np.nanmax(np.abs(d)), st["estimate_mean_ms"],
            getattr(unit.estimator, "failures", "-")), flush=True)


def magnetometer(quick):
    """MPU-9250s on the human model (orient, FIFO + Mahony): the 9-axis filter against the 6-axis
    one on the same seeded run (the subject's gyro bias random walk, 0.02 deg/s/sqrt(s), is what
    the calibration cannot remove). Heading: each sensor's rotation about the vertical of
    R_est R_true^T relative to the first estimated frame, RMS over sensors and frames."""
    from device.capture.rot import log_so3
    secs = 10.0 if quick else 60.0
    print("\n## 2b. MPU-9250 magnetometer in the orient filter (human48, 22 MPU-9250, synthetic, %.0f s)\n" % secs)
    print("| filter | joint RMS deg | heading RMS deg | heading max deg | heading RMS last 10 s | mag frames rejected |")
    print("|---|---|---|---|---|---|")
    for use_mag in (True, False):
        cfg = default_config(body="human", chip="mpu9250", estimator="orient")
        cfg["estimator_options"] = {"magnetometer": use_mag}
        unit = build_unit(cfg)
        loop = CaptureLoop(unit, truth=True)
        codes = []
        loop.outputs.append(lambda k, t, v, c: codes.append(c))
        up = -unit.skeleton.gravity / np.linalg.norm(unit.skeleton.gravity)
        names = [s["name"] for s in unit.subject.sensors]
        D0, head = None, []
        while loop.frame_index < int(secs * unit.rate_hz):
            loop.run(frames=loop.frame_index + 1)
            if unit.estimator is None:
                continue
            Rt = unit.subject._kinematics(unit.subject.t_s)[0][1]
            D = np.array([unit.estimator._ahrs[n] for n in names]) @ np.swapaxes(Rt, 1, 2)
            D0 = D if D0 is None else D0
            head.append((unit.subject.t_s, np.degrees(log_so3(D @ np.swapaxes(D0, 1, 2)) @ up)))
        d = joint_error_deg(loop, unit, codes)
        t = np.array([h[0] for h in head])
        h = np.array([h[1] for h in head])
        print("| %s | %.2f | %.2f | %.1f | %.2f | %d |" % (
            "9-axis (mag)" if use_mag else "6-axis (no mag)", np.sqrt(np.nanmean(d ** 2)),
            np.sqrt(np.mean(h ** 2)), np.abs(h).max(), np.sqrt(np.mean(h[t >= t[-1] - 10.0] ** 2)),
            sum(unit.estimator.mag_rejected.values())), flush=True)


def anchor(quick):
    path = os.path.join(DATA, "imu", "02_undisturbed_slow_rotation_B.mat")
    if not os.path.exists(path):
        print("\n(anchor skipped: %s absent)" % path)
        return
    import scipy.io
    from device.capture.orient import OrientEstimator
    from device.capture.rawlog import single_imu_skeleton
    from device.capture.rot import quat_to_mat
    m = scipy.io.loadmat(path)
    fs = float(np.ravel(m["sampling_rate"])[0])
    n = int(fs * (30 if quick else 120))
    gyr, acc, ref = m["imu_gyr"][:n], m["imu_acc"][:n], m["opt_quat"][:n]
    dt = 1.0 / fs
    z = np.array([0.0, 0.0, 1.0])
    ok = ~np.isnan(ref).any(1)
    ok[: int(fs)] = False
    Rr = quat_to_mat(np.where(ok[:, None], ref, [1.0, 0, 0, 0]))
    ur = np.einsum("kji,j->ki", Rr, z)

    def inc(R):
        ue = np.einsum("kji,j->ki", R, z)
        e = np.degrees(np.arccos(np.clip((ue * ur).sum(1), -1, 1)))[ok]
        return e.mean(), np.percentile(e, 95)

    res = []
    # ours: the capture unit's per-sensor Mahony filter (OrientEstimator's gyro/accel path)
    est = OrientEstimator(single_imu_skeleton(), dt, {"imu": 0})
    from device.capture.calibrate import StillCalibration
    cal = StillCalibration(est.sk, [{"name": "imu", "link": 0, "R_nominal": np.eye(3)}], frames=int(fs / 2))
    for k in range(int(fs / 2)):
        cal.add({"imu": {"gyro": gyr[k], "accel": acc[k], "quat": None}})
    r = cal.result()
    est.start_ahrs("imu", r["ahrs"]["imu"])
    est.gyro_bias = r["gyro_bias"]
    R = np.empty((n, 3, 3))
    t0 = time.perf_counter()
    for k in range(n):
        est._sensor_world("imu", (gyr[k], acc[k]), {})
        R[k] = est._ahrs["imu"]
    res.append(("motionstaff Mahony (numpy, per sample)", time.perf_counter() - t0, inc(R)))
    try:
        import imufusion
        a = imufusion.Ahrs()
        a.set_sample_period(dt)
        t0 = time.perf_counter()
        for k in range(n):
            a.update_no_magnetometer(np.degrees(gyr[k]), acc[k] / 9.80665)
            R[k] = quat_to_mat(a.get_quaternion())
        res.append(("x-io Fusion (imufusion %s, C)" % getattr(imufusion, "__version__", ""),
                    time.perf_counter() - t0, inc(R)))
    except ImportError:
        pass
    try:
        import vqf
        v = vqf.VQF(dt)
        t0 = time.perf_counter()
        out = v.updateBatch(np.ascontiguousarray(gyr), np.ascontiguousarray(acc))
        el = time.perf_counter() - t0
        res.append(("VQF (vqf, C++ batch)", el, inc(quat_to_mat(out["quat6D"]))))
    except ImportError:
        pass
    print("\n## 3. Anchor: attitude from gyro + accelerometer, BROAD trial 02 (real IMU, %.0f s)\n" % (n / fs))
    print("| filter | us / sample | inclination err mean deg | p95 deg |")
    print("|---|---|---|---|")
    for name, el, (mean, p95) in res:
        print("| %s | %.2f | %.2f | %.2f |" % (name, el / n * 1e6, mean, p95))


def main():
    quick = "--quick" in sys.argv
    print("# motionstaff capture benchmark (%s, one process)\n" % time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    if "--no-timing" not in sys.argv:
        timing(quick)
    accuracy(quick)
    magnetometer(quick)
    anchor(quick)


if __name__ == "__main__":
    main()
