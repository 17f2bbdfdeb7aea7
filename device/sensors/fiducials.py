"""ArUco and AprilTag fiducials through OpenCV (opencv-python-headless, the `vision` extra).

    from device.sensors.fiducials import detect_fiducials
    tags = detect_fiducials(grey_image, "DICT_6X6_250")     # [(id, corners (4, 2))]
    tags = detect_fiducials(grey_image, "DICT_APRILTAG_36h11")

Corners are OpenCV's order: clockwise from the marker's top-left corner, in pixels (x right,
y down). cv2 is imported on first use, so the package imports without it.
"""

import numpy as np


def detect_fiducials(image, dictionary="DICT_6X6_250", refine=True):
    import cv2
    d = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, dictionary))
    params = cv2.aruco.DetectorParameters()
    if refine and dictionary.startswith("DICT_APRILTAG"):
        params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    corners, ids, _ = cv2.aruco.ArucoDetector(d, params).detectMarkers(np.asarray(image, np.uint8))
    if ids is None:
        return []
    return [(int(i), np.asarray(c, float).reshape(4, 2)) for i, c in zip(ids.ravel(), corners)]


def read_expected(path):
    """The expected detections of ../shared/data/markers/*.txt: [(id, corners (4, 2))]."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            head, rest = line.split(",", 1)
            nums = rest.replace("(", " ").replace(")", " ").replace(",", " ").split()
            out.append((int(head), np.array([float(x) for x in nums], float).reshape(4, 2)))
    return out


def corner_error_px(a, b):
    """Largest corner distance between two quads, over the 8 cyclic orders and directions."""
    best = np.inf
    for quad in (b, b[::-1]):
        for s in range(4):
            best = min(best, float(np.max(np.linalg.norm(a - np.roll(quad, s, 0), axis=1))))
    return best
