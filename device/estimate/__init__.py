"""Estimation on the unit (numpy): the float EKF, its baselines and observation models.

    from device.estimate.ekf_joint_float import EkfJointFloat
"""
