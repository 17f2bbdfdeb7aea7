"""Sensor drivers over the bus interface (device.hal), their simulated twins, camera, markers."""
