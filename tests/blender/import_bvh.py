"""Run inside Blender: import a BVH with Blender's own importer, print bone head positions.

    blender -b --python tests/blender/import_bvh.py -- FILE.bvh FRAME [FRAME...]

Prints one JSON line `{"bones": n, "frames": {frame: {bone: [x, y, z]}}}` (Blender's Z-up world).
"""
import builtins
import json
import sys

import bpy

# Debian's Blender 3.4 runs its BVH importer on Python 3.11, which no longer accepts the 'rU'
# mode the importer opens files with; drop the obsolete 'U' so the importer itself runs as is.
_open = builtins.open


def _open_without_u(f, mode="r", *a, **k):
    return _open(f, mode.replace("U", ""), *a, **k)


builtins.open = _open_without_u
args = sys.argv[sys.argv.index("--") + 1:]
path, frames = args[0], [int(f) for f in args[1:]]
bpy.ops.wm.read_factory_settings(use_empty=True)
bpy.ops.import_anim.bvh(filepath=path, global_scale=1.0, rotate_mode="NATIVE",
                        axis_forward="-Z", axis_up="Y", update_scene_duration=True)
arm = [o for o in bpy.data.objects if o.type == "ARMATURE"][0]
out = {"bones": len(arm.data.bones), "frame_end": bpy.context.scene.frame_end, "frames": {}}
for f in frames:
    bpy.context.scene.frame_set(f)
    out["frames"][f] = {pb.name: list(arm.matrix_world @ pb.head) for pb in arm.pose.bones}
print("MOTIONSTAFF " + json.dumps(out))
