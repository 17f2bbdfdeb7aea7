"""The camera twin renders only its blobs' patches in floating point, with the same pixels as the
whole-frame float64 rendering (reference() below: the twin's rendering before), frame for frame: overlapping
blobs, blobs cut by the image's edges, occlusion and the noise bank's shifts included."""

import numpy as np

from device.sensors.camera import CameraModel
from device.sensors.camera_sim import SimCamera


def reference(cam):
    """The same frame rendered the straightforward way: the whole frame in float64 (the noise
    frame shifted, every blob added, then clipped), drawing the camera's seeded numbers in the
    same order as SimCamera.capture()."""
    k, shift = cam._draw_noise()
    img = np.roll(cam._bank[k], shift, axis=1)
    for u, v, r_px in cam._blobs():
        p = cam._patch(u, v, r_px, img.shape)
        if p is not None:
            y0, y1, x0, x1, g = p
            img[y0:y1, x0:x1] += 230.0 * g
    cam.frames += 1
    t = cam.clock() if cam.clock is not None else cam.frames
    return np.clip(img, 0, 255).astype(np.uint8), t


def _scene(rng):
    pts = {}
    for k in range(40):
        pts["m%d" % k] = (rng.uniform(-0.3, 0.3), rng.uniform(-1.2, 1.2), rng.uniform(0.0, 1.9))
    # a cluster (overlapping blobs) and a marker near the edge of the view
    for k in range(5):
        pts["c%d" % k] = (0.0, 0.01 * k, 1.0 + 0.005 * k)
    pts["edge"] = (0.0, 1.45, 0.9)
    return pts


def test_patch_rendering_equals_the_whole_frame_rendering():
    model = CameraModel.looking_at((3.0, 0.0, 1.0), (0.0, 0.0, 0.9))
    rng = np.random.default_rng(5)
    scenes = [_scene(rng) for _ in range(25)]
    for seed in (1, 2):
        a = SimCamera(model, scene=iter(scenes).__next__, seed=seed, occlusion=0.2)
        b = SimCamera(model, scene=iter(scenes).__next__, seed=seed, occlusion=0.2)
        drawn = 0
        for _ in scenes:
            ia, ta = a.capture()
            ib, tb = reference(b)
            assert ia.dtype == np.uint8 and ia.shape == (model.height, model.width)
            np.testing.assert_array_equal(ia, ib)
            assert a.truth_uv == b.truth_uv and ta == tb
            drawn += len(a.truth_uv)
            assert not a._touched.any()                 # the scratch is clean for the next frame
        assert drawn > 500


def test_patch_rendering_equals_the_whole_frame_rendering_at_the_edges():
    """(review 7) no noise, every marker occluded, no markers, blobs off the image, behind the
    camera, at the lens (a patch over the whole frame), NaN positions, a saturated and a
    negative background: the same pixels as the whole-frame rendering."""
    model = CameraModel.looking_at((3.0, 0.0, 1.0), (0.0, 0.0, 0.9))
    scenes = [{}, {"a": (0.0, 0.0, 0.9)}, {"a": (2.93, 0.0, 1.0)}, {"a": (0.0, 50.0, 0.9)},
              {"a": (float("nan"), 0.0, 1.0)}, {"a": (4.0, 0.0, 1.0)},
              {"a": (0.0, 0.0, 0.9), "b": (0.0, 0.001, 0.9), "c": (2.9, 0.0, 1.0)},
              {"a": (0.0, 1.52, 0.9), "b": (0.0, -1.52, 0.9)}]
    for kw in [dict(noise_dn=0), dict(occlusion=1.0), dict(noise_dn=0, background_dn=0),
               dict(background_dn=250), dict(background_dn=-20), dict(occlusion=0.5)]:
        a = SimCamera(model, scene=iter(scenes * 2).__next__, seed=4, **kw)
        b = SimCamera(model, scene=iter(scenes * 2).__next__, seed=4, **kw)
        for _ in range(2 * len(scenes)):
            np.testing.assert_array_equal(a.capture()[0], reference(b)[0])
            assert a.truth_uv == b.truth_uv and not a._touched.any()
