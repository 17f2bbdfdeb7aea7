"""Bright-blob marker detection (numpy + scipy.ndimage), with predicted search windows.

    from device.sensors.markers import detect_blobs, find_markers
    blobs = detect_blobs(image, threshold=128)         # [(u, v, area_px, peak)] whole image
    found = find_markers(image, {"l_knee_m": (312.0, 240.5, 20.0)})   # estimator's windows
    found["l_knee_m"]                                  # (u, v) or None (occluded / not found)

A blob is a connected set of pixels above threshold (8-connectivity); its position is the
intensity-weighted centroid of (pixel - threshold), which is unbiased for symmetric blobs and
sub-pixel accurate. With predicted windows (u, v, radius_px), only each window is searched and
the blob nearest the prediction is taken, so a frame with many markers costs a few small crops.

With numba (the `fast` extra; MOTIONSTAFF_NUMBA=0 turns it off) the whole-image pass is one
compiled scan: threshold, 8-connected labelling by union-find, the per-blob sums, in raster
order like scipy.ndimage.label (0.3 ms for 640 x 480 instead of 6-10 ms);
tests/test_qa_user_bugs.py checks both paths give the same blobs.
"""

import math

import numpy as np

from device.body.dynamics_numba import available as _compiled, numba


def _scan(img, thr):
    """(area, tot, cu, cv, peak) per blob, blobs in raster order of their first pixel."""
    h, w = img.shape
    lab = np.zeros((h, w), np.int32)
    cap = h * w // 2 + 2
    parent = np.empty(cap, np.int32)
    py = np.empty(cap, np.int32)             # the foreground pixels, in raster order
    px = np.empty(cap, np.int32)
    m = 0
    nxt = 1
    for y in range(h):
        for x in range(w):
            if img[y, x] <= thr or m >= cap:
                continue
            best = 0
            # the four neighbours already visited (8-connectivity): W, NW, N, NE
            for dy, dx in ((0, -1), (-1, -1), (-1, 0), (-1, 1)):
                yy = y + dy
                xx = x + dx
                if yy < 0 or xx < 0 or xx >= w:
                    continue
                l = lab[yy, xx]
                if l == 0:
                    continue
                while parent[l] != l:
                    l = parent[l]
                if best == 0:
                    best = l
                elif l != best:
                    # union: the smaller label is the root
                    if l < best:
                        parent[best] = l
                        best = l
                    else:
                        parent[l] = best
            if best == 0:
                if nxt >= cap:
                    break
                parent[nxt] = nxt
                best = nxt
                nxt += 1
            lab[y, x] = best
            py[m] = y
            px[m] = x
            m += 1
    # final ids in raster order of each component's first pixel (as ndimage.label numbers them)
    ids = np.zeros(nxt, np.int32)
    n = 0
    area = np.zeros(nxt)
    tot = np.zeros(nxt)
    cu = np.zeros(nxt)
    cv = np.zeros(nxt)
    peak = np.zeros(nxt)
    for i in range(m):
        y = py[i]
        x = px[i]
        l = lab[y, x]
        while parent[l] != l:
            l = parent[l]
        if ids[l] == 0:
            n += 1
            ids[l] = n
        k = ids[l]
        v = float(img[y, x])
        wt = v - thr
        area[k] += 1.0
        tot[k] += wt
        cu[k] += wt * x
        cv[k] += wt * y
        if v > peak[k]:
            peak[k] = v
    return area[:n + 1], tot[:n + 1], cu[:n + 1], cv[:n + 1], peak[:n + 1]


if numba is not None:
    _scan = numba.njit(cache=True)(_scan)


def _label(mask):
    from scipy import ndimage
    return ndimage.label(mask, structure=np.ones((3, 3), int))


def detect_blobs(image, threshold=128, min_area=2, max_area=5000, offset=(0, 0), compiled=None):
    """Every bright blob: (u, v, area_px, peak) in image pixels (x right, y down).
    compiled: None (numba when available), True / False (tests)."""
    img = np.asarray(image)
    if (_compiled() if compiled is None else compiled) and img.ndim == 2 and img.size > 4096:
        area, tot, cu, cv, peak = _scan(np.ascontiguousarray(img), float(threshold))
        # the blobs kept, all at once (the same numbers as one by one)
        area, tot, cu, cv, peak = area[1:], tot[1:], cu[1:], cv[1:], peak[1:]
        keep = (area >= min_area) & (area <= max_area) & (tot > 0)
        if not keep.all():
            area, tot, cu, cv, peak = area[keep], tot[keep], cu[keep], cv[keep], peak[keep]
        us = (cu / tot + offset[0]).tolist()
        vs = (cv / tot + offset[1]).tolist()
        return list(zip(us, vs, area.astype(np.int64).tolist(), peak.astype(np.int64).tolist()))
    mask = img > threshold
    if not mask.any():
        return []
    lab, n = _label(mask)
    if n == 0:
        return []
    # per-label sums with bincount (one pass each): area, weight, weighted x and y, peak
    ys, xs = np.nonzero(mask)
    lb = lab[ys, xs]
    val = img[ys, xs].astype(float)
    w = val - threshold
    area = np.bincount(lb, minlength=n + 1)
    tot = np.bincount(lb, w, minlength=n + 1)
    cu = np.bincount(lb, w * xs, minlength=n + 1)
    cv = np.bincount(lb, w * ys, minlength=n + 1)
    peak = np.zeros(n + 1)
    np.maximum.at(peak, lb, val)
    out = []
    for k in range(1, n + 1):
        if min_area <= area[k] <= max_area and tot[k] > 0:
            out.append((cu[k] / tot[k] + offset[0], cv[k] / tot[k] + offset[1], int(area[k]), int(peak[k])))
    return out


def find_markers(image, predicted, threshold=128, min_radius_px=8.0, crop_below=8):
    """{name: (u, v) | None}: the blob nearest each predicted (u, v, radius_px) in its window.

    With fewer than crop_below windows each window is cropped and searched; with more, one
    labelling pass over the windows' bounding box is cheaper, and blobs are assigned to the
    nearest prediction within its radius (each blob to one marker at most)."""
    img = np.asarray(image)
    h, w = img.shape
    out = {}
    if len(predicted) >= crop_below:
        # one labelling pass over the windows' bounding box (padded by the largest blob radius
        # a window accepts, so a blob near its edge is whole): the rest of the image cannot
        # hold a blob any window takes
        names = list(predicted)
        W = np.array([predicted[n] for n in names], float)
        r = np.maximum(W[:, 2], min_radius_px)
        pad = float(min_radius_px)
        ok = np.isfinite(W).all(1)
        if not ok.any():
            return {n: None for n in names}
        Wk, rk = (W, r) if ok.all() else (W[ok], r[ok])
        # the windows' bounding box: (u, v) - r at its least, (u, v) + r at its most
        lo = (Wk[:, :2] - rk[:, None]).min(0).tolist()
        hi = (Wk[:, :2] + rk[:, None]).max(0).tolist()
        x0 = int(max(0, math.floor(lo[0] - pad)))
        x1 = int(min(w, math.ceil(hi[0] + pad) + 1))
        y0 = int(max(0, math.floor(lo[1] - pad)))
        y1 = int(min(h, math.ceil(hi[1] + pad) + 1))
        blobs = detect_blobs(img[y0:y1, x0:x1], threshold, offset=(x0, y0)) if x0 < x1 and y0 < y1 else []
        if not blobs:
            return {n: None for n in names}
        B = np.array([(b[0], b[1]) for b in blobs])
        # d2[i, j] = |window i - blob j|^2 (two (K, nb) differences: a sum over a last axis of
        # 2 is five times slower; the same numbers)
        du = W[:, 0, None] - B[None, :, 0]
        dv = W[:, 1, None] - B[None, :, 1]
        d2 = du * du + dv * dv
        r2 = r ** 2
        # each window's nearest blob at once (np.argmin per row: the first of equal distances),
        # then windows in order of that distance take their blob if it is inside and free
        jmin = d2.argmin(1)
        inside = (d2[np.arange(len(names)), jmin] <= r2).tolist()
        jl = jmin.tolist()
        Bl = B.tolist()
        taken = set()
        for i in np.argsort(d2.min(1)).tolist():
            j = jl[i]
            if inside[i] and j not in taken:
                taken.add(j)
                out[names[i]] = (Bl[j][0], Bl[j][1])
            else:
                out[names[i]] = None
        return out
    for name, (u, v, r) in predicted.items():
        r = max(float(r), min_radius_px)
        x0, x1 = max(0, int(u - r)), min(w, int(u + r) + 1)
        y0, y1 = max(0, int(v - r)), min(h, int(v + r) + 1)
        if x0 >= x1 or y0 >= y1:
            out[name] = None
            continue
        blobs = detect_blobs(img[y0:y1, x0:x1], threshold, offset=(x0, y0))
        if not blobs:
            out[name] = None
            continue
        d = [(b[0] - u) ** 2 + (b[1] - v) ** 2 for b in blobs]
        b = blobs[int(np.argmin(d))]
        out[name] = (b[0], b[1]) if min(d) <= r * r else None
    return out
