"""Rows coarsened while the 99th percentile of the decoded clip's point errors stays within an aim.

    from host.budget_percentile import coarsen_to_percentile
    lo, hi = coarsen_to_percentile(sk, values, lo, hi, bits, max_error_mm=0.23, aim_mm=0.1)

ACL reports the 99th percentile of its errors at points 3 cm from every bone against a
threshold. host/budget_measured.py's allocation holds every point within E and the aimed joint
codes (host/budget_rounding.py) then put few points over the aim; after them a row can often
take a coarser step and the percentile still hold. Here each coded row, the ones whose values
cost the most bits first (sum over frames of log2(1 + |second difference| / step)), tries the
grid step at or above g times its own (g = 2^(1/4), then 2^(1/8)); the joint codes are chosen
again and the trial kept where exact forward kinematics of the decoded clip has its 99th
percentile within the aim and every point within E (the bound the file states). On CMU 131_01
at 24 fps at 0.227 mm: 14,047 -> 13,912 bytes, p99 0.0979 -> 0.1000 mm (about a minute;
tools/acl_sizes.py); the 4 CMU clips at ACL's reporting 58,657 -> 58,151 bytes. A trial costs a choice of codes and a forward kinematics: about half a second a
200-frame clip of 96 rows, ROUNDS passes per factor at most.
"""

import numpy as np

from host.budget_rounding import joint_codes
from host.fkerror import SHELL_MM, point_errors_mm
from host.staff import decode, encode
from protocol import staffranges

GROWTH = (2 ** 0.25, 2 ** 0.125)
ROUNDS = 1
PERCENTILE = 99.0


def _decoded(sk, v, lo, hi, bits, max_error_mm, aim_mm, shell_mm):
    codes = joint_codes(sk, v, lo, hi, bits, max_error_mm, shell_mm, aim_mm=aim_mm)
    if codes is None:
        codes, _ = encode(v, lo, hi, bits)
    return point_errors_mm(sk, v, decode(codes, lo, hi, bits), shell_mm)


def coarsen_to_percentile(sk, values, lo, hi, bits, max_error_mm, aim_mm, shell_mm=SHELL_MM):
    """(lo, hi) per row, coarser where the decoded clip (codes aimed at aim_mm) keeps its 99th
    percentile within aim_mm and every point within max_error_mm; the given ones if they do not."""
    from host import budget

    v = np.asarray(values, dtype=np.float64)
    lo = np.asarray(lo, dtype=np.float64).copy()
    hi = np.asarray(hi, dtype=np.float64).copy()
    top = (1 << bits) - 1
    lo_v, hi_v = budget._half_spans(v)
    span = hi_v - lo_v
    steps = (hi - lo) / top

    def holds(e):
        return np.percentile(e, PERCENTILE) <= aim_mm * (1 - 1e-6) and e.max() <= max_error_mm * (1 - 1e-6)

    if not holds(_decoded(sk, v, lo, hi, bits, max_error_mm, aim_mm, shell_mm)):
        return lo, hi
    d2 = [np.diff(v[k], 2) if v.shape[1] > 2 else np.zeros(1) for k in range(len(steps))]
    for g in GROWTH:
        for _ in range(ROUNDS):
            order = sorted(range(len(steps)), key=lambda k: -np.log2(1.0 + np.abs(d2[k]) / max(steps[k], 1e-300)).sum())
            took = 0
            for k in order:
                if steps[k] <= 0 or steps[k] >= 1.5 * span[k]:
                    continue                      # one code already: nothing to save
                s2 = steps.copy()
                s2[k] = staffranges.step_up(steps[k] * g)
                lo2, hi2 = lo.copy(), hi.copy()
                r_lo, r_hi = budget.ranges_for(lo_v[k:k + 1], hi_v[k:k + 1], s2[k:k + 1], bits)
                lo2[k], hi2[k] = r_lo[0], r_hi[0]
                if holds(_decoded(sk, v, lo2, hi2, bits, max_error_mm, aim_mm, shell_mm)):
                    steps, lo, hi = s2, lo2, hi2
                    took += 1
            if not took:
                break
    return lo, hi
