"""Bundled motion data (see SOURCES.md): host/data/131_03_short.bvh, a CMU clip for the demo."""
