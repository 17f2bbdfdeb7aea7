"""Branch recovery for a model estimator that left the fused orientations' branch, in a
bounded amount of work per frame.

    from device.capture.branch import BranchCheck
    check = BranchCheck(skeleton, rate_hz=30.0)
    q = check(estimator, obs, q)      # obs.orient {sensor: (3, 3) world rotation}; q (ndof,) dof
    check.resets                      # how often the filter was restarted

At an Euler shoulder's gimbal lock (abduction 90 deg: flexion and rotation share an axis) only
their difference is observed; the filter may slide along the other combination and come out on
a wrong branch (05_20-daz: 20 deg RMS). The test is each sensor's orientation residual (deg, the
fused orientation against the estimate's) above its own baseline b: a real body's sensors never
agree with any pose of the model exactly (soft tissue turns a sensor on its segment by 5-30 deg
as the joints move, the calibration stance is not the home pose, the fusion has offsets; the
honest subject: 15-35 deg at the TRUE pose on the arms), so absolute thresholds either never
fire or always do. b follows the residuals of frames that pass (time constant 1 s) and is reset
to the residuals the filter keeps when IK finds nothing better.

When some sensor is more than bad_deg above its baseline for `frames` frames, the filter is
restarted from IK on the fused orientations, solved from three seeds: the last agreeing pose and
the estimates 0.5 s and 1 s earlier, each with a weak pull to its seed (0.02 m/rad against the
orientations' 1 m/rad: near the lock the poses along the unobserved combination fit alike, and
the one nearest the seed is the one before the slide). Of the solutions that fit (every sensor
less than good_deg above its baseline, and a worst residual below the filter's) the one nearest
the oldest seed (before the slide) restarts the filter.

The unit has a quarter of a frame period for all its work, and a solve takes about 4 damped
least squares steps (~0.5 ms each on a PC, several times that on a Pi 4). So the solves start
at the first bad frame and run side by side, `iters_per_frame` steps a frame each, every step
against that frame's orientations (the solutions follow the moving body): by the frame the
check fires they have had `frames` x iters_per_frame steps and are the current frame's. Solves
that started on a frame that stayed alone are dropped after `frames` + 2 frames; the check
fires on the `frames`-th bad frame of the solves under way (never on fewer steps). A sensor that
drops out or comes back mid-recovery (or reads non-finite) changes the targets, not the solutions
so far: they go on from where they are against the sensors present.
"""

import numpy as np

from device.body.dynamics import model_of
from device.body.ik_batch import OrientationIKBatch


class _Solves:
    """The seeds' IK, side by side (device.body.ik_batch), and their current solutions (SI)."""

    def __init__(self, skeleton, names, seeds, ref, prior_weight, targets):
        self.skeleton, self.prior_weight = skeleton, prior_weight
        self.targets = targets    # names -> OrientationIKBatch (BranchCheck._targets)
        self.seeds = np.array(seeds)
        self.ref = ref.copy()
        self.Q = model_of(skeleton).to_si(self.seeds)
        self.use(names)
        self.age = 0              # frames since the first
        self.bad = 0              # frames above bad_deg since the first (the first included)
        self.steps = 0            # damped least squares steps each seed has had

    def use(self, names):
        """Targets for these sensors (a sensor dropped out or came back): the solutions so far
        (poses, whatever the sensors) go on from where they are."""
        self.names = list(names)
        self.ik = self.targets(self.names).with_prior(self.seeds)


class BranchCheck:
    def __init__(self, skeleton, rate_hz, bad_deg=12.0, good_deg=6.0, frames=2,
                 iters_per_frame=2, prior_weight=0.02):
        self.skeleton = skeleton
        self.rate_hz = float(rate_hz)
        self.bad_deg, self.good_deg, self.frames = bad_deg, good_deg, frames
        self.iters_per_frame = iters_per_frame
        self.prior_weight = prior_weight
        self.hist = []            # the filter's estimates of the last second (dof units)
        self.base_by = {}         # sensor -> baseline residual (deg)
        self.good_q = None        # the last estimate that agreed with the orientations
        self.bad = 0              # frames above bad_deg since the last good one
        self.solves = None        # _Solves under way
        self.resets = 0           # filter restarts
        self.iterations = 0       # IK steps taken in all (each solve's)
        self.most_in_a_frame = 0  # the most IK steps in one frame (all solves)
        self.fewest_at_fire = None  # the fewest steps a seed's solve had when the check fired
        self._by_names = {}       # tuple of sensor names -> OrientationIKBatch (their targets)

    def _targets(self, names):
        """The orientation targets of these sensors (built once per set of sensors present)."""
        key = tuple(names)
        ik = self._by_names.get(key)
        if ik is None:
            if len(self._by_names) > 64:          # sensors coming and going: keep it bounded
                self._by_names.clear()
            ik = self._by_names[key] = OrientationIKBatch(
                self.skeleton, list(names), self.skeleton.home, orientation_weight=1.0,
                prior_weight=self.prior_weight)
        return ik

    def _resid_deg(self, est, names, Rm, q_dof):
        """Each sensor's angle (deg) between its fused orientation Rm and the pose q's."""
        ik = self._targets(names)
        ik.set_orientations(Rm)
        return ik.residual_deg(est.model.to_si(q_dof)[None])[0]

    def __call__(self, est, obs, q):
        # the sensors with a usable rotation this frame: a non-finite one, or one that is no
        # rotation (|R'R - I| > 1e-3: a zero quaternion's), is a missing sensor
        names, Rm = [], []
        for n, R in obs.orient.items():
            if n in est.meas.index and R is not None and (
                    R.shape if isinstance(R, np.ndarray) else np.shape(R)) == (3, 3):
                names.append(n)
                Rm.append(R)
        if not names:
            return q
        Rm = np.array(Rm, float)
        # (all sensors at once) finite, R'R = I to 1e-3, det R > 0
        ok = np.isfinite(Rm).all(axis=(1, 2))
        Rm = np.where(ok[:, None, None], Rm, 0.0)
        ok &= np.abs(Rm.transpose(0, 2, 1) @ Rm - np.eye(3)).max(axis=(1, 2)) < 1e-3
        ok &= np.linalg.det(Rm) > 0.0
        if not ok.all():
            names = [n for n, o in zip(names, ok) if o]
            Rm = Rm[ok]
            if not names:
                return q
        self.hist.append(q.copy())
        del self.hist[:-int(1.0 * self.rate_hz) - 1]
        res = self._resid_deg(est, names, Rm, q)
        base = np.array([self.base_by.get(n, r) for n, r in zip(names, res)])
        excess = float((res - base).max())
        if excess < self.bad_deg:
            # b += (r - b) dt / 1 s (frames above good_deg pass too: a slow rise is the tissue's)
            a = min(1.0, 1.0 / self.rate_hz)
            self.base_by.update(zip(names, base + a * (res - base)))
        if excess < self.good_deg:
            self.good_q = q.copy()
            self.bad = 0
            self.solves = None
            return q
        if self.good_q is None:
            return q
        s = self.solves
        if s is not None and s.age > self.frames + 2:
            s = self.solves = None           # stale: started on a bad frame that stayed alone
        if s is not None and s.names != names:
            s.use(names)                     # a sensor dropped out or came back
        if excess > self.bad_deg:
            self.bad += 1
            if s is None:
                h = self.hist
                s = self.solves = _Solves(self.skeleton, names, (self.good_q, h[len(h) // 2], h[0]),
                                          h[0], self.prior_weight, self._targets)
            s.bad += 1
        if s is None:
            return q
        self._step(s, Rm)
        # fire on the frames-th bad frame of these solves (not of an earlier, dropped one: the
        # solutions must have had their frames x iters_per_frame steps)
        if s.bad < self.frames:
            return q
        # the check fires: the solutions that fit, the one nearest the oldest seed
        self.bad = 0
        self.solves = None
        self.fewest_at_fire = s.steps if self.fewest_at_fire is None else min(self.fewest_at_fire, s.steps)
        best = None
        r_ik = s.ik.residual_deg(s.Q)
        for k in range(len(s.Q)):
            if (r_ik[k] - base).max() < self.good_deg and r_ik[k].max() < res.max():
                q_ik = s.ik.model.from_si(s.Q[k])
                dist = float(np.sum(((q_ik - s.ref) / 180.0) ** 2))
                if best is None or dist < best[0]:
                    best = (dist, q_ik)
        if best is None:
            # nothing fits better than the filter: its residuals are the body's, not a branch
            self.base_by.update(zip(names, res))
            return q
        est.initialise(best[1], t_s=obs.t_s)
        self.resets += 1
        return est.q_dof

    def _step(self, s, Rm):
        """iters_per_frame damped least squares steps of every solve, on this frame's rotations."""
        s.age += 1
        s.ik.set_orientations(Rm)
        for _ in range(self.iters_per_frame):
            s.Q, _, _ = s.ik.iterate(s.Q)
            s.steps += 1
            self.iterations += len(s.Q)
        self.most_in_a_frame = max(self.most_in_a_frame, self.iters_per_frame * len(s.Q))
