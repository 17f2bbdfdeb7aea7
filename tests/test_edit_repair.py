"""Despike, fill and smooth on real BVH clips with injected spikes (1% of pixels) and gaps (5%
of frames): each measurably repairs the motion, and a still joint stays still."""

import numpy as np
import pytest

from host.bvh import read_bvh
from host.edit import despike, fill, smooth
from host.staff import Row, Staff

CLIPS = ["131_03.bvh", "05_20-daz.bvh", "dataset-1_dance-short_normal_001.bvh"]

# seed 6, measured (benchmarks/editing.py --repair prints the mean of seeds 6, 7, 8), each
# bound ~10% above: (despiked / corrupted, repaired / quantisation, clean despiked / quantisation)
BOUNDS = {
    ("131_03.bvh", "hampel"): (0.075, 3.2, 1.5),           # 0.053-0.066, 2.44-2.94x, 1.35x (fit grids differ)
    ("131_03.bvh", "isolated"): (0.09, 3.5, 3.0),          # 0.080, 3.17x, 2.74x (RThumb flips)
    ("05_20-daz.bvh", "hampel"): (0.09, 4.0, 1.15),        # 0.080, 3.64x, 1.02x
    ("05_20-daz.bvh", "isolated"): (0.045, 2.4, 1.55),     # 0.038, 2.14x, 1.40x
    ("dataset-1_dance-short_normal_001.bvh", "hampel"): (0.052, 2.5, 1.6),     # 0.046, 2.27x, 1.43x
    ("dataset-1_dance-short_normal_001.bvh", "isolated"): (0.045, 2.2, 1.75),  # 0.040, 2.00x, 1.58x
    ("dataset-1_kick_normal_001.bvh", "hampel"): (0.15, 8.0, 1.5),     # 0.137, 7.31x, 1.33x
    ("dataset-1_kick_normal_001.bvh", "isolated"): (0.045, 2.4, 1.55),  # 0.039, 2.14x, 1.41x
}


def corrupt(q, seed, spikes=0.01, gaps=0.05):
    """(corrupted copy, spike mask): random codes on `spikes` of pixels, `gaps` of frames missing."""
    rng = np.random.default_rng(seed)
    v = q.values.copy()
    sp = rng.random(v.shape) < spikes
    codes = rng.integers(0, 256, size=v.shape)
    v = np.where(sp, q.lo[:, None] + codes * (q.hi - q.lo)[:, None] / 255.0, v)
    gap = rng.choice(q.frames, size=int(round(gaps * q.frames)), replace=False)
    v[:, gap] = np.nan
    out = q.copy()
    out.values = v
    return out, sp


def rotation_rows(st):
    return [i for i, r in enumerate(st.rows) if r.unit == "deg"]


def rms(a, b, rows):
    d = a[rows] - b[rows]
    return float(np.sqrt(np.nanmean(d ** 2)))


@pytest.fixture(scope="module", params=CLIPS)
def clip(request, shared_data):
    st = read_bvh(str(shared_data / "bvh" / request.param))
    return request.param, st, st.quantised()


@pytest.mark.parametrize("method", ["hampel", "isolated"])
@pytest.mark.parametrize("name", CLIPS + ["dataset-1_kick_normal_001.bvh"])
def test_despike_then_fill_repairs_real_clip(name, method, shared_data):
    clean = read_bvh(str(shared_data / "bvh" / name))
    q = clean.quantised()
    bad, _ = corrupt(q, seed=6)
    rows = rotation_rows(clean)
    e_quant = rms(q.values, clean.values, rows)
    e_bad = rms(bad.values, clean.values, rows)            # over the pixels that are there
    ds = despike(bad, method)
    e_ds = rms(ds.values, clean.values, rows)
    assert np.array_equal(np.isnan(ds.values), np.isnan(bad.values))   # despike leaves gaps
    full = fill(ds, "cubic")
    assert not np.isnan(full.values).any()
    e_full = rms(full.values, clean.values, rows)
    e_clean = rms(despike(q, method).values, clean.values, rows)
    print("%s %s: quantisation %.4f deg, corrupted %.3f, despiked %.4f (%.3f), filled %.2fx, clean %.2fx"
          % (name, method, e_quant, e_bad, e_ds, e_ds / e_bad, e_full / e_quant, e_clean / e_quant))
    b_ds, b_full, b_clean = BOUNDS[(name, method)]
    assert e_ds < b_ds * e_bad
    assert e_full < b_full * e_quant
    # the clean clip through despike: the source's own one-frame glitches and Euler flips are
    # what the bound allows for (docs/editing.md)
    assert e_clean < b_clean * e_quant


def test_isolated_keeps_steps_and_flips_removes_spikes_and_pairs():
    t = np.arange(300)
    smooth_row = 40.0 * np.sin(2 * np.pi * t / 120.0)
    step = np.where(t < 150, -80.0, 85.0)                  # an Euler flip: jumps and stays
    step2 = np.where(t < 100, 0.0, np.where(t < 101, 45.0, 90.0))   # a two-frame transition
    v = np.vstack([smooth_row, step, step2, smooth_row.copy()])
    truth = v.copy()
    v[0, 50] += 60.0                      # a single spike
    v[0, [200, 201]] = [-90.0, 95.0]      # a pair of glitches
    v[3, 2] = 90.0                        # near the start
    v[1, 220] = 10.0                      # a spike on the step row, after the flip
    rows = [Row("r%d" % i, "deg", -100.0, 100.0, True) for i in range(4)]
    st = Staff(v, rows, fps=30.0).quantised()
    q = Staff(truth, rows, fps=30.0).quantised().values
    out, mask = despike(st, "isolated", return_mask=True)
    assert mask[0, [50, 200, 201]].all() and mask[3, 2] and mask[1, 220]
    assert not mask[1, 140:160].any() and not mask[2].any()             # the flip stays
    np.testing.assert_array_equal(out.values[1, 140:160], q[1, 140:160])
    np.testing.assert_array_equal(out.values[2], q[2])
    step_deg = 200.0 / 255
    assert np.max(np.abs(out.values[0] - truth[0])) < 2 * step_deg
    assert abs(out.values[1, 220] - 85.0) < step_deg


def test_fill_methods_repair_gaps(clip):
    name, clean, q = clip
    rng = np.random.default_rng(7)
    v = q.values.copy()
    v[:, rng.choice(q.frames, size=int(0.05 * q.frames), replace=False)] = np.nan
    holey = Staff(v, q.rows, q.fps, q.bits, q.skeleton)
    rows = rotation_rows(clean)
    e_quant = rms(q.values, clean.values, rows)
    # the baseline a player without fill would show: the last good value held
    held = v.copy()
    for f in range(1, q.frames):
        held[:, f] = np.where(np.isnan(held[:, f]), held[:, f - 1], held[:, f])
    e_hold = rms(held, clean.values, rows)
    for method in ("linear", "cubic", "spline", "pchip", "skeleton"):
        out = fill(holey, method)
        assert not np.isnan(out.values).any()
        assert np.array_equal(out.values[~np.isnan(v)], v[~np.isnan(v)])   # known pixels kept
        e = rms(out.values, clean.values, rows)
        print("%s fill:%s %.2fx quantisation (hold %.2fx)" % (name, method, e / e_quant, e_hold / e_quant))
        assert e < 0.7 * e_hold, method


def test_fill_max_gap_keeps_long_gaps():
    v = np.linspace(0.0, 10.0, 100)[None, :].copy()
    v[0, 10:13] = np.nan          # 3 frames
    v[0, 50:80] = np.nan          # 30 frames = 1 s
    st = Staff(v, [Row("a", "deg", 0.0, 10.0, True)], fps=30.0)
    out = fill(st, "linear", max_gap_s=0.5)
    assert not np.isnan(out.values[0, 10:13]).any()
    np.testing.assert_allclose(out.values[0, 10:13], np.linspace(0, 10, 100)[10:13])
    assert np.isnan(out.values[0, 50:80]).all()


def test_smooth_repairs_noise_and_keeps_gaps(clip):
    name, clean, q = clip
    rng = np.random.default_rng(8)
    rows = rotation_rows(clean)
    noisy = q.copy()
    noisy.values = q.values + rng.normal(0.0, 3.0, q.values.shape)      # 3 deg sensor noise
    noisy.values[:, 5] = np.nan
    e_noisy = rms(noisy.values, clean.values, rows)
    # measured 0.47-0.88 of the noisy error (real mocap has sharp features smoothing blurs)
    for method, kw in (("butter", {"cutoff_hz": min(10.0, q.fps / 3)}), ("gaussian", {"sigma_s": 1.2 / q.fps}),
                       ("savgol", {"window_s": 7 / q.fps})):
        out = smooth(noisy, method, **kw)
        assert np.isnan(out.values[:, 5]).all() and not np.isnan(np.delete(out.values, 5, axis=1)).any()
        assert rms(out.values, clean.values, rows) < 0.92 * e_noisy, method


def test_butterworth_cutoff_in_hertz_and_zero_phase():
    fps = 120.0
    t = np.arange(1200) / fps
    slow = 20.0 * np.sin(2 * np.pi * 1.0 * t)
    fast = 20.0 * np.sin(2 * np.pi * 25.0 * t)
    st = Staff(np.vstack([slow, fast]), [Row("slow", "deg", -30, 30, True), Row("fast", "deg", -30, 30, True)], fps=fps)
    out = smooth(st, "butter", cutoff_hz=6.0).values
    mid = slice(200, 1000)
    assert np.max(np.abs(out[0, mid] - slow[mid])) < 0.2      # passes, no lag (zero phase)
    assert np.max(np.abs(out[1, mid])) < 0.05                  # 25 Hz is gone
    # the same cutoff at 30 fps uses that staff's own rate
    st30 = Staff(slow[None, ::4], [Row("slow", "deg", -30, 30, True)], fps=30.0)
    assert np.max(np.abs(smooth(st30, "butter", cutoff_hz=6.0).values[0, 50:250] - slow[::4][50:250])) < 0.3


@pytest.mark.parametrize("op", ["despike", "median", "isolated", "fill", "butter", "gaussian", "savgol"])
def test_still_joint_stays_still(clip, op):
    name, clean, q = clip
    v = q.values.copy()
    r = rotation_rows(clean)[3]
    v[r] = q.values[r, 0]                        # one joint held still the whole clip
    st = Staff(v, q.rows, q.fps, q.bits, q.skeleton)
    bad, sp = corrupt(st, seed=9)
    bad.values[r] = np.where(np.isnan(bad.values[r]), np.nan, q.values[r, 0])   # still, with gaps
    still = Staff(bad.values, q.rows, q.fps, q.bits, q.skeleton)
    out = {"despike": lambda s: despike(s), "median": lambda s: despike(s, method="median"),
           "isolated": lambda s: despike(s, method="isolated"),
           "fill": lambda s: fill(s, "cubic"), "butter": lambda s: smooth(s, "butter", cutoff_hz=5),
           "gaussian": lambda s: smooth(s, "gaussian"), "savgol": lambda s: smooth(s, "savgol")}[op](still)
    row = out.values[r]
    ok = ~np.isnan(row)
    np.testing.assert_allclose(row[ok], q.values[r, 0], atol=1e-9)


@pytest.mark.parametrize("method", ["hampel", "isolated"])
def test_despike_removes_spikes_on_still_row_exactly(method):
    v = np.full((1, 200), 12.5)
    v[0, [20, 21, 100, 199]] = [80.0, -40.0, 60.0, 90.0]
    st = Staff(v, [Row("knee", "deg", -50.0, 100.0, True)], fps=30.0)
    out, mask = despike(st, method, return_mask=True)
    assert mask[0, [20, 21, 100]].all()
    np.testing.assert_allclose(out.values[0, :199], 12.5)


def test_bad_arguments_name_the_problem():
    st = Staff(np.zeros((1, 10)), [Row("a", "deg", -1, 1, True)], fps=30.0)
    from protocol.errors import FormatError
    with pytest.raises(FormatError, match="window"):
        despike(st, window=4)
    with pytest.raises(FormatError, match="cutoff"):
        smooth(st, "butter", cutoff_hz=15.0)
    with pytest.raises(FormatError, match="method"):
        fill(st, "magic")


# ---- despike:robust + fill:rotation (docs/editing.md "The repair chain") -------------------

ALL_CLIPS = ["05_20-daz.bvh", "05_20-mb.bvh", "131_01.bvh", "131_03.bvh",
             "dataset-1_dance-short_normal_001.bvh", "dataset-1_kick_normal_001.bvh",
             "dataset-1_run_normal_001.bvh", "dataset-1_walk_normal_001.bvh",
             "dataset-2_run_normal_001.bvh"]
# the repair goal (issue #6): repaired / quantisation RMS <= 2, the mean of the benchmark's seeds
# 6, 7, 8 (benchmarks/editing.py --repair): every clip with skeleton ranges, and the clips of
# fitted ranges where it is met (the others are listed in docs/editing.md with the reason)
GOAL = [(c, "skeleton") for c in ALL_CLIPS] + [("05_20-daz.bvh", "fit"),
                                              ("dataset-1_dance-short_normal_001.bvh", "fit")]


def repair_ratio(clean, seed):
    q = clean.quantised()
    rows = rotation_rows(clean)
    bad, _ = corrupt(q, seed)
    out = fill(despike(bad, "robust"), "rotation")
    assert not np.isnan(out.values).any()
    return rms(out.values, clean.values, rows) / rms(q.values, clean.values, rows)


@pytest.mark.parametrize("name,ranges", GOAL)
def test_robust_repair_meets_the_goal(name, ranges, shared_data):
    clean = read_bvh(str(shared_data / "bvh" / name), ranges=ranges)
    ratios = [repair_ratio(clean, seed) for seed in (6, 7, 8)]
    print("%s %s: %s" % (name, ranges, " ".join("%.2fx" % r for r in ratios)))
    assert np.mean(ratios) <= 2.0


# the clean clip through despike:robust, as a multiple of its quantisation RMS (measured + ~5%):
# the source's own one-frame glitches (05_20-mb LeftFoot, 3.03x), a 68-frame clip's toes (1.99x),
# a 24-frame clip's ends (1.14x); all others <= 1.31x
# (05_20-mb: 3.73x with the binary-grid fitted ranges of header version 3)
CLEAN_BOUND = {"fit": {"05_20-mb.bvh": 3.9, "dataset-2_run_normal_001.bvh": 2.1},
               "skeleton": {"dataset-1_run_normal_001.bvh": 1.2}}


@pytest.mark.parametrize("ranges", ["fit", "skeleton"])
@pytest.mark.parametrize("name", ALL_CLIPS)
def test_robust_leaves_clean_clip_alone(name, ranges, shared_data):
    clean = read_bvh(str(shared_data / "bvh" / name), ranges=ranges)
    q = clean.quantised()
    rows = rotation_rows(clean)
    out, mask = despike(q, "robust", return_mask=True)
    ratio = rms(out.values, clean.values, rows) / rms(q.values, clean.values, rows)
    print("%s %s: %.2fx, %d pixels changed" % (name, ranges, ratio, mask.sum()))
    assert ratio <= CLEAN_BOUND[ranges].get(name, 1.35)
    assert mask.mean() < 0.003                              # at most 0.3% of the pixels
    np.testing.assert_array_equal(out.values[~mask], q.values[~mask])


def _sines(seed, n_rows, frames, fps, amp, freq_hz, phase):
    """(values, rows): seeded sines (amplitude, frequency, phase drawn from the given ranges)
    on Euler-named rows, 3 to a joint."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames) / fps
    v = np.vstack([a * np.sin(2 * np.pi * f * t + p) for a, f, p in
                   zip(rng.uniform(*amp, n_rows), rng.uniform(*freq_hz, n_rows), rng.uniform(*phase, n_rows))])
    rows = [Row("J%d.%srotation" % (i // 3, "ZXY"[i % 3]), "deg", -100.0, 100.0, True)
            for i in range(n_rows)]
    return v, rows


def test_robust_changes_nothing_on_smooth_staff():
    v, rows = _sines(3, 12, 600, 60.0, (1, 90), (0.1, 2.0), (0, 6))
    st = Staff(v, rows, fps=60.0).quantised()
    out, mask = despike(st, "robust", return_mask=True)
    assert not mask.any()
    np.testing.assert_array_equal(out.values, st.values)


def test_robust_leaves_the_ends_of_a_cut_alone():
    """A cut ends mid-motion: its first and last frames are seen from one side only, and a
    line from one side misses a curving motion. Fast sines at 30 fps, cut at every phase,
    8-bit with fitted ranges (steps of a fraction of a degree): nothing changes."""
    v, rows = _sines(5, 24, 90, 30.0, (5, 90), (0.5, 2.5), (0, 6.3))
    st = Staff(v, rows, fps=30.0).refit("fit").quantised()
    for a in range(0, 30, 3):
        cut = Staff(st.values[:, a:a + 45], rows, fps=30.0).refit("fit").quantised()
        out, mask = despike(cut, "robust", return_mask=True)
        assert not mask.any(), (a, np.argwhere(mask)[:4])


def test_robust_leaves_the_ends_of_real_cuts_nearly_alone(shared_data):
    """20 seeded cuts of a real 120 fps clip: no end pixel changes (a step at the very end of
    a cut, a toe slap, cannot be told from a glitch there; the 30 fps walk keeps such steps on
    17 end pixels of 20 x 132 x 2, docs/editing.md)."""
    p = shared_data / "bvh" / "131_03.bvh"
    if not p.exists():
        pytest.skip("%s is absent" % p)
    q = read_bvh(p).quantised()
    rng = np.random.default_rng(0)
    ends = []
    for _ in range(20):
        a = int(rng.integers(0, q.frames - 40))
        b = int(rng.integers(a + 20, min(q.frames, a + 300)))
        cut = q.copy()
        cut.values = q.values[:, a:b].copy()
        out, mask = despike(cut, "robust", return_mask=True)
        ends += [(a, b, r, c) for r, c in np.argwhere(mask[:, [0, -1]])]
    # none with the decimal fitted ranges of header version 2; one (cut 79:103, row 20, last
    # frame) with the binary-grid ranges of version 3: at most 1 of 20 x 96 x 2
    assert len(ends) <= 1, ends


@pytest.mark.parametrize("method,before,bound", [("robust", 49, 5), ("hampel", 24, 5), ("isolated", 320, 25)])
def test_despike_on_a_clean_16_bit_clip_is_like_8_bit(shared_data, method, before, bound):
    """At 16 bits the staircase is 256 times finer, but a glitch is still a glitch: every
    method counts at least 8-bit steps, so the clean clip changes about as little as at 8 bits
    (`before`: pixels changed at 16 bits when the steps were the row's own)."""
    p = shared_data / "bvh" / "131_01.bvh"
    if not p.exists():
        pytest.skip("%s is absent" % p)
    counts = []
    for bits in (8, 16):
        q = read_bvh(p, bits=bits).quantised()
        _, mask = despike(q, method, return_mask=True)
        counts.append(int(mask.sum()))
    assert counts[0] <= bound and counts[1] <= bound < before, counts


def _flip_staff(bits=16):
    """A joint turning through its middle angle's +-90 deg: the importer's Euler angles flip
    (Z and Y jump by 180 deg) while the rotation moves smoothly."""
    from scipy.spatial.transform import Rotation
    from host.staff import unwrap_deg
    t = np.arange(240) / 120.0
    euler = np.stack([20 * np.sin(np.pi * t), 60 + 61 * t, 30 * np.cos(0.6 * np.pi * t)], axis=1)
    std = unwrap_deg(Rotation.from_euler("ZXY", euler, degrees=True).as_euler("ZXY", degrees=True).T,
                     [True] * 3)
    rows = [Row("J.%srotation" % a, "deg", -400.0, 400.0, True) for a in "ZXY"]
    return Staff(std, rows, fps=120.0, bits=bits)


def test_fill_rotation_fills_an_euler_flip_on_the_rotation():
    st = _flip_staff()
    truth = st.values.copy()
    k = int(np.flatnonzero(np.abs(np.diff(truth[0])) > 90)[0]) + 1        # first frame after it
    v = truth.copy()
    v[:, [k, 50]] = np.nan
    holey = Staff(v, st.rows, st.fps, st.bits)
    cub = fill(holey, "cubic").values
    rot = fill(holey, "rotation").values
    assert np.max(np.abs(cub[:, k] - truth[:, k])) > 30.0                  # across the flip
    np.testing.assert_allclose(rot[:, k], truth[:, k], atol=0.01)
    np.testing.assert_allclose(rot[:, 50], truth[:, 50], atol=0.01)        # smooth part as cubic
    np.testing.assert_array_equal(rot[~np.isnan(v)], v[~np.isnan(v)])     # known pixels kept


def test_robust_keeps_an_euler_flip_and_finds_a_spike_on_it():
    st = _flip_staff()
    truth = st.values.copy()
    k = int(np.flatnonzero(np.abs(np.diff(truth[0])) > 90)[0]) + 1
    out, mask = despike(st, "robust", return_mask=True)
    assert not mask.any()                                   # the flip is motion, kept exactly
    v = truth.copy()
    v[2, k] += 120.0                                        # a glitch on the flip frame
    v[0, 100] -= 40.0
    out, mask = despike(Staff(v, st.rows, st.fps, st.bits), "robust", return_mask=True)
    assert mask[2, k] and mask[0, 100] and mask.sum() == 2
    np.testing.assert_allclose(out.values[[2, 0], [k, 100]], truth[[2, 0], [k, 100]], atol=0.05)


@pytest.mark.parametrize("op", ["robust", "rotation"])
def test_still_joint_stays_still_robust(clip, op):
    name, clean, q = clip
    v = q.values.copy()
    r = rotation_rows(clean)[3]
    v[r] = q.values[r, 0]
    st = Staff(v, q.rows, q.fps, q.bits, q.skeleton)
    bad, sp = corrupt(st, seed=9)
    bad.values[r] = np.where(np.isnan(bad.values[r]), np.nan, q.values[r, 0])
    still = Staff(bad.values, q.rows, q.fps, q.bits, q.skeleton)
    out = despike(still, "robust") if op == "robust" else fill(despike(still, "robust"), "rotation")
    row = out.values[r]
    ok = ~np.isnan(row)
    np.testing.assert_allclose(row[ok], q.values[r, 0], atol=1e-9)


def test_robust_and_rotation_through_the_edit_grammar():
    from host.edit import apply_ops
    st = _flip_staff(bits=8)
    v = st.values.copy()
    v[1, 30] = v[1, 30] + 150.0
    v[:, 90] = np.nan
    out, notes = apply_ops(Staff(v, st.rows, st.fps, st.bits),
                           ["despike:robust,threshold=6", "fill:rotation"])
    assert not np.isnan(out.values).any() and notes == []
    assert abs(out.values[1, 30] - st.values[1, 30]) < 2.0


from hypothesis import given, settings, strategies as hst  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(seed=hst.integers(0, 10 ** 6), nspikes=hst.integers(0, 6), holes=hst.booleans())
def test_robust_finds_isolated_spikes_property(seed, nspikes, holes):
    """Smooth rows (quantised), spikes of 25-90% of the range on isolated pixels at least 5
    frames apart, with or without single missing pixels of a row's own: every spike is found,
    nothing else changes, the repair is within 3 steps and the missing pixels stay missing."""
    rng = np.random.default_rng(seed)
    F = 300
    t = np.arange(F) / 60.0
    v = np.vstack([a * np.sin(2 * np.pi * f * t + p) for a, f, p in
                   zip(rng.uniform(5, 80, 3), rng.uniform(0.1, 1.0, 3), rng.uniform(0, 6, 3))])
    rows = [Row("r%d" % i, "deg", -100.0, 100.0, True) for i in range(3)]
    q = Staff(v, rows, fps=60.0).quantised()
    bad = q.values.copy()
    slots = rng.choice(np.arange(3, F - 3, 6), size=nspikes, replace=False)
    rr = rng.integers(0, 3, nspikes)
    for r, f in zip(rr, slots):
        d = rng.uniform(50.0, 180.0) * rng.choice([-1, 1])
        up = np.clip(bad[r, f] + d, -100, 100)
        bad[r, f] = up if abs(up - bad[r, f]) > 50 else bad[r, f] - d
    truth_mask = bad != q.values
    if holes:                                   # missing pixels of one row, never next to a spike
        free = (np.arange(F)[None, :] % 6 == 0) & ~truth_mask
        free[:, :3] = free[:, -3:] = False
        bad[free & (rng.random(bad.shape) < 0.3)] = np.nan
    out, mask = despike(Staff(bad, rows, fps=60.0), "robust", return_mask=True)
    np.testing.assert_array_equal(mask, truth_mask)
    assert np.array_equal(np.isnan(out.values), np.isnan(bad))
    assert np.nanmax(np.abs(out.values - q.values)) <= 3 * 200.0 / 255


def test_joint_rotation_helpers_match_scipy_and_group_the_rows(shared_data):
    from scipy.spatial.transform import Rotation
    from host.edit._rotation import euler_groups, quat_from_euler
    rng = np.random.default_rng(4)
    ang = rng.uniform(-3.0, 3.0, (50, 3))
    for seq in ("ZXY", "ZYX", "XYZ", "YZX"):
        q = quat_from_euler(seq, ang)
        ref = Rotation.from_euler(seq, ang).as_quat()
        np.testing.assert_allclose(np.abs(np.sum(q * ref, axis=1)), 1.0, atol=1e-12)
    st = read_bvh(str(shared_data / "bvh" / "131_03.bvh"))
    groups = euler_groups(st)
    thumb = [g for g in groups if st.names[g.rows[0]].startswith("RThumb.")][0]
    assert [st.names[i] for i in thumb.rows] == ["RThumb.Zrotation", "RThumb.Xrotation",
                                                  "RThumb.Yrotation"] and thumb.seq == "ZXY"
    assert all(st.rows[i].unit == "deg" for g in groups for i in g.rows)
    # the built-in body: its shoulders, hips, spine... are intrinsic triples of basis axes
    from device.body.human import human_model
    sk = human_model()
    body = Staff(np.zeros((sk.ndof, 3)), [Row(d.name, d.unit, d.lo, d.hi, d.kind == "rotation")
                                          for d in sk.dofs], fps=30.0, skeleton=sk)
    names = [[body.names[i] for i in g.rows] for g in euler_groups(body)]
    assert ["l_shoulder_flex", "l_shoulder_abd", "l_shoulder_rot"] in names


def test_bad_numbers_in_despike_and_fill_options_exit_2_with_one_line(tmp_path, capsys):
    """QA: non-finite / negative / fractional options used to pass silently (threshold=inf,
    max_run=-1, max_gap=-1), were ignored by the method (despike:robust,window=9) or ended in a
    message naming nothing (max_gap=nan, window=nan)."""
    from host.cli import main
    from host.stafffile import write_staff
    from protocol.errors import FormatError
    rng = np.random.default_rng(3)
    st = Staff(np.cumsum(rng.normal(0, 1, (2, 40)), axis=1), [Row("a", "deg", -90, 90, True),
                                                             Row("b", "deg", -90, 90, True)], fps=30.0)
    src = tmp_path / "s.png"
    write_staff(str(src), st)
    for op, what in (("despike:robust,threshold=inf", "threshold"), ("despike:robust,threshold=-1", "threshold"),
                     ("despike:hampel,window=nan", "window"), ("despike:hampel,window=4.5", "window"),
                     ("despike:robust,window=9", "takes no window"), ("despike:isolated,protrude=2", "protrude"),
                     ("despike:median,threshold=3", "takes no threshold"),
                     ("despike:robust,max_run=-1", "max_run"), ("despike:hampel,max_run=1.5", "max_run"),
                     ("fill:rotation,max_gap=-1", "max_gap"), ("fill:rotation,max_gap=nan", "max_gap"),
                     ("fill:rotation,max_gap=inf", "max_gap")):
        assert main(["edit", str(src), str(tmp_path / "o.png"), op]) == 2, op
        err = capsys.readouterr().err
        assert err.startswith("motionstaff: ") and what in err and err.count("\n") == 1, (op, err)
    with pytest.raises(FormatError, match="max_gap"):
        fill(st, max_gap_s=float("nan"))
    assert main(["edit", str(src), str(tmp_path / "o.png"), "despike:robust,threshold=5,max_run=3",
                 "fill:rotation,max_gap=0.5"]) == 0
