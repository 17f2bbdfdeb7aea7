"""The robot's kinematic body for pose retargeting: its MuJoCo model, limits, segments and signs.

    from host.retarget.robotmodel import robot_body
    body = robot_body("op3-dynamixel")       # or "so101-feetech"; FormatError for one without a model
    body.model, body.servos                  # mujoco.MjModel with the description's joint limits
    body.to_model_rad(servo_deg)             # (..., nservo) servo degrees -> joint radians
    body.points                              # {"l_knee": ("body", "l_knee_link"), ...}

The models are the published ones in ../shared/data/robots (OP3 from MuJoCo Menagerie, SO-101
from LeRobot), or host.physics.models when the physics twin carries them. The OP3 model has no
joint limits: the description's are applied (converted to the model's sign). Sign: the servo
degrees of the description (device/servo/robots/*.json, whose "human" map says what each
positive angle does) against the model's joint axes: model_rad = sign * radians(servo_deg).
The sign is the physics twin's (host.physics.models.MODELS): -1 for every OP3 joint (its
description counts flexion the other way from the Menagerie axes: r_knee 0..140 deg is flexion,
the model's +r_knee extends), +1 for the SO-101.
"""

import os

import numpy as np

from protocol.errors import FormatError

_REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# ../shared/data/robots next to the repository (a clone in /work/main, or a worktree one deeper)
SHARED_CANDIDATES = [os.path.join(_REPO, *([".."] * k), "shared", "data", "robots") for k in (1, 2)]
SHARED = SHARED_CANDIDATES[0]

SPECS = {
    "op3-dynamixel": {
        "model": ("robotis_op3", "scene.xml"), "humanoid": True, "torso": "body_link",
        "sign": -1.0,
        # robot points: a body's origin, or a site added at pos in a body's frame
        "points": {
            "l_hip": ("body", "l_hip_pitch_link"), "r_hip": ("body", "r_hip_pitch_link"),
            "l_knee": ("body", "l_knee_link"), "r_knee": ("body", "r_knee_link"),
            "l_ankle": ("body", "l_ank_pitch_link"), "r_ankle": ("body", "r_ank_pitch_link"),
            "l_shoulder": ("body", "l_sho_roll_link"), "r_shoulder": ("body", "r_sho_roll_link"),
            "l_elbow": ("body", "l_el_link"), "r_elbow": ("body", "r_el_link"),
            "l_wrist": ("site", "l_el_link", (0.0, 0.146, -0.005)),
            "r_wrist": ("site", "r_el_link", (0.0, -0.146, -0.005)),
            "neck": ("site", "body_link", (0.0, 0.0, 0.11)),
            # sole centres (the foot boxes' centre, on the sole plane)
            "l_sole": ("site", "l_ank_roll_link", (0.024, 0.0125, -0.0305)),
            "r_sole": ("site", "r_ank_roll_link", (0.024, -0.0125, -0.0305)),
        },
        "feet": {"l": "l_ank_roll_link", "r": "r_ank_roll_link"},
        "sole_half_m": (0.057, 0.039),
        "segments": ("trunk", "l_thigh", "r_thigh", "l_shank", "r_shank", "l_foot", "r_foot",
                     "l_upper_arm", "r_upper_arm", "l_forearm", "r_forearm"),
        # self-collision pairs the IK keeps apart: (subtree root, subtree root[, margin m]); an
        # elbow keeps 25 mm from its leg and 15 mm from the torso: the player's limiter (its
        # acceleration bound) and the servos' lag carry the arm a few degrees past the plan,
        # 5-10 mm at the elbow (measured on dataset-2_run: at 4 mm the played commands touched in
        # 35 frames, up to 10 mm deep; live, benchmarks/robot_live.py, 26 staffs: the elbow at 15
        # mm from its leg and 4 mm from the torso 55 frames, the torso's at 15 mm 12 (the kick's
        # 12 into the torso gone), the leg's at 25 mm: see docs/benchmarks/robot_live.txt)
        "floor": False,
        "collide": (("l_hip_roll_link", "r_hip_roll_link"), ("l_sho_roll_link", "body_link"),
                    ("r_sho_roll_link", "body_link"), ("l_el_link", "l_hip_yaw_link", 0.025),
                    ("r_el_link", "r_hip_yaw_link", 0.025),
                    (("l_el_link",), ("body_link",), 0.015), (("r_el_link",), ("body_link",), 0.015),
                    # a knee bent to its stop brings the ankle up to its own hip (131_01 at 6.4 s)
                    (("l_hip_roll_link", "l_hip_pitch_link"), "l_ank_pitch_link"),
                    (("r_hip_roll_link", "r_hip_pitch_link"), "r_ank_pitch_link"),
                    # a thigh raised high under a bowed torso (the Bandai dance at 41.2 s: the
                    # hip at 120 deg, the torso 25 deg forward) meets the torso's box
                    (("l_hip_pitch_link",), ("body_link",)), (("r_hip_pitch_link",), ("body_link",))),
    },
    "so101-feetech": {
        "model": ("so101", "so101_new_calib.xml"), "humanoid": False, "torso": None,
        "sign": 1.0,
        "points": {
            "r_shoulder": ("body", "upper_arm"), "r_elbow": ("body", "lower_arm"),
            "r_wrist": ("body", "wrist"), "r_hand_tip": ("site", "gripper", (-0.0079, -0.0002, -0.0981)),
        },
        "feet": {}, "sole_half_m": None,
        "segments": ("r_upper_arm", "r_forearm", "r_hand"),
        # the person's arm hanging down is the arm pointing forward (-90 deg about Y), raised
        # forward is up: the arm stands on a table in front of the person's shoulder
        "mount": ((0.0, 0.0, -1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0)),
        # the arm stands on the table (the twin's floor plane, z = 0): the forearm, wrist and
        # gripper keep 20 mm above it (the arm droops under its weight: the STS3215s' give at
        # 0.3 m), 10 mm off the shoulder and base (a tuple: those bodies' own geoms; a name:
        # its subtree), pushed back out at 5 mm/s once inside (pose.solve_frames).
        # Without them a person's arm swung back drove the gripper into the table and the
        # shoulder (Sample_Jump2: 285 self-collision frames, tracking RMS 30.9 deg)
        "floor": True,
        "collide": (("lower_arm", "floor", 0.02, -0.005),
                    (("lower_arm", "wrist", "gripper", "moving_jaw_so101_v1"), ("shoulder", "base"), 0.01, -0.005),
                    (("wrist", "gripper", "moving_jaw_so101_v1"), ("upper_arm",), 0.01, -0.005)),
    },
}


def model_path(robot_name):
    spec = SPECS.get(robot_name)
    if spec is None:
        raise FormatError("robot %s: no physics model for pose retargeting (models: %s)"
                          % (robot_name, ", ".join(sorted(SPECS))))
    d, f = spec["model"]
    try:
        from host.physics import models as pm           # the physics twin's copy, when present
        got = pm.model_path(pm.MODELS[robot_name]["model"])
        if got and os.path.exists(got):
            return got
    except (ImportError, KeyError, AttributeError):
        pass
    for base in [os.path.join(_REPO, "host", "physics", "models")] + SHARED_CANDIDATES:
        p = os.path.join(base, d, f)
        if os.path.exists(p):
            return os.path.abspath(p)
    raise FormatError("robot %s: its model %s/%s is not in host/physics/models or %s"
                      % (robot_name, d, f, os.path.abspath(SHARED)))


class RobotBody:
    """A robot description, its MuJoCo model with the description's limits, and its segments."""

    def __init__(self, robot_name):
        import mujoco
        from device.servo.robot import load_robot
        self.robot = load_robot(robot_name)
        self.name = robot_name
        self.spec = SPECS[robot_name] if robot_name in SPECS else None
        path = model_path(robot_name)
        try:
            ms = mujoco.MjSpec.from_file(path)
        except Exception as e:
            raise FormatError("%s: the robot model does not load (%s)" % (path, str(e).splitlines()[0]))
        sp = self.spec
        self.servos = self.robot.servos
        self.servo_names = [s.name for s in self.servos]
        sign = sp["sign"]
        try:
            from host.physics.models import MODELS
            sign = float(MODELS[robot_name]["sign"])
        except (ImportError, KeyError):
            pass
        self.sign = np.full(len(self.servo_names), sign)
        for k, s in enumerate(self.servos):
            j = ms.joint(s.name)
            if j is None:
                raise FormatError("robot %s: servo %s has no joint in %s" % (robot_name, s.name, path))
            a, b = sorted((self.sign[k] * np.radians(s.lo_deg), self.sign[k] * np.radians(s.hi_deg)))
            if j.limited == mujoco.mjtLimited.mjLIMITED_TRUE or j.range[0] < j.range[1]:
                # the mechanism's own stops where they are tighter (as the twin has them: an
                # SO-101 elbow stops at 96.8 deg, its description says 100)
                a, b = max(a, j.range[0]), min(b, j.range[1])
            j.range = [a, b]
            j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
        if sp.get("floor"):
            # the twin's table (host/physics/models.py _add_floor): a plane at z = 0
            ms.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05])
        for key, p in sp["points"].items():
            if p[0] == "site":
                body = ms.body(p[1])
                body.add_site(name="rt_" + key, pos=list(p[2]))
        self.model = ms.compile()
        self.points = {k: (("site", "rt_" + k) if p[0] == "site" else ("body", p[1]))
                       for k, p in sp["points"].items()}
        m = self.model
        self.qadr = np.array([m.joint(n).qposadr[0] for n in self.servo_names])
        self.dadr = np.array([m.joint(n).dofadr[0] for n in self.servo_names])
        self.lo_deg = np.array([s.lo_deg for s in self.servos])
        self.hi_deg = np.array([s.hi_deg for s in self.servos])
        self.home_deg = np.array([s.home_deg for s in self.servos])
        self.vmax_dps = np.array([s.max_vel_dps for s in self.servos])
        self.floating = m.njnt > 0 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
        self.humanoid = bool(sp["humanoid"])

    def to_model_rad(self, servo_deg):
        return np.radians(np.asarray(servo_deg, float)) * self.sign

    def to_servo_deg(self, model_rad):
        return np.degrees(np.asarray(model_rad, float)) * self.sign

    def qpos_home(self):
        """The model's qpos at the description's home angles (standing on the floor for OP3)."""
        q = self.model.qpos0.copy()
        q[self.qadr] = self.to_model_rad(self.home_deg)
        return q

    def point_pos(self, data, key):
        kind, name = self.points[key]
        if kind == "site":
            return data.site_xpos[self.model.site(name).id]
        return data.xpos[self.model.body(name).id]


_CACHE = {}


def robot_body(robot_name):
    """RobotBody for a built-in robot (cached; the model is read-only to callers)."""
    name = getattr(robot_name, "name", robot_name)
    if name not in _CACHE:
        if name not in SPECS:
            raise FormatError("robot %s: no physics model for pose retargeting (models: %s)"
                              % (name, ", ".join(sorted(SPECS))))
        _CACHE[name] = RobotBody(name)
    return _CACHE[name]
