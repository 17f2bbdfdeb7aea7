"""Gesture learning and commands on the host (the recogniser core is device/gestures/)."""
