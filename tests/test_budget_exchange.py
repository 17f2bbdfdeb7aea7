"""host/budget_exchange.py: exchange moves keep every link's linearised error within E and save bits.

On random problems (hypothesis): the steps it returns have a linearised error within E at every
link, and the estimated bits never grow; on the real short CMU clip, the measured budget with
the exchange writes a smaller file than without it, still within E by forward kinematics.
"""

import pathlib

import numpy as np
from hypothesis import given, settings, strategies as st

import host.budget_measured as bm
from host.budget_exchange import exchange
from host.bvh import read_bvh
from host.fkerror import point_errors_mm
from host.stafffile import encode_png
from protocol import staffranges

CLIP = pathlib.Path(__file__).resolve().parent.parent / "host" / "data" / "131_03_short.bvh"


def _problem(rng, K, L, F):
    """Rows of random walks, each moving a random set of links (J per row), and its tools."""
    v = np.cumsum(rng.normal(0, 1.0, (K, F)), axis=1)
    span = v.max(axis=1) - v.min(axis=1)
    J = []
    for k in range(K):
        idx = np.sort(rng.choice(L, size=int(rng.integers(1, L + 1)), replace=False))
        J.append((idx, rng.normal(0, 1.0, (F, len(idx), 4, 3))))

    def row_error(k, s):
        # rounding to a grid of step s (what a staff row's codes do)
        return np.round(v[k] / s) * s - v[k]

    def total(errs):
        E = np.zeros((F, L, 4, 3))
        for (idx, jk), e in zip(J, errs):
            E[:, idx] += jk * e[:, None, None, None]
        return E

    d2 = [np.diff(v[k], 2) for k in range(K)]

    def bits_at(k, s):
        return float(np.log2(1.0 + np.abs(d2[k]) / s).sum())

    return v, span, J, row_error, total, bits_at


def _worst(total, row_error, steps):
    E = total([row_error(k, s) for k, s in enumerate(steps)])
    return float(np.sqrt((E * E).sum(axis=-1)).max())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10 ** 6), st.integers(2, 6), st.integers(1, 4), st.integers(4, 30))
def test_exchange_stays_within_e_and_saves_bits(seed, K, L, F):
    rng = np.random.default_rng(seed)
    v, span, J, row_error, total, bits_at = _problem(rng, K, L, F)
    steps = np.array([staffranges.step_down(max(s, 1e-3) / 50.0) for s in span])
    e_mm = _worst(total, row_error, steps) * 1.05 + 1e-9
    now = steps.copy()

    def take(k, s):
        now[k] = s

    out = exchange(steps, span, 16, J, e_mm, row_error, lambda k, s: bits_at(k, now[k]) - bits_at(k, s), take, total)
    assert np.array_equal(now, out)
    assert _worst(total, row_error, out) <= e_mm
    assert sum(bits_at(k, s) for k, s in enumerate(out)) <= sum(bits_at(k, s) for k, s in enumerate(steps)) + 1e-9
    assert all(staffranges.index_of(s) is not None for s in out)        # still on the header's grid


def test_exchange_makes_the_real_clip_smaller_within_its_bound(monkeypatch):
    clip = read_bvh(CLIP)
    with_x = clip.refit("budget", max_error_mm=0.2, bits=16, bound="measured")
    monkeypatch.setattr(bm, "exchange", lambda steps, *a: steps)
    without = clip.refit("budget", max_error_mm=0.2, bits=16, bound="measured")
    assert len(encode_png(with_x, effort=1)) < len(encode_png(without, effort=1))
    assert point_errors_mm(clip.skeleton, clip.values, with_x.quantised().values).max() <= 0.2
