"""Gesture recognition on the unit: body features, streaming DTW (SPRING), the recogniser."""
