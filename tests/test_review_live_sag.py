"""Fresh-eyes review of the live retargeter's sag feed-forward and the support it follows
(host/retarget/live.py: LiveRetargeter._sag_now, _support): a clock that steps back in a held
lift, values that are not numbers, a lift and a landing together."""

import numpy as np

from host.retarget.live import LiveRetargeter
from tests.test_retarget_live import FPS, ROBOT, _held_lift


def _run(frames, names, times):
    lr = LiveRetargeter(ROBOT, names, fps=FPS)
    swing, u, out = [], [], []
    for k, v in enumerate(frames):
        out.append(lr.step(v, times(k)))
        swing.append(lr._swing["r"].v)
        u.append(lr._u_lin)
    return lr, np.array(swing), np.array(u), np.array(out)


def test_a_clock_that_steps_back_in_a_held_lift_still_moves_the_weight():
    # the right foot lifted from 1.5 s (frame 45); at frame 50 the frames' clock steps back
    # 5 s (a sender restarted: its 24-bit time unwrapped the wrong way): the lift's start
    # stayed in the old clock's future, so it never lasted LIFT_COMMIT_S: the weight never
    # moved, the foot was kept down for the whole lift, and nothing was listed infeasible
    _, names, frames = _held_lift()
    _, swing0, _, _ = _run(frames, names, lambda k: k / FPS)
    lr, swing, u, _ = _run(frames, names, lambda k: k / FPS - (5.0 if k >= 50 else 0.0))
    assert u.max() == 1.0 and abs(int(swing.sum()) - int(swing0.sum())) <= 1
    assert not swing[-1]


def test_a_clock_that_steps_back_mid_ramp_does_not_take_the_weight_back():
    # at frame 60 the weight is 40% across: it went back to the middle with the person on one foot
    _, names, frames = _held_lift()
    lr, swing, u, _ = _run(frames, names, lambda k: k / FPS - (5.0 if k >= 60 else 0.0))
    assert u.max() == 1.0 and swing.sum() > 30
    assert np.all(np.diff(u[:np.flatnonzero(swing)[0]]) >= -1e-12)      # the ramp only onward


def test_values_that_are_not_numbers_give_finite_commands_within_the_limits():
    _, names, frames = _held_lift()
    frames = [v.copy() for v in frames[:12]]
    frames[0][names.index("r_knee_flex")] = np.nan          # the very first frame
    frames[3][:] = np.inf
    frames[6][names.index("l_hip_flex")] = -np.inf
    frames[8][names.index("r_hip_flex")] = 1e308            # finite, absurd
    lr, _, _, out = _run(frames, names, lambda k: k / FPS)
    assert np.isfinite(out).all()
    assert np.all(out >= lr.body.lo_deg - 1e-9) and np.all(out <= lr.body.hi_deg + 1e-9)
