"""The simulated camera twin: renders bright blobs where markers project, with noise and occlusion.

    from device.sensors.camera_sim import SimCamera
    cam = SimCamera(model, scene=lambda: {"l_knee_m": (0.1, 0.2, 0.5), ...}, seed=1)
    image, t_s = cam.capture()          # uint8 (H, W): dark background, one Gaussian blob a marker
    cam.truth_uv                        # {name: (u, v)} of the markers drawn (not occluded)

Blobs have a radius that shrinks with depth (a retro-reflector of marker_radius_m), sensor
noise (noise_dn grey levels), and each marker is occluded with probability occlusion per frame
(or for the frames a scripted occlusion list says). Rendering touches only each blob's patch.
"""

import numpy as np

from device.sensors.camera import CameraModel


class SimCamera:
    def __init__(self, model=None, scene=None, seed=0, marker_radius_m=0.012, noise_dn=3.0,
                 occlusion=0.02, background_dn=12, clock=None):
        self.model = model or CameraModel.looking_at((3.0, 0.0, 1.0), (0.0, 0.0, 0.9))
        self.scene = scene
        self.rng = np.random.default_rng(seed)
        self.r_m = marker_radius_m
        self.noise_dn = noise_dn
        self.occlusion = occlusion
        self.background = background_dn
        self.clock = clock
        self.truth_uv = {}
        self.frames = 0
        self._bank = None

    def _noise(self):
        """Background + sensor noise: one of a bank of 8 seeded noise frames, randomly shifted."""
        m = self.model
        if self._bank is None:
            self._bank = self.background + self.rng.normal(0.0, self.noise_dn or 0.0, (8, m.height, m.width))
        k = int(self.rng.integers(8))
        return np.roll(self._bank[k], int(self.rng.integers(m.width)), axis=1)

    @classmethod
    def from_url(cls, rest, **options):
        return cls(**options)

    def capture(self):
        m = self.model
        img = self._noise()
        pts = self.scene() if self.scene is not None else {}
        names = list(pts)
        self.truth_uv = {}
        if names:
            P = np.array([pts[n] for n in names], float)
            uv, z = m.project(P)
            occl = self.rng.random(len(names)) < self.occlusion
            for k, n in enumerate(names):
                if z[k] <= 0.05 or occl[k]:
                    continue
                r_px = max(1.2, m.fx * self.r_m / z[k])
                u, v = uv[k]
                if not (-r_px < u < m.width + r_px and -r_px < v < m.height + r_px):
                    continue
                self._blob(img, u, v, r_px)
                if 0 <= u <= m.width - 1 and 0 <= v <= m.height - 1:
                    self.truth_uv[n] = (float(u), float(v))
        self.frames += 1
        t = self.clock() if self.clock is not None else self.frames
        return np.clip(img, 0, 255).astype(np.uint8), t

    def _blob(self, img, u, v, r_px):
        h, w = img.shape
        s = 3 * r_px
        x0, x1 = max(0, int(u - s)), min(w, int(u + s) + 2)
        y0, y1 = max(0, int(v - s)), min(h, int(v + s) + 2)
        if x0 >= x1 or y0 >= y1:
            return
        xs = np.arange(x0, x1) - u
        ys = np.arange(y0, y1) - v
        sig = r_px / 1.5
        g = np.exp(-(ys[:, None] ** 2 + xs[None, :] ** 2) / (2 * sig * sig))
        img[y0:y1, x0:x1] += 230.0 * g

    def close(self):
        pass
