"""Retargeting: a staff of one body played by another (URDF robot, skeleton file, human model).

    from host.retarget import retarget, load_body, load_mapping
    out, report = retarget(staff, load_mapping("map.json"), load_body("robot.urdf"))
    res = retarget_to_robot(staff, "op3-dynamixel", balance=True)   # by pose (host/retarget/pose.py)
"""

import host.physics  # noqa: F401  (MUJOCO_GL's headless default before the IK loads mujoco)
from host.retarget.mapping import Mapping, JointMap, load_mapping, mapping_from_dict
from host.retarget.retarget import Report, load_body, retarget
from host.retarget.pose import retarget_to_robot

__all__ = ["retarget", "load_body", "load_mapping", "mapping_from_dict", "Mapping", "JointMap", "Report", "retarget_to_robot"]
