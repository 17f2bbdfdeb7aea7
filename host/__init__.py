"""Desktop tools: staff files, import/export, editing, retargeting, replay, the command line.

    motionstaff info walk.png --json
"""
