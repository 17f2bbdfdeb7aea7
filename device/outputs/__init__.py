"""Live outputs beside the servos: OSC (device/outputs/osc.py) and VMC (device/outputs/vmc.py).

    from device.outputs.osc import OscOutput
    from device.outputs.vmc import VmcOutput
    out = OscOutput(row_names, host="127.0.0.1", port=9000)
    out(frame_index, t_s, values, codes)      # each is a capture-loop output (one call a frame)
"""
