"""What the browser viewer draws, computed in Python: FK segments per frame, as JSON; staff PNG.

    from host.view.data import body_json, staff_png
    doc = body_json(staff, name="walk.png")        # dict: fps, frames, segments, colours, widths
    png = staff_png(staff)                          # bytes: the staff as a grey image

segments: frames x shapes x 2 points x 3 (metres, Z up, relative to the body's first-frame
centre), flattened and rounded to 0.1 mm; `centre` per frame lets the view follow a travelling
body exactly as `render` does.
"""

import io

import numpy as np

from host.render.figure import Body


def body_json(staff, name="staff", shapes=None):
    b = Body(staff, shapes)
    centre, half = b.bounds()
    seg = b.segments - centre[0]
    return {
        "name": name,
        "fps": staff.fps,
        "frames": int(staff.frames),
        "rows": staff.names,
        "shapes": int(seg.shape[1]),
        "segments": np.round(seg, 4).ravel().tolist(),
        "centre": np.round(centre - centre[0], 4).ravel().tolist(),
        "half_m": round(float(half), 4),
        "floor_z": round(float(b.floor_z - centre[0][2]), 4),
        "colours": list(b.colours),
        "radius_m": [round(float(r), 4) for r in b.radius_m],
    }


def staff_png(staff, max_width=4000):
    """The staff as an 8-bit grey PNG (missing values magenta), at most max_width columns."""
    from PIL import Image
    span = staff.hi - staff.lo
    span[span == 0] = 1.0
    v = (staff.values - staff.lo[:, None]) / span[:, None]
    miss = np.isnan(v)
    g = np.clip(np.nan_to_num(v) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    rgb = np.repeat(g[:, :, None], 3, axis=2)
    rgb[miss] = (255, 0, 255)
    im = Image.fromarray(rgb, "RGB")
    if im.width > max_width:
        im = im.resize((max_width, im.height), Image.NEAREST)
    buf = io.BytesIO()
    im.save(buf, "PNG")
    return buf.getvalue()
