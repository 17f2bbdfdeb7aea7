"""device/capture/rot.py quat_to_mat: the one-product form equals the entry-by-entry formula."""

import numpy as np

from device.capture.rot import mat_to_quat, quat_to_mat


def _quat_to_mat_oracle(q):
    """quat_to_mat as it was: each entry from the normalised components."""
    q = np.asarray(q, float)
    q = q / np.linalg.norm(q, axis=-1, keepdims=True)
    w, x, y, z = np.moveaxis(q, -1, 0)
    R = np.empty(q.shape[:-1] + (3, 3))
    R[..., 0, 0] = 1 - 2 * (y * y + z * z)
    R[..., 0, 1] = 2 * (x * y - w * z)
    R[..., 0, 2] = 2 * (x * z + w * y)
    R[..., 1, 0] = 2 * (x * y + w * z)
    R[..., 1, 1] = 1 - 2 * (x * x + z * z)
    R[..., 1, 2] = 2 * (y * z - w * x)
    R[..., 2, 0] = 2 * (x * z - w * y)
    R[..., 2, 1] = 2 * (y * z + w * x)
    R[..., 2, 2] = 1 - 2 * (x * x + y * y)
    return R


def test_quat_to_mat_equals_the_entry_by_entry_formula():
    rng = np.random.default_rng(4)
    for shape in [(4,), (22, 4), (3, 5, 4), (0, 4)]:
        q = rng.normal(size=shape) * rng.uniform(0.5, 2.0, shape[:-1] + (1,))
        got, want = quat_to_mat(q), _quat_to_mat_oracle(q)
        assert got.shape == want.shape == shape[:-1] + (3, 3)
        assert np.array_equal(got, want)                 # the same numbers, not just close
    # axis-aligned quaternions (zero components) and a tuple input
    for q in [(1.0, 0.0, 0.0, 0.0), (0.0, 1.0, 0.0, 0.0), (0.5, 0.5, 0.5, 0.5), (0.0, 0.0, 0.0, -2.0)]:
        assert np.array_equal(quat_to_mat(q), _quat_to_mat_oracle(q))
    with np.errstate(invalid="ignore"):                  # a zero quaternion: NaN, as before
        assert np.isnan(quat_to_mat(np.zeros(4))).all() and np.isnan(_quat_to_mat_oracle(np.zeros(4))).all()
    R = quat_to_mat(rng.normal(size=(10, 4)))
    np.testing.assert_allclose(quat_to_mat(mat_to_quat(R)), R, atol=1e-12)
