"""The camera model (intrinsics, distortion, extrinsics from a calibration JSON) and interface.

    from device.sensors.camera import CameraModel
    cam = CameraModel.load("camera.json")     # or CameraModel.default(640, 480)
    uv, depth = cam.project(points_world_m)   # (N, 2) pixels, (N,) metres in front of the camera

Calibration JSON (OpenCV's conventions: x right, y down, z forward; pixel centres at integers):
    {"width": 640, "height": 480, "fx": 600, "fy": 600, "cx": 319.5, "cy": 239.5,
     "dist": [k1, k2, p1, p2, k3],                 # optional, Brown-Conrady
     "R_cam_world": [[...], [...], [...]],          # world -> camera rotation
     "t_cam_m": [tx, ty, tz]}                       # x_cam = R_cam_world @ x_world + t_cam_m

A camera backend has capture() -> (image uint8 (H, W), t_s), .model and close(); backends are
chosen by URL in device.hal.open_camera (picam://0, sim-cam://).
"""

import json

import numpy as np

from protocol.errors import FormatError


class CameraModel:
    def __init__(self, width, height, fx, fy, cx, cy, dist=(0, 0, 0, 0, 0), R_cam_world=None,
                 t_cam_m=(0, 0, 0)):
        self.width, self.height = int(width), int(height)
        self.fx, self.fy, self.cx, self.cy = float(fx), float(fy), float(cx), float(cy)
        self.dist = np.zeros(5)
        d = np.asarray(dist, float).ravel()
        self.dist[:len(d)] = d[:5]
        self.R = np.eye(3) if R_cam_world is None else np.asarray(R_cam_world, float).reshape(3, 3)
        self.t = np.asarray(t_cam_m, float).reshape(3)

    @classmethod
    def from_dict(cls, d, where="camera calibration"):
        try:
            return cls(d["width"], d["height"], d["fx"], d["fy"], d["cx"], d["cy"], d.get("dist", ()),
                       d.get("R_cam_world"), d.get("t_cam_m", (0, 0, 0)))
        except (KeyError, TypeError, ValueError) as e:
            raise FormatError("%s: %s" % (where, e))

    @classmethod
    def load(cls, path):
        try:
            with open(path) as f:
                d = json.load(f)
        except ValueError as e:
            raise FormatError("%s: not valid JSON (%s)" % (path, e))
        return cls.from_dict(d, path)

    def to_dict(self):
        return {"width": self.width, "height": self.height, "fx": self.fx, "fy": self.fy,
                "cx": self.cx, "cy": self.cy, "dist": self.dist.tolist(),
                "R_cam_world": self.R.tolist(), "t_cam_m": self.t.tolist()}

    @classmethod
    def looking_at(cls, eye_m, target_m, up=(0, 0, 1), width=640, height=480, fov_deg=60.0):
        """A pinhole camera at eye_m looking at target_m (world up = up)."""
        f = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
        z = np.asarray(target_m, float) - np.asarray(eye_m, float)
        z /= np.linalg.norm(z)
        x = np.cross(z, up)
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        R = np.stack([x, y, z])
        return cls(width, height, f, f, (width - 1) / 2, (height - 1) / 2, R_cam_world=R,
                   t_cam_m=-R @ np.asarray(eye_m, float))

    def to_estimate_camera(self):
        """The same camera as device.estimate.observation.Camera (no distortion: an undistorted
        pinhole; the estimators' contract)."""
        from device.estimate.observation import Camera
        K = np.array([[self.fx, 0.0, self.cx], [0.0, self.fy, self.cy], [0.0, 0.0, 1.0]])
        return Camera(K, self.R, self.t, self.width, self.height)

    def project(self, p_world):
        """(uv (N, 2) pixels, depth (N,) metres) of world points; depth <= 0 is behind."""
        p = np.asarray(p_world, float).reshape(-1, 3) @ self.R.T + self.t
        z = p[:, 2]
        zs = np.where(np.abs(z) < 1e-9, 1e-9, z)
        x, y = p[:, 0] / zs, p[:, 1] / zs
        k1, k2, p1, p2, k3 = self.dist
        if np.any(self.dist):
            r2 = x * x + y * y
            rad = 1 + k1 * r2 + k2 * r2 * r2 + k3 * r2 ** 3
            x, y = (x * rad + 2 * p1 * x * y + p2 * (r2 + 2 * x * x),
                    y * rad + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y)
        return np.stack([self.fx * x + self.cx, self.fy * y + self.cy], 1), z

    def inside(self, uv, margin=0.0):
        return ((uv[:, 0] >= margin) & (uv[:, 0] <= self.width - 1 - margin) &
                (uv[:, 1] >= margin) & (uv[:, 1] <= self.height - 1 - margin))
