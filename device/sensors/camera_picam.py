"""The Raspberry Pi camera through picamera2 (imported only when this backend is chosen).

    from device.hal import open_camera
    cam = open_camera("picam://0", calibration="camera.json")
    image, t_s = cam.capture()          # the newest frame: greyscale uint8 (H, W) of the main
                                        # stream and its first row's mid-exposure time
                                        # (time.monotonic() s); (None, None) if none is new
    cam.line_s                          # each row seen this much later (rolling shutter)

picamera2 comes from Raspberry Pi OS (apt install python3-picamera2), not from PyPI.

The camera free-runs; picamera2's post_callback hands every completed frame over in its own
thread, where the main stream's luma plane is copied and stamped: libcamera's SensorTimestamp
(ns, CLOCK_MONOTONIC, the clock of time.monotonic(): picamera2 issue 703) is the first row's
readout, ExposureTime (us) before which it started exposing (picamera2
examples/timestamp_capture.py), so the first row was seen at SensorTimestamp - ExposureTime / 2.
capture() never waits for a frame (capture_array would, up to a frame period, in the middle
of the unit's 33 ms): it returns the newest one once. The rolling shutter's row time is
readout_s / height; readout_s is the sensor mode's shortest frame time (1 / its top frame
rate, an upper bound: the mode's minimum blanking included) unless given.
"""

import threading
import time

import numpy as np

from device.sensors.camera import CameraModel


class PicamCamera:
    def __init__(self, index=0, calibration=None, width=640, height=480, readout_s=None):
        from picamera2 import Picamera2  # lazy: only on a Pi
        self.model = CameraModel.load(calibration) if isinstance(calibration, str) else (
            calibration or CameraModel.looking_at((0, -3, 1), (0, 0, 1), width=width, height=height))
        self.cam = Picamera2(index)
        cfg = self.cam.create_video_configuration(main={"size": (self.model.width, self.model.height),
                                                        "format": "YUV420"})
        self.cam.configure(cfg)
        if readout_s is None:
            readout_s = self._mode_readout_s()
        self.line_s = float(readout_s) / self.model.height
        self._lock = threading.Lock()
        self._latest = None              # (image, t_s), replaced by each frame, taken once
        self.frames = 0
        self.unstamped = 0               # frames without SensorTimestamp (stamped on arrival)
        self.bad_frames = 0              # frames the callback could not take (counted, dropped)
        self.last_error = ""
        self.cam.post_callback = self._on_frame
        self.cam.start()

    def _mode_readout_s(self):
        """1 / the top frame rate of the sensor mode configured (0.024 s if unknown)."""
        try:
            size = tuple(self.cam.camera_configuration()["sensor"]["output_size"])
            fps = [m["fps"] for m in self.cam.sensor_modes if tuple(m["size"]) == size]
            return 1.0 / max(fps) if fps else 0.024
        except (KeyError, TypeError, ValueError, AttributeError):
            return 0.024

    def _on_frame(self, request):
        """picamera2's thread: copy the frame and stamp it (never raises into picamera2)."""
        try:
            md = request.get_metadata() or {}
            yuv = request.make_array("main")
            image = np.ascontiguousarray(yuv[:self.model.height, :self.model.width])
            ts_ns = md.get("SensorTimestamp")
            if ts_ns is None:
                # no timestamp (an old libcamera): the frame is at least a readout old now
                self.unstamped += 1
                ts_ns = time.monotonic_ns() - int(self.line_s * self.model.height * 1e9)
            # the first row's middle of exposure: SensorTimestamp (its readout) - ExposureTime / 2
            t_s = ts_ns * 1e-9 - (md.get("ExposureTime") or 0) * 0.5e-6
        except Exception as e:              # a bad frame is dropped and counted
            self.bad_frames += 1
            self.last_error = str(e)
            return
        with self._lock:
            self._latest = (image, t_s)
            self.frames += 1

    @classmethod
    def from_url(cls, rest, **options):
        return cls(int(rest or "0"), **options)

    def capture(self):
        with self._lock:
            got, self._latest = self._latest, None
        return got if got is not None else (None, None)

    def close(self):
        if self.cam is not None:
            self.cam.stop()
            self.cam.close()
            self.cam = None
