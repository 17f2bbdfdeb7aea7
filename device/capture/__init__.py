"""The capture unit: configuration, simulated subject, capture loop, calibration, raw logs."""
