"""The formats the capture unit and the desktop share: pure Python that also runs on MicroPython.

    from protocol import staffcodec
    staffcodec.encode(45.0, -90.0, 90.0, 8)   # -> 191
"""
