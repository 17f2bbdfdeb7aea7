"""Retargeting: a staff of one body played by another (URDF robot, skeleton file, human model).

    from host.retarget import retarget, load_body, load_mapping
    out, report = retarget(staff, load_mapping("map.json"), load_body("robot.urdf"))
"""

from host.retarget.mapping import Mapping, JointMap, load_mapping, mapping_from_dict
from host.retarget.retarget import Report, load_body, retarget

__all__ = ["retarget", "load_body", "load_mapping", "mapping_from_dict", "Mapping", "JointMap", "Report"]
