"""The simulated camera twin: renders bright blobs where markers project, with noise and occlusion.

    from device.sensors.camera_sim import SimCamera
    cam = SimCamera(model, scene=lambda: {"l_knee_m": (0.1, 0.2, 0.5), ...}, seed=1)
    image, t_s = cam.capture()          # uint8 (H, W): dark background, one Gaussian blob a marker
    cam.truth_uv                        # {name: (u, v)} of the markers drawn (not occluded)

With a FrameClock (device/sensors/frameclock.py) the camera runs as a Pi camera does: frames
on its own free-running clock, each row seen at its own time (rolling shutter: the scene is
asked at the first and the last row's time, scene(t_s), and each marker blended by its row),
handed over a readout and an ISP pass later; capture() returns the newest frame delivered by
clock() with its first row's mid-exposure time, or (None, None) when none has come since the
last call (frames passed over are counted in `dropped`). Without one, every call renders the
scene as it is now (the detector's tests).

Blobs have a radius that shrinks with depth (a retro-reflector of marker_radius_m), sensor
noise (noise_dn grey levels), and each marker is occluded with probability occlusion per frame
(or for the frames a scripted occlusion list says). Rendering touches only each blob's patch.
"""

import numpy as np

from device.sensors.camera import CameraModel


class SimCamera:
    def __init__(self, model=None, scene=None, seed=0, marker_radius_m=0.012, noise_dn=3.0,
                 occlusion=0.02, background_dn=12, clock=None, timing=None):
        self.model = model or CameraModel.looking_at((3.0, 0.0, 1.0), (0.0, 0.0, 0.9))
        self.scene = scene
        self.rng = np.random.default_rng(seed)
        self.r_m = marker_radius_m
        self.noise_dn = noise_dn
        self.occlusion = occlusion
        self.background = background_dn
        self.clock = clock
        self.timing = timing
        if timing is not None and clock is None:
            raise ValueError("SimCamera: a FrameClock needs the clock it runs against")
        self.line_s = timing.line_s if timing is not None else 0.0   # each row later by (s)
        self.dropped = 0
        self._last_k = None
        self.truth_uv = {}
        self.frames = 0
        self._bank = None

    def _draw_noise(self):
        m = self.model
        if self._bank is None:
            self._bank = self.background + self.rng.normal(0.0, self.noise_dn or 0.0, (8, m.height, m.width))
            # the frames as they come out where no blob is: clip and truncate, as capture() does
            self._bank_u8 = np.clip(self._bank, 0, 255).astype(np.uint8)
            self._work = np.empty((m.height, m.width))
            self._touched = np.zeros((m.height, m.width), bool)
        k = int(self.rng.integers(8))
        return k, int(self.rng.integers(m.width))

    @classmethod
    def from_url(cls, rest, **options):
        return cls(**options)

    def capture(self):
        """(uint8 image, t_s): with a FrameClock the newest frame delivered by clock() and its
        first row's mid-exposure time, or (None, None) if none came since the last call;
        without one the scene now, t_s = clock() (or the frame count)."""
        if self.timing is None:
            img = self._render(None)
            return img, (self.clock() if self.clock is not None else self.frames)
        k = self.timing.newest(self.clock())
        if k is None or (self._last_k is not None and k <= self._last_k):
            return None, None
        if self._last_k is not None:
            self.dropped += k - self._last_k - 1
        self._last_k = k
        t_s = self.timing.first_row_mid_s(k)
        return self._render(t_s), t_s

    def _render(self, t_s):
        """The uint8 frame of the scene at t_s (None: now): the noise frame clip(bank + blobs) as uint8. Only the blobs' patches
        are computed in floating point (the rest is the bank's frame, clipped once): the same
        pixels as rendering the whole frame in float64 (tests/test_camera_sim_patches.py), without its ~7 MB
        of traffic a frame, which evicted the unit's own data from the CPU's caches."""
        m = self.model
        k, shift = self._draw_noise()
        img = np.roll(self._bank_u8[k], shift, axis=1)
        patches = []
        for u, v, r_px in self._blobs(t_s):
            p = self._patch(u, v, r_px, img.shape)
            if p is None:
                continue
            y0, y1, x0, x1, g = p
            new = ~self._touched[y0:y1, x0:x1]
            if new.any():
                # the float frame under this patch where no earlier blob was: the bank's, shifted
                cols = (np.arange(x0, x1) - shift) % m.width
                base = self._bank[k][y0:y1][:, cols]
                w = self._work[y0:y1, x0:x1]
                w[new] = base[new]
                self._touched[y0:y1, x0:x1] = True
            self._work[y0:y1, x0:x1] += 230.0 * g
            patches.append((y0, y1, x0, x1))
        for y0, y1, x0, x1 in patches:
            img[y0:y1, x0:x1] = np.clip(self._work[y0:y1, x0:x1], 0, 255).astype(np.uint8)
            self._touched[y0:y1, x0:x1] = False
        self.frames += 1
        return img

    def _blobs(self, t_s=None):
        """(u, v, r_px) of the markers drawn this frame (occlusion drawn); sets truth_uv. With
        t_s (the first row's time) each marker where the body was when its row was exposed."""
        m = self.model
        if self.scene is None:
            pts = {}
        elif t_s is None:
            pts = self.scene()
        else:
            pts = self.scene(t_s)
        names = list(pts)
        self.truth_uv = {}
        out = []
        if names:
            P = np.array([pts[n] for n in names], float)
            uv, z = m.project(P)
            if t_s is not None and self.timing.readout_s > 0:
                # rolling shutter: row v seen at t_s + v line_s; the scene at the first and the
                # last row's time, each marker blended by the row it lands on (readout << motion)
                last = self.scene(t_s + self.timing.readout_s)
                P1 = np.array([last[n] for n in names], float)
                a = np.clip(uv[:, 1] / float(m.height), 0.0, 1.0)
                a = np.where(np.isfinite(a), a, 0.0)
                P = P + a[:, None] * (P1 - P)
                uv, z = m.project(P)
            occl = self.rng.random(len(names)) < self.occlusion
            for k, n in enumerate(names):
                if z[k] <= 0.05 or occl[k]:
                    continue
                r_px = max(1.2, m.fx * self.r_m / z[k])
                u, v = uv[k]
                if not (-r_px < u < m.width + r_px and -r_px < v < m.height + r_px):
                    continue
                out.append((u, v, r_px))
                if 0 <= u <= m.width - 1 and 0 <= v <= m.height - 1:
                    self.truth_uv[n] = (float(u), float(v))
        return out

    @staticmethod
    def _patch(u, v, r_px, shape):
        """(y0, y1, x0, x1, g): a blob's patch and its Gaussian, or None (off the image)."""
        h, w = shape
        s = 3 * r_px
        x0, x1 = max(0, int(u - s)), min(w, int(u + s) + 2)
        y0, y1 = max(0, int(v - s)), min(h, int(v + s) + 2)
        if x0 >= x1 or y0 >= y1:
            return None
        xs = np.arange(x0, x1) - u
        ys = np.arange(y0, y1) - v
        sig = r_px / 1.5
        # g = exp(-(x^2 + y^2) / (2 sigma^2)), sigma = r / 1.5
        g = np.exp(-(ys[:, None] ** 2 + xs[None, :] ** 2) / (2 * sig * sig))
        return y0, y1, x0, x1, g

    def close(self):
        pass
