"""What the estimators observe: one Observation per frame, and the calibrated pinhole Camera.

    import numpy as np
    from device.estimate.observation import Observation, Camera
    cam = Camera.look_at(eye_m=(4, 0, 1), target_m=(0, 0, 1), f_px=800, width_px=1280, height_px=720)
    u_v = cam.project(np.array([[0.0, 0.1, 1.2]]))          # (1, 2) pixels
    obs = Observation(0.0, imu={"l_thigh_imu": (gyro_rad_s, accel_m_s2)},
                      markers3d={"head_m1": None},           # None: occluded, drops out
                      markers2d={"l_hand_m1": (640.0, 300.0)}, camera=cam)

IMU: angular velocity (rad/s) and specific force (m/s^2, accel - gravity) in the sensor's own
frame (the feature's orientation). orient (optional): a fused-orientation sensor's (BNO055)
world rotation of that frame, {feature: (3, 3)}, in the skeleton's world. Markers: world positions (m) or pixel coordinates in one
camera. A None or absent entry is a missing observation. markers2d_lag_s (optional): how old
each 2D marker is at t_s (s): a camera frame is seen before it is handed over, each row of a
rolling shutter at its own time; the EKF predicts the marker where it was then.
"""

import numpy as np


class Observation:
    """One frame of observations at time t_s (see the module docstring)."""

    __slots__ = ("t_s", "imu", "markers3d", "markers2d", "markers2d_lag_s", "camera", "orient")

    def __init__(self, t_s, imu=None, markers3d=None, markers2d=None, camera=None, orient=None,
                 markers2d_lag_s=None):
        self.t_s = float(t_s)
        self.imu = dict(imu or {})
        self.orient = dict(orient or {})      # {imu feature: world rotation (3, 3) of the sensor}
        self.markers3d = dict(markers3d or {})
        self.markers2d = dict(markers2d or {})
        self.markers2d_lag_s = dict(markers2d_lag_s or {})
        self.camera = camera
        if self.markers2d and camera is None and any(v is not None for v in self.markers2d.values()):
            raise ValueError("Observation: 2D markers need a camera")

    def __repr__(self):
        n = lambda d: sum(v is not None for v in d.values())
        return "Observation(t=%.3f s, %d imu, %d 3D, %d 2D, %d orient)" % (
            self.t_s, n(self.imu), n(self.markers3d), n(self.markers2d), n(self.orient))


class Camera:
    """A calibrated pinhole camera: x_cam = R p_world + t, [u w, v w, w] = K x_cam.

    K (3, 3) intrinsics in pixels, R (3, 3) world->camera rotation (camera looks along +z,
    x right, y down), t (3,) metres, image size in pixels.
    """

    def __init__(self, K, R, t, width_px, height_px):
        self.K = np.asarray(K, float).reshape(3, 3)
        self.R = np.asarray(R, float).reshape(3, 3)
        self.t = np.asarray(t, float).reshape(3)
        self.width_px = int(width_px)
        self.height_px = int(height_px)

    @classmethod
    def look_at(cls, eye_m, target_m, f_px, width_px, height_px, up=(0.0, 0.0, 1.0)):
        """A camera at eye_m looking at target_m, focal length f_px, principal point centred."""
        eye = np.asarray(eye_m, float)
        z = np.asarray(target_m, float) - eye
        z /= np.linalg.norm(z)
        x = np.cross(z, up)
        x /= np.linalg.norm(x)
        y = np.cross(z, x)
        R = np.stack([x, y, z])
        K = np.array([[f_px, 0, width_px / 2.0], [0, f_px, height_px / 2.0], [0, 0, 1.0]])
        return cls(K, R, -R @ eye, width_px, height_px)

    def to_camera(self, p_m):
        """World points (..., 3) -> camera frame (..., 3)."""
        return np.asarray(p_m, float) @ self.R.T + self.t

    def project(self, p_m):
        """Pixels (..., 2) of world points (..., 3); NaN for points at or behind the camera."""
        w = self.to_camera(p_m) @ self.K.T
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = w[..., :2] / w[..., 2:3]
        return np.where(w[..., 2:3] > 1e-6, uv, np.nan)

    def project_jacobian(self, p_m):
        """d(u, v)/d p_world: (..., 2, 3) for world points (..., 3)."""
        w = self.to_camera(p_m) @ self.K.T
        # u = w0 / w2 : du/dw = [1/w2, 0, -w0/w2^2] ; dw/dp = K R
        z = w[..., 2]
        duv_dw = np.zeros(w.shape[:-1] + (2, 3))
        duv_dw[..., 0, 0] = 1.0 / z
        duv_dw[..., 1, 1] = 1.0 / z
        duv_dw[..., 0, 2] = -w[..., 0] / (z * z)
        duv_dw[..., 1, 2] = -w[..., 1] / (z * z)
        return duv_dw @ (self.K @ self.R)

    def in_image(self, uv):
        """(...,) bool: pixel inside the image."""
        uv = np.asarray(uv, float)
        return ((uv[..., 0] >= 0) & (uv[..., 0] < self.width_px) & (uv[..., 1] >= 0)
                & (uv[..., 1] < self.height_px))

    def __repr__(self):
        return "Camera(f=%.0f px, %dx%d)" % (self.K[0, 0], self.width_px, self.height_px)
