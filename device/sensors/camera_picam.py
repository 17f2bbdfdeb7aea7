"""The Raspberry Pi camera through picamera2 (imported only when this backend is chosen).

    from device.hal import open_camera
    cam = open_camera("picam://0", calibration="camera.json")
    image, t_s = cam.capture()          # greyscale uint8 (H, W) of the main stream

picamera2 comes from Raspberry Pi OS (apt install python3-picamera2), not from PyPI.
"""

import time

import numpy as np

from device.sensors.camera import CameraModel


class PicamCamera:
    def __init__(self, index=0, calibration=None, width=640, height=480):
        from picamera2 import Picamera2  # lazy: only on a Pi
        self.model = CameraModel.load(calibration) if isinstance(calibration, str) else (
            calibration or CameraModel.looking_at((0, -3, 1), (0, 0, 1), width=width, height=height))
        self.cam = Picamera2(index)
        cfg = self.cam.create_video_configuration(main={"size": (self.model.width, self.model.height),
                                                        "format": "YUV420"})
        self.cam.configure(cfg)
        self.cam.start()

    @classmethod
    def from_url(cls, rest, **options):
        return cls(int(rest or "0"), **options)

    def capture(self):
        yuv = self.cam.capture_array("main")
        return np.ascontiguousarray(yuv[:self.model.height, :self.model.width]), time.monotonic()

    def close(self):
        if self.cam is not None:
            self.cam.stop()
            self.cam.close()
            self.cam = None
