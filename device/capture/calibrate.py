"""Still-pose calibration: align each sensor to its segment, gyro bias at rest, heading reference.

    from device.capture.calibrate import StillCalibration
    cal = StillCalibration(skeleton, sensors, q_pose=skeleton.home, frames=30)
    for readings in first_second: cal.add(readings)   # {name: {"gyro", "accel", "quat"} | None}
    res = cal.result()    # {"mounts": {name: R}, "gyro_bias": {name: (3,)}, "world": W, ...}

The subject stands in the calibration pose q_pose (the skeleton's home: a T-pose for CMU BVH, the
N-pose of the human model). With R_link from forward kinematics of that pose:
  heading   W = Rot(up, -psi), psi the circular mean heading of all sensors against their
            nominal mountings (the subject's facing; mounting errors average out)
  mount     R_mount = R_link^T (W R_sensor)          (fused-orientation sensors, mean quaternion)
  mount     tilt-corrected nominal mounting: the shortest rotation taking the measured gravity
            direction onto the one the nominal mounting predicts (gyro/accel-only sensors)
  gyro bias the mean gyro reading at rest
"""

import numpy as np

from device.body.kinematics import forward_kinematics
from device.capture.rot import exp_so3, quat_to_mat


class StillCalibration:
    def __init__(self, skeleton, sensors, q_pose=None, frames=30):
        self.sk = skeleton
        self.sensors = sensors        # list of {"name", "link" (index), "R_nominal" (3, 3)}
        self.frames = int(frames)
        self.q_pose = skeleton.home if q_pose is None else np.asarray(q_pose, float)
        self.n = 0
        self._acc = {s["name"]: {"gyro": [], "accel": [], "quat": []} for s in sensors}
        self.up = -skeleton.gravity / np.linalg.norm(skeleton.gravity)

    @property
    def done(self):
        return self.n >= self.frames

    def add(self, readings):
        self.n += 1
        for name, r in readings.items():
            if r is None or name not in self._acc:
                continue
            a = self._acc[name]
            a["gyro"].append(r["gyro"])
            a["accel"].append(r["accel"])
            if r.get("quat") is not None and np.linalg.norm(r["quat"]) > 0.5:
                a["quat"].append(r["quat"])

    def result(self):
        pose = forward_kinematics(self.sk, self.q_pose)
        R_link = pose.link_rot
        mounts, bias, ahrs, quality = {}, {}, {}, {}
        world = np.eye(3)
        # heading: the subject's facing is unknown to a north-referenced sensor; each sensor's
        # heading error mixes it with its own mounting error, so take the circular mean
        fwd = np.array([1.0, 0.0, 0.0]) if abs(self.up[0]) < 0.9 else np.array([0.0, 0.0, 1.0])
        fwd = fwd - self.up * (fwd @ self.up)
        c = np.zeros(2)
        for s in self.sensors:
            qs = self._acc[s["name"]]["quat"]
            if not qs:
                continue
            E = _mean_rot(qs) @ (R_link[s["link"]] @ s["R_nominal"]).T
            v = E @ fwd
            v = v - self.up * (v @ self.up)
            psi = np.arctan2(np.cross(fwd, v) @ self.up, fwd @ v)
            c += (np.cos(psi), np.sin(psi))
        if c.any():
            world = exp_so3(-np.arctan2(c[1], c[0]) * self.up)
        for s in self.sensors:
            a = self._acc[s["name"]]
            RL = R_link[s["link"]]
            if a["gyro"]:
                bias[s["name"]] = np.mean(np.asarray(a["gyro"], float), 0)
            if a["quat"]:
                Rs = world @ _mean_rot(a["quat"])
                mounts[s["name"]] = RL.T @ Rs
                quality[s["name"]] = len(a["quat"])
            elif a["accel"]:
                Rn = s["R_nominal"]
                f = np.mean(np.asarray(a["accel"], float), 0)
                f /= np.linalg.norm(f)
                pred = (RL @ Rn).T @ self.up
                # smallest rotation C with C f = pred: R_mount = R_nominal C
                ax = np.cross(f, pred)
                ang = np.arctan2(np.linalg.norm(ax), f @ pred)
                C = exp_so3(ax / (np.linalg.norm(ax) + 1e-300) * ang)
                mounts[s["name"]] = Rn @ C
                ahrs[s["name"]] = RL @ mounts[s["name"]]
                quality[s["name"]] = len(a["accel"])
        return {"mounts": mounts, "gyro_bias": bias, "ahrs": ahrs, "world": world, "quality": quality}


def _mean_rot(quats):
    q = np.asarray(quats, float)
    q = q * np.sign(q @ q[0])[:, None]
    m = q.mean(0)
    return quat_to_mat(m / np.linalg.norm(m))
