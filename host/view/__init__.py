"""The browser viewer: a local page with a 3D figure (canvas, own projection) and the staff.

    from host.view import Viewer
    with Viewer([staff, edited], names=["orig", "edited"]) as v:
        print(v.url)
"""

from host.view.server import Viewer

__all__ = ["Viewer"]
