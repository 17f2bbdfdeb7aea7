"""Estimation on the unit (numpy): the float EKF, its baselines and observation models.

    from device.estimate import make_estimator
    from device.estimate.observation import Observation, Camera
    est = make_estimator("ekf", skeleton, dt_s=1 / 60)       # "ekf" | "ekf-euler" | "cv" | "ca" | "fusion"
    est.initialise(q0_dof); q_dof = est.step(obs)
    from device.estimate.ekf_joint_float import EkfJointFloat  # the fixed-point filter's float twin

make_estimator is imported lazily (device/estimate/estimators.py), so importing this package
stays cheap for the per-joint filters.
"""


def make_estimator(kind, skeleton, dt_s, **opts):
    """An estimator with initialise(q0), step(obs) -> q and predicted_markers2d() (see estimators)."""
    from device.estimate.estimators import make_estimator as make

    return make(kind, skeleton, dt_s, **opts)
