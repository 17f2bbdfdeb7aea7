"""`motionstaff demo`: the main job end to end on the built-in simulated unit.

    from host.demo.pipeline import run_pipeline
    report = run_pipeline("motionstaff-demo", seconds=10.0)   # dict; see host/demo/stages.py

pipeline.py (capture -> record + stream over the product's PacketOutput and the serial twin),
robot_end.py (the product's LinkBridge -> Player -> Maestro, with a command log), stages.py (download, convert, edit,
render, report), checks.py (no corrupted frame delivered, servo commands match the limiter).
"""
