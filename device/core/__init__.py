"""The MicroPython-safe core of the unit: fixed-point math and the fixed-point EKF (no floats, no I/O).

    from device.core import fxp
    from device.core.ekf_q import EkfQ
"""
