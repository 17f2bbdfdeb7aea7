"""MuJoCo models of the built-in robots, with the robot description's joint limits applied.

    from host.physics.models import load_robot
    rm = load_robot("op3-dynamixel")             # or "so101-feetech"; a description name or path
    rm.model                                     # mujoco.MjModel: limits applied, motor actuators
    rm.servo_names                               # the description's servo names (= staff rows)
    rm.joint_of["r_knee"], rm.actuator_of["r_knee"]   # MJCF joint / actuator name of a servo
    rm.qpos_deg(angles_deg)                      # servo degrees (dict or array) -> MJCF joint deg
    poses = rm.fk({"r_knee": 60.0}, ["r_ank_roll_link", "torso"])   # bodies or sites
    poses["torso"] -> (pos (3,) m, rot (3, 3) world-from-local)
    rm.com({"r_knee": 60.0})                     # whole-body centre of mass (3,) m
    rm.segments["l_shank"] -> "l_knee_link"      # body names per segment (see SEGMENTS)
    rm.foot_geoms["l"] -> [geom ids]             # floor contacts of each foot (humanoids)
    rm.standing_height_m                         # torso height standing on the zero pose (m)

Stable API (other modules build on it): load_robot(name) -> RobotModel with the attributes
and methods above, plus .description (device.servo.robot.Robot), .servos (its Servo list),
.sign[servo] (MJCF joint deg = sign * servo deg), .lo_deg/.hi_deg[servo] (servo degrees),
.floating (a free root joint), .root_qpos0 (7 floats for a floating root), .units_to_qpos_rad
(servo, units) and .qpos_rad_to_units(servo, rad) (the physical units <-> joint angle of the
real servo), .humanoid (bool), .model_path.

Angles everywhere in this API are the robot description's *servo degrees* (what a staff row
of the robot holds); .qpos_deg turns them into MJCF joint angles.  For the OP3 the ROBOTIS
convention holds: joint angle = (Dynamixel position - 2048) * 360 / 4096 in the MJCF's sense
(ROBOTIS ini_pose: r_knee -142 deg is the bent knee); the description's degrees are the
opposite sign (its direction -1), so sign = -1 for every OP3 joint.  For the SO-101 the LeRobot
"new_calib" MJCF has the STS3215's 2048 at joint zero, same sense (sign +1).

The OP3 MJCF (MuJoCo Menagerie robotis_op3, Apache-2.0, LICENSE beside it) is package data;
the SO-101 (LeRobot, Apache-2.0, 16 MB of STL) is read from ../shared/data/robots/so101/ (or
$MOTIONSTAFF_ROBOT_MODELS/so101): a robot with no model is a one-line ValueError.
The MJCF's ideal position actuators are replaced by torque motors (ctrl = N m, range the
servo's stall torque, .servo_spec), which host.physics.servo drives each step; the joints'
damping loses the motor's back-EMF part (the servo model adds it while torque is on).
"""

import os

import numpy as np

from device.servo.robot import load_robot as load_description

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# segment -> body name, per model
SEGMENTS = {
    "op3": {
        "torso": "body_link", "pelvis": "body_link", "head": "head_tilt_link",
        "l_thigh": "l_hip_pitch_link", "r_thigh": "r_hip_pitch_link",
        "l_shank": "l_knee_link", "r_shank": "r_knee_link",
        "l_foot": "l_ank_roll_link", "r_foot": "r_ank_roll_link",
        "l_upper_arm": "l_sho_roll_link", "r_upper_arm": "r_sho_roll_link",
        "l_forearm": "l_el_link", "r_forearm": "r_el_link",
    },
    "so101": {
        "base": "base", "shoulder": "shoulder", "upper_arm": "upper_arm",
        "forearm": "lower_arm", "wrist": "wrist", "hand": "gripper",
        "jaw": "moving_jaw_so101_v1",
    },
}

# which model each built-in description uses; sign: MJCF joint deg = sign * servo deg
MODELS = {
    "op3-dynamixel": {"model": "op3", "sign": -1.0, "servo": "xm430-w350"},
    "so101-feetech": {"model": "so101", "sign": 1.0, "servo": "sts3215"},
}


def shared_dir():
    """Where ../shared/data/robots is for this checkout (or $MOTIONSTAFF_ROBOT_MODELS)."""
    env = os.environ.get("MOTIONSTAFF_ROBOT_MODELS")
    if env:
        return env
    for up in (REPO, os.path.dirname(REPO), os.path.dirname(os.path.dirname(REPO))):
        p = os.path.join(up, "..", "shared", "data", "robots")
        if os.path.isdir(p):
            return os.path.normpath(p)
    return os.path.normpath(os.path.join(REPO, "..", "shared", "data", "robots"))


def model_path(kind):
    if kind == "op3":
        return os.path.join(HERE, "models", "robotis_op3", "scene.xml")
    return os.path.join(shared_dir(), "so101", "so101_new_calib.xml")


IMU_SITE = "torso_imu"
GYRO_SENSOR, ACC_SENSOR = "torso_gyro", "torso_acc"     # _add_torso_imu


class RobotModel:
    def __init__(self, description, kind, sign, servo_spec, path):
        import mujoco
        stall_nm = servo_spec.stall_nm
        self.servo_spec = servo_spec
        self.description = description
        self.name = description.name
        self.kind = kind
        self.model_path = path
        self.servos = list(description.servos)
        self.servo_names = [s.name for s in self.servos]
        try:
            spec = mujoco.MjSpec.from_file(path)
        except Exception as e:
            raise ValueError("robot model %s does not load: %s" % (path, str(e).splitlines()[0]))
        if kind == "so101":
            _add_floor(spec)
        joints = dict((j.name, j) for j in spec.joints)
        acts = dict((a.target, a) for a in spec.actuators)
        self.joint_of, self.actuator_of, self.sign = {}, {}, {}
        self.lo_deg, self.hi_deg = {}, {}
        for s in self.servos:
            if s.name not in joints or s.name not in acts:
                raise ValueError("robot model %s has no joint/actuator for servo %s" % (path, s.name))
            j, a = joints[s.name], acts[s.name]
            self.joint_of[s.name] = j.name
            self.actuator_of[s.name] = a.name
            self.sign[s.name] = sign
            self.lo_deg[s.name] = s.lo_deg
            self.hi_deg[s.name] = s.hi_deg
            lo, hi = sorted((sign * s.lo_deg, sign * s.hi_deg))
            if j.limited == mujoco.mjtLimited.mjLIMITED_TRUE or (j.range[0] < j.range[1]):
                # the mechanism's own stops stay where they are tighter
                lo = max(lo, np.degrees(j.range[0]))
                hi = min(hi, np.degrees(j.range[1]))
            j.range = np.radians([lo, hi])
            # the model's identified damping includes the motor's back-EMF braking, which
            # host.physics.servo adds while torque is on; the joint keeps the gear train's rest
            j.damping[0] = max(0.05, float(j.damping[0]) - servo_spec.braking_nm_s)
            j.limited = mujoco.mjtLimited.mjLIMITED_TRUE
            # torque motor: force = ctrl (N m), clamped to the stall torque
            a.set_to_motor()
            a.gear[0] = 1.0
            a.ctrlrange = [-stall_nm, stall_nm]
            a.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
            a.forcerange = [-stall_nm, stall_nm]
            a.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        torso = SEGMENTS[kind].get("torso")
        if torso is not None:
            _add_torso_imu(spec, torso)
        try:
            self.model = spec.compile()
        except Exception as e:
            raise ValueError("robot model %s does not compile: %s" % (path, str(e).splitlines()[0]))
        m = self.model
        self.stall_nm = stall_nm
        self.floating = m.njnt > 0 and m.jnt_type[0] == mujoco.mjtJoint.mjJNT_FREE
        self.humanoid = kind == "op3"
        self.qadr = np.array([m.jnt_qposadr[m.joint(self.joint_of[n]).id] for n in self.servo_names])
        self.dadr = np.array([m.jnt_dofadr[m.joint(self.joint_of[n]).id] for n in self.servo_names])
        self.act_id = np.array([m.actuator(self.actuator_of[n]).id for n in self.servo_names])
        self.signs = np.array([self.sign[n] for n in self.servo_names])
        self.segments = dict(SEGMENTS[kind])
        self.root_qpos0 = np.array(m.qpos0[:7]) if self.floating else None
        self.foot_geoms = {}
        if self.humanoid:
            for side in ("l", "r"):
                b = m.body(self.segments[side + "_foot"]).id
                self.foot_geoms[side] = [g for g in range(m.ngeom)
                                         if m.geom_bodyid[g] == b and m.geom_contype[g]]
        self._data = mujoco.MjData(m)
        self.standing_height_m = self._standing_height()

    # --- angle conversions -------------------------------------------------------------
    def _vector(self, angles_deg):
        if isinstance(angles_deg, dict):
            unknown = [k for k in angles_deg if k not in self.sign]
            if unknown:
                raise ValueError("robot %s has no servo %s" % (self.name, ", ".join(sorted(unknown))))
            return np.array([float(angles_deg.get(n, 0.0)) for n in self.servo_names])
        v = np.asarray(angles_deg, dtype=float)
        if v.shape[-1] != len(self.servo_names):
            raise ValueError("robot %s has %d servos, not %d angles"
                             % (self.name, len(self.servo_names), v.shape[-1]))
        return v

    def qpos_deg(self, angles_deg):
        """Servo degrees (dict name -> deg, or array in servo order) -> MJCF joint degrees."""
        # q_mjcf = sign * servo angle
        return self.signs * self._vector(angles_deg)

    def servo_deg(self, qpos_deg):
        """MJCF joint degrees (servo order) -> servo degrees."""
        return self.signs * np.asarray(qpos_deg, dtype=float)

    def units_to_qpos_rad(self, servo, units):
        """Controller units the real servo reports -> MJCF joint angle (rad)."""
        s = self.servos[self.servo_names.index(servo)]
        return float(np.radians(self.sign[servo] * s.to_deg(units)))

    def qpos_rad_to_units(self, servo, rad):
        """MJCF joint angle (rad) -> the units the servo reports (not clamped to min/max)."""
        s = self.servos[self.servo_names.index(servo)]
        deg = self.sign[servo] * np.degrees(rad)
        return int(np.floor(s.neutral + s.direction * s.units_per_deg * deg + 0.5))

    # --- kinematics ----------------------------------------------------------------------
    def _pose(self, angles_deg, root_qpos=None):
        import mujoco
        d = self._data
        d.qpos[:] = self.model.qpos0
        if self.floating:
            d.qpos[:7] = self.root_qpos0 if root_qpos is None else root_qpos
        d.qpos[self.qadr] = np.radians(self.qpos_deg(angles_deg))
        mujoco.mj_kinematics(self.model, d)
        mujoco.mj_comPos(self.model, d)
        return d

    def fk(self, angles_deg, names=None, root_qpos=None):
        """{name: (pos (3,) m, rot (3, 3))} of segments, bodies or sites (default: every segment)
        for servo angles (deg); a floating root at root_qpos (default: standing, .root_qpos0)."""
        d = self._pose(angles_deg, root_qpos)
        m = self.model
        out = {}
        for n in (names if names is not None else sorted(self.segments)):
            if n in self.segments:
                b = m.body(self.segments[n]).id
                out[n] = (d.xpos[b].copy(), d.xmat[b].reshape(3, 3).copy())
                continue
            try:
                b = m.body(n).id
                out[n] = (d.xpos[b].copy(), d.xmat[b].reshape(3, 3).copy())
            except KeyError:
                try:
                    s = m.site(n).id
                except KeyError:
                    raise ValueError("robot %s has no body or site %r" % (self.name, n))
                out[n] = (d.site_xpos[s].copy(), d.site_xmat[s].reshape(3, 3).copy())
        return out

    def com(self, angles_deg, root_qpos=None):
        """Whole-body centre of mass (3,) m for servo angles (deg)."""
        d = self._pose(angles_deg, root_qpos)
        return d.subtree_com[0].copy() if not self.floating else d.subtree_com[1].copy()

    def _standing_height(self):
        if not self.floating:
            return None
        import mujoco
        # feet on the floor at the zero pose: lift the root so the lowest foot geom touches z=0
        d = self._pose(np.zeros(len(self.servo_names)))
        low = min(_geom_bottom(self.model, d, g) for side in self.foot_geoms for g in self.foot_geoms[side])
        q = np.array(self.model.qpos0[:7])
        q[2] -= low
        self.root_qpos0 = q
        d = self._pose(np.zeros(len(self.servo_names)), q)
        mujoco.mj_kinematics(self.model, d)
        return float(d.xpos[self.model.body(self.segments["torso"]).id][2])


def _geom_bottom(m, d, g):
    # lowest point of a box geom: centre z minus the projection of its half sizes onto z
    r = d.geom_xmat[g].reshape(3, 3)
    return float(d.geom_xpos[g][2] - np.abs(r[2, :]) @ m.geom_size[g])


def _add_torso_imu(spec, body):
    """An IMU at the torso frame's origin, its axes the torso's: MuJoCo's gyro (rad/s) and
    accelerometer (specific force, m/s^2: +g up at rest) sensors, computed in mj_step's C code
    at the step's start state (host/physics/twin.py Twin.imu, specific_force_g read them)."""
    import mujoco
    site = spec.body(body).add_site(name=IMU_SITE, pos=[0, 0, 0])
    for kind, name in ((mujoco.mjtSensor.mjSENS_GYRO, GYRO_SENSOR),
                       (mujoco.mjtSensor.mjSENS_ACCELEROMETER, ACC_SENSOR)):
        spec.add_sensor(name=name, type=kind, objtype=mujoco.mjtObj.mjOBJ_SITE, objname=site.name)


def _add_floor(spec):
    import mujoco
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05],
                            rgba=[0.3, 0.35, 0.4, 1])
    spec.worldbody.add_light(pos=[0, 0, 1.5], dir=[0, 0, -1])


def load_robot(name):
    """RobotModel for a built-in robot name (or a description path whose name is one)."""
    desc = load_description(name)
    entry = MODELS.get(desc.name) or MODELS.get(os.path.basename(str(name)).replace(".json", ""))
    if entry is None:
        raise ValueError("robot %s has no physics model (models: %s)" % (desc.name, ", ".join(sorted(MODELS))))
    path = model_path(entry["model"])
    if not os.path.isfile(path):
        raise ValueError("robot %s: model file %s is missing" % (desc.name, path))
    from host.physics.servo import SPECS
    return RobotModel(desc, entry["model"], entry["sign"], SPECS[entry["servo"]], path)
