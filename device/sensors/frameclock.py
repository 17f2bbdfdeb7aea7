"""When a rolling-shutter camera's frames are exposed, time-stamped and handed to the program.

    from device.sensors.frameclock import FrameClock
    fc = FrameClock(fps=30.0, exposure_s=0.010, readout_s=0.024, height_px=480, phase_s=0.004)
    k = fc.newest(now_s=0.5)            # the newest frame the program can have by then (None: none yet)
    fc.first_row_mid_s(k)               # the first row's mid-exposure time (s)
    fc.line_s                           # each row later by this much (s): the rolling shutter

The camera free-runs on its own clock: frame k's first row starts exposing at
phase_s + k / fps, each row line_s = readout_s / height_px after the one above it, every row
for exposure_s. libcamera's SensorTimestamp is the first row's readout (the end of its
exposure: picamera2 examples/timestamp_capture.py, "SensorTimestamp is when the first pixel
was read out, so it started being exposed ExposureTime earlier"), on CLOCK_MONOTONIC, the
clock of time.monotonic() (picamera2 issue 703). The frame reaches the program after the last
row is read out and the ISP has processed it: delivery_s after the readout ends (not a
measured figure: one frame period by default, the pipeline's depth of one frame in flight).

Row v of frame k was seen at first_row_mid_s(k) + v * line_s: a marker's own time.
"""

import math


class FrameClock:
    def __init__(self, fps=30.0, exposure_s=0.010, readout_s=0.024, height_px=480, phase_s=0.0,
                 delivery_s=None):
        if fps <= 0 or exposure_s <= 0 or readout_s < 0 or height_px <= 0:
            raise ValueError("FrameClock: fps, exposure_s and height_px must be > 0, readout_s >= 0")
        self.period_s = 1.0 / float(fps)
        if exposure_s > self.period_s:
            raise ValueError("FrameClock: exposure %.4f s is longer than the frame period %.4f s"
                             % (exposure_s, self.period_s))
        if readout_s >= self.period_s:
            raise ValueError("FrameClock: readout %.4f s does not fit the frame period %.4f s (a rolling "
                             "shutter reads one frame a period: a faster sensor mode)" % (readout_s, self.period_s))
        self.exposure_s = float(exposure_s)
        self.readout_s = float(readout_s)
        self.line_s = self.readout_s / float(height_px)
        self.phase_s = float(phase_s)
        self.delivery_s = self.period_s if delivery_s is None else float(delivery_s)

    def start_s(self, k):
        """Frame k's first row starts exposing."""
        return self.phase_s + k * self.period_s

    def sensor_timestamp_s(self, k):
        """libcamera's SensorTimestamp of frame k: its first row read out."""
        return self.start_s(k) + self.exposure_s

    def first_row_mid_s(self, k):
        """The middle of frame k's first row's exposure."""
        return self.start_s(k) + 0.5 * self.exposure_s

    def delivered_s(self, k):
        """Frame k reaches the program: last row read out, then the ISP."""
        return self.sensor_timestamp_s(k) + self.readout_s + self.delivery_s

    def newest(self, now_s):
        """The index of the newest frame delivered by now_s, or None before the first."""
        # delivered_s(k) <= now  <=>  k <= (now - delivered_s(0)) / period
        k = math.floor((now_s - self.delivered_s(0)) / self.period_s + 1e-9)
        return k if k >= 0 else None
