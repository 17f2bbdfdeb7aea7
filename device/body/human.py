"""The built-in human model of the invention: 23 links, 48 degrees of freedom.

    from device.body.human import human_model
    sk = human_model(mass_kg=75.0, height_m=1.75)
    sk.ndof, sk.nlinks          # 48, 23
    sk.total_mass               # 75.0

Z up, X forward, Y to the subject's left, fixed base at the mid-point of the hip joints; home
is the anatomical standing pose (arms hanging, palms facing the thighs). Head: three rotations
and one translation against the chest (through a rigid neck link); three rotations at each
shoulder and hip; two at each elbow, wrist, knee and ankle; fingers, thumbs and toes.

Segment masses, centres of mass and radii of gyration: de Leva P. (1996), "Adjustments to
Zatsiorsky-Seluyanov's segment inertia parameters", J. Biomechanics 29(9):1223-1230, Table 4
(males). Lengths scale with height over de Leva's reference stature of 1.741 m. De Leva gives
one head-and-neck segment, one hand and one foot; we split them as: neck 20 % / head 80 % of the
head mass; palm 60 %, fingers 30 %, thumb 10 % of the hand; foot 85 %, toes 15 % of the foot
(our assumption, stated here so it can be replaced).
"""

import numpy as np

from device.body.skeleton import Dof, Feature, Link, Skeleton

# de Leva (1996) Table 4, males: mass % of body, length m at 1.741 m stature,
# CoM % of length from the proximal end, radii of gyration % of length (sagittal, transverse, longitudinal)
DE_LEVA_MALE = {
    "head":      (6.94, 0.2033, 59.76, (36.2, 37.6, 31.2)),
    "upper_trunk": (15.96, 0.1707, 50.66, (50.5, 32.0, 46.5)),
    "mid_trunk": (16.33, 0.2155, 45.02, (48.2, 38.3, 46.8)),
    "lower_trunk": (11.17, 0.1457, 61.15, (61.5, 55.1, 58.7)),
    "upper_arm": (2.71, 0.2817, 57.72, (28.5, 26.9, 15.8)),
    "forearm":   (1.62, 0.2689, 45.74, (27.6, 26.5, 12.1)),
    "hand":      (0.61, 0.0862, 79.00, (62.8, 51.3, 40.1)),
    "thigh":     (14.16, 0.4222, 40.95, (32.9, 32.9, 14.9)),
    "shank":     (4.33, 0.4340, 44.59, (25.5, 24.9, 10.3)),
    "foot":      (1.37, 0.2581, 44.15, (25.7, 24.5, 12.4)),
}
REFERENCE_STATURE_M = 1.741

X = (1.0, 0.0, 0.0)
Y = (0.0, 1.0, 0.0)
Z = (0.0, 0.0, 1.0)


def _neg(a):
    return tuple(-v for v in a)


def _inertia(mass, length, radii_pct, longitudinal="z"):
    """Principal inertia of a segment: I = m (r L)^2; sagittal about Y, transverse about X."""
    sag, tra, lon = (mass * (r / 100.0 * length) ** 2 for r in radii_pct)
    if longitudinal == "z":
        return np.diag([tra, sag, lon])
    # a segment lying along X (the foot): longitudinal about X, transverse about Z
    return np.diag([lon, sag, tra])


def human_model(mass_kg=75.0, height_m=1.75, floating=False):
    """The 48-dof human body (see the module docstring).

    floating=True adds six root dofs first (root_tx, root_ty, root_tz in metres, then
    root_yaw, root_pitch, root_roll in degrees about Z, Y, X), so the pelvis can move in the
    world: 54 rows, the 48 joint rows after them.
    """
    s = height_m / REFERENCE_STATURE_M
    links, dofs, feats = [], [], []
    index = {}

    def seg(key, frac=1.0):
        pct, length, com_pct, radii = DE_LEVA_MALE[key]
        return mass_kg * pct / 100.0 * frac, length * s, com_pct / 100.0, radii

    def link(name, parent, offset, mass, com, inertia):
        index[name] = len(links)
        links.append(Link(name, -1 if parent is None else index[parent], offset, mass, com, inertia))

    def dof(name, lnk, axis, lo, hi, kind="rotation", unit="deg", mirror=None, msign=1):
        dofs.append(Dof(name, index[lnk], kind, axis, lo, hi, 0.0, unit, mirror, msign))

    thigh_m, thigh_l, thigh_c, thigh_r = seg("thigh")
    shank_m, shank_l, shank_c, shank_r = seg("shank")
    ankle_h = 0.039 * height_m          # lateral malleolus height (Winter's anthropometry)
    hip_z = thigh_l + shank_l + ankle_h
    hip_y = 0.0505 * height_m           # half the hip-joint spacing

    # trunk: lower (pelvis), middle (abdomen), upper (chest); de Leva's proximal end is cranial
    m, L, c, r = seg("lower_trunk")
    link("pelvis", None, (0.0, 0.0, hip_z), m, (0, 0, (1 - c) * L), _inertia(m, L, r))
    lower_L = L
    m, L, c, r = seg("mid_trunk")
    link("abdomen", "pelvis", (0, 0, lower_L), m, (0, 0, (1 - c) * L), _inertia(m, L, r))
    mid_L = L
    m, L, c, r = seg("upper_trunk")
    link("chest", "abdomen", (0, 0, mid_L), m, (0, 0, (1 - c) * L), _inertia(m, L, r))
    upper_L = L
    m, L, c, r = seg("head", 0.2)
    neck_L = 0.052 * height_m
    link("neck", "chest", (0, 0, upper_L + 0.02 * s), m, (0, 0, neck_L / 2),
         _inertia(m, neck_L, r))
    m, L, c, r = seg("head", 0.8)
    link("head", "neck", (0, 0, neck_L), m, (0.01 * s, 0, (1 - c) * L), _inertia(m, L, r))
    head_L = L

    for side, sy in (("l", 1.0), ("r", -1.0)):
        def nm(n):
            return "%s_%s" % (side, n)
        m, L, c, r = seg("upper_arm")
        link(nm("upper_arm"), "chest", (0, sy * 0.105 * height_m, upper_L - 0.01 * s), m,
             (0, 0, -c * L), _inertia(m, L, r))
        ua_L = L
        m, L, c, r = seg("forearm")
        link(nm("forearm"), nm("upper_arm"), (0, 0, -ua_L), m, (0, 0, -c * L), _inertia(m, L, r))
        fa_L = L
        m, L, c, r = seg("hand", 0.6)
        link(nm("hand"), nm("forearm"), (0, 0, -fa_L), m, (0, 0, -0.5 * L), _inertia(m, L, r))
        hand_L = L
        m, L, c, r = seg("hand", 0.3)
        link(nm("fingers"), nm("hand"), (0, 0, -hand_L), m, (0, 0, -0.045 * s),
             _inertia(m, 0.09 * s, r))
        m, L, c, r = seg("hand", 0.1)
        link(nm("thumb"), nm("hand"), (0.02 * s, -sy * 0.0 + sy * 0.0, -0.03 * s), m,
             (0.02 * s, 0, -0.02 * s), _inertia(m, 0.05 * s, r))
        link(nm("thigh"), "pelvis", (0, sy * hip_y, 0), thigh_m, (0, 0, -thigh_c * thigh_l),
             _inertia(thigh_m, thigh_l, thigh_r))
        link(nm("shank"), nm("thigh"), (0, 0, -thigh_l), shank_m, (0, 0, -shank_c * shank_l),
             _inertia(shank_m, shank_l, shank_r))
        m, L, c, r = seg("foot", 0.85)
        link(nm("foot"), nm("shank"), (0, 0, -shank_l), m, (0.35 * L - 0.05 * s, 0, -0.6 * ankle_h),
             _inertia(m, L, r, longitudinal="x"))
        foot_L = L
        m, L, c, r = seg("foot", 0.15)
        link(nm("toes"), nm("foot"), (0.72 * foot_L, 0, -ankle_h * 0.8), m, (0.025 * s, 0, 0),
             _inertia(m, 0.05 * s, r, longitudinal="x"))

    # -- degrees of freedom, in row order ------------------------------------------------------
    if floating:
        links[0].offset = np.zeros(3)
        dof("root_tx", "pelvis", X, -10.0, 10.0, kind="translation", unit="m")
        dof("root_ty", "pelvis", Y, -10.0, 10.0, kind="translation", unit="m")
        dof("root_tz", "pelvis", Z, 0.0, 3.0, kind="translation", unit="m")
        dof("root_yaw", "pelvis", Z, -180, 180, mirror="root_yaw", msign=-1)
        dof("root_pitch", "pelvis", Y, -90, 90)
        dof("root_roll", "pelvis", X, -180, 180, mirror="root_roll", msign=-1)
    dof("lumbar_flex", "abdomen", Y, -30, 60)
    dof("lumbar_lat", "abdomen", _neg(X), -25, 25, mirror="lumbar_lat", msign=-1)
    dof("lumbar_rot", "abdomen", Z, -30, 30, mirror="lumbar_rot", msign=-1)
    dof("thorax_flex", "chest", Y, -20, 40)
    dof("thorax_lat", "chest", _neg(X), -20, 20, mirror="thorax_lat", msign=-1)
    dof("thorax_rot", "chest", Z, -30, 30, mirror="thorax_rot", msign=-1)
    dof("head_flex", "head", Y, -60, 70)
    dof("head_lat", "head", _neg(X), -45, 45, mirror="head_lat", msign=-1)
    dof("head_rot", "head", Z, -80, 80, mirror="head_rot", msign=-1)
    dof("head_ext", "head", Z, -0.02, 0.03, kind="translation", unit="m")
    for side, sy in (("l", 1.0), ("r", -1.0)):
        o = "r" if side == "l" else "l"

        def d(name, lnk, axis, lo, hi, kind="rotation", unit="deg"):
            dof("%s_%s" % (side, name), "%s_%s" % (side, lnk), axis, lo, hi, kind, unit,
                mirror="%s_%s" % (o, name))
        abd = (sy, 0.0, 0.0)            # away from the midline
        inward = (0.0, 0.0, -sy)        # internal rotation about the long axis
        d("shoulder_flex", "upper_arm", _neg(Y), -60, 180)
        d("shoulder_abd", "upper_arm", abd, -30, 180)
        d("shoulder_rot", "upper_arm", inward, -90, 90)
        d("elbow_flex", "forearm", _neg(Y), 0, 150)
        d("elbow_pron", "forearm", inward, -90, 90)
        d("wrist_flex", "hand", (-sy, 0.0, 0.0), -70, 80)
        d("wrist_dev", "hand", _neg(Y), -30, 20)
        d("fingers_flex", "fingers", (-sy, 0.0, 0.0), -20, 100)
        d("fingers_spread", "fingers", _neg(Y), -10, 30)
        d("thumb_flex", "thumb", _neg(Y), -20, 80)
        d("thumb_abd", "thumb", abd, 0, 70)
    for side, sy in (("l", 1.0), ("r", -1.0)):
        o = "r" if side == "l" else "l"

        def d(name, lnk, axis, lo, hi):
            dof("%s_%s" % (side, name), "%s_%s" % (side, lnk), axis, lo, hi,
                mirror="%s_%s" % (o, name))
        d("hip_flex", "thigh", _neg(Y), -30, 125)
        d("hip_abd", "thigh", (sy, 0.0, 0.0), -30, 50)
        d("hip_rot", "thigh", (0.0, 0.0, -sy), -45, 45)
        d("knee_flex", "shank", Y, 0, 150)
        d("knee_rot", "shank", (0.0, 0.0, -sy), -30, 30)
        d("ankle_flex", "foot", _neg(Y), -50, 30)
        d("ankle_inv", "foot", (-sy, 0.0, 0.0), -25, 35)
        d("toes_flex", "toes", Y, -70, 40)

    # -- feature points: one IMU per major segment, markers on every link ------------------
    imu_at = {
        "pelvis": (-0.10 * s, 0, 0.05 * s), "abdomen": (-0.12 * s, 0, 0.10 * s),
        "chest": (0.10 * s, 0, 0.10 * s), "head": (0, 0, head_L * 0.9),
    }
    for side, sy in (("l", 1.0), ("r", -1.0)):
        imu_at.update({
            side + "_upper_arm": (0, sy * 0.045 * s, -0.12 * s),
            side + "_forearm": (0, sy * 0.035 * s, -0.15 * s),
            side + "_hand": (0, sy * 0.02 * s, -0.04 * s),
            side + "_thigh": (0.06 * s, sy * 0.05 * s, -0.2 * s),
            side + "_shank": (0.05 * s, 0, -0.2 * s),
            side + "_foot": (0.06 * s, 0, 0.0),
        })
    for ln_name, pos in imu_at.items():
        feats.append(Feature(ln_name + "_imu", index[ln_name], "imu", pos))
    for ln in links:
        # two markers on every link: one at its joint, one at its centre of mass, pushed to the skin
        out = np.array([0.06 * s, 0.0, 0.0]) if "foot" not in ln.name else np.array([0, 0, 0.04 * s])
        if ln.name.startswith("l_"):
            out = np.array([0.0, 0.05 * s, 0.0])
        elif ln.name.startswith("r_"):
            out = np.array([0.0, -0.05 * s, 0.0])
        feats.append(Feature(ln.name + "_m1", index[ln.name], "marker", out * 0.8))
        feats.append(Feature(ln.name + "_m2", index[ln.name], "marker", ln.com + out))
    if floating:
        dofs[2].home = hip_z
    return Skeleton(links, dofs, feats, name="human54-floating" if floating else "human48", gravity=(0.0, 0.0, -9.81),
                    meta={"source": "de Leva 1996 (males), motionstaff human48",
                          "mass_kg": mass_kg, "height_m": height_m})
