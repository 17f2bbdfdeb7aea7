"""Forward kinematics speed: one hour of the 48-dof human model at 30 fps.

    python benchmarks/kinematics.py            # prints a table (Markdown)

The anchor is scipy's Rotation composing the same chain link by link (what a user would write
with the standard library of rotations), measured on the same frames in the same run.
"""

import sys
import time

import numpy as np
from scipy.spatial.transform import Rotation

from device.body.human import human_model
from device.body.kinematics import forward_kinematics


def scipy_fk(sk, q):
    """The same kinematics with scipy Rotation objects (the anchor)."""
    qs = q * sk.scales
    F = q.shape[0]
    rots, pos = [], []
    for ln in sk.links:
        if ln.parent < 0:
            r = Rotation.identity(F)
            p = np.broadcast_to(ln.offset, (F, 3)).copy()
        else:
            r = rots[ln.parent]
            p = pos[ln.parent] + r.apply(ln.offset)
        for j in ln.dofs:
            d = sk.dofs[j]
            if d.kind == "rotation":
                r = r * Rotation.from_rotvec(np.outer(qs[:, j], d.axis))
            else:
                p = p + r.apply(d.axis) * qs[:, j][:, None]
        rots.append(r)
        pos.append(p)
    return np.stack(pos, axis=1)


def main(seconds=3600, fps=30):
    sk = human_model()
    F = int(seconds * fps)
    rng = np.random.default_rng(0)
    q = rng.uniform(sk.lo, sk.hi, (F, sk.ndof))
    t0 = time.perf_counter()
    pose = forward_kinematics(sk, q)
    t_ours = time.perf_counter() - t0
    t0 = time.perf_counter()
    ref = scipy_fk(sk, q)
    t_scipy = time.perf_counter() - t0
    err_m = float(np.abs(ref - pose.link_pos_m).max())
    print("| forward kinematics, %d frames (%.0f s at %d fps), %d dofs, %d links | seconds | frames/s |"
          % (F, seconds, fps, sk.ndof, sk.nlinks))
    print("|---|---:|---:|")
    print("| motionstaff `forward_kinematics` (numpy, vectorised) | %.2f | %.0f |" % (t_ours, F / t_ours))
    print("| anchor: scipy `Rotation` chain | %.2f | %.0f |" % (t_scipy, F / t_scipy))
    print("\nlargest difference between the two: %.2e m; goal: under 10 s for the hour" % err_m)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 3600)
