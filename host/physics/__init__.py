"""The robot's body in MuJoCo: models (models.py), servo models (servo.py), the twin behind the
controller emulators (twin.py), simulated playback (simulate.py) and rendering (render.py).

    from host.physics.models import load_robot
    from host.physics.simulate import simulate_staff

mujoco is a host-only dependency; device/ never imports this package. Headless rendering:
MUJOCO_GL defaults to egl here (render.pick_gl falls back to osmesa).
"""

import os

if "MUJOCO_GL" not in os.environ:
    os.environ["MUJOCO_GL"] = "egl"
    os.environ["_MOTIONSTAFF_GL_DEFAULT"] = "1"      # ours, not the user's: pick_gl may change it
