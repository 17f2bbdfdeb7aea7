"""The browser viewer in a real headless Chromium (Debian's chromium, driven by Playwright):
a figure is drawn, and every control does what it says."""

import io
import os

import numpy as np
import pytest
from PIL import Image

from host.bvh import read_bvh
from host.edit import mirror, trim
from host.view import Viewer

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TIMEOUT_MS = 30000

pw_api = pytest.importorskip("playwright.sync_api", reason="playwright (pip) is not installed")
if not os.path.exists(CHROMIUM):
    pytest.skip("Debian's chromium is not installed at %s (apt-get install chromium)" % CHROMIUM,
                allow_module_level=True)


@pytest.fixture(scope="module")
def page(shared_data):
    clip = trim(read_bvh(str(shared_data / "bvh" / "131_03.bvh")), 0.0, 4.0)
    with Viewer([clip, mirror(clip)], names=["walk", "mirrored"]) as v:
        with pw_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
            pg = browser.new_page(viewport={"width": 1000, "height": 700})
            pg.set_default_timeout(TIMEOUT_MS)
            pg.goto(v.url)
            pg.wait_for_selector("body[data-ready='1']")
            yield pg
            browser.close()


def shot(page, sel="#scene"):
    return np.asarray(Image.open(io.BytesIO(page.locator(sel).screenshot())).convert("RGB")).astype(int)


def drawn(rgb, colour):
    c = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)])
    return np.abs(rgb - c).sum(axis=2) < 40


def frame(page):
    return page.evaluate("window.viewer.frame")


def test_figure_is_drawn_for_both_bodies(page):
    img = shot(page)
    h, w, _ = img.shape
    for half in (img[:, : w // 2], img[:, w // 2:]):
        assert drawn(half, "#d1495b").sum() > 100 and drawn(half, "#2e86ab").sum() > 100
    staff = shot(page, "#staff")
    assert staff.std() > 10                      # the staff image is there
    red = (staff[:, :, 0] > 200) & (staff[:, :, 1] < 80)
    assert red[:, :10].sum() > 0.5 * staff.shape[0]   # playhead at frame 0


def test_step_both_ways_and_counter(page):
    page.evaluate("document.getElementById('scrub').value = 0; document.getElementById('scrub').dispatchEvent(new Event('input'))")
    page.wait_for_function("window.viewer.frame === 0")
    page.click("#stepf")
    page.click("#stepf")
    page.wait_for_function("window.viewer.frame === 2")
    assert "frame 2 /" in page.inner_text("#frame")
    page.click("#stepb")
    page.wait_for_function("window.viewer.frame === 1")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("window.viewer.frame === 2")


def test_play_pause_backward_and_speed(page):
    page.evaluate("document.getElementById('scrub').value = 100; document.getElementById('scrub').dispatchEvent(new Event('input'))")
    page.wait_for_function("window.viewer.frame === 100")
    page.evaluate("const s = document.getElementById('speed'); s.value = 4; s.dispatchEvent(new Event('input'))")
    assert page.evaluate("window.viewer.speed") == 4
    page.click("#play")
    page.wait_for_function("window.viewer.frame > 130")
    page.click("#play")
    assert page.evaluate("window.viewer.playing") is False
    stopped = frame(page)
    page.evaluate("const s = document.getElementById('speed'); s.value = 1; s.dispatchEvent(new Event('input'))")
    page.click("#back")
    page.wait_for_function("window.viewer.frame < %d && window.viewer.frame > 0" % (stopped - 20))
    page.click("#play")
    page.evaluate("const s = document.getElementById('speed'); s.value = 0.1; s.dispatchEvent(new Event('input'))")
    assert abs(page.evaluate("window.viewer.speed") - 0.1) < 1e-9


def test_scrub_by_clicking_the_staff(page):
    box = page.locator("#staff").bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.75, box["y"] + box["height"] / 2)
    frames = page.evaluate("window.viewer.frames")
    page.wait_for_function("Math.abs(window.viewer.frame - %d) <= 2" % int(0.75 * frames))
    staff = shot(page, "#staff")
    red = (staff[:, :, 0] > 200) & (staff[:, :, 1] < 80)
    col = np.flatnonzero(red.sum(axis=0) > 0.5 * staff.shape[0]).mean() / staff.shape[1]
    assert abs(col - 0.75) < 0.02


def test_orbit_and_zoom_change_the_picture(page):
    # a known state whatever ran before in this worker (xdist): paused, at 3/4 of the clip. The
    # camera looks at a fixed point and the figure walks past it; at 3/4 it stands near the
    # middle of the view, at frame 0 it is at the edge and a 2x zoom crops it away
    if page.evaluate("window.viewer.playing"):
        page.click("#play")
    k = int(0.75 * page.evaluate("window.viewer.frames"))
    page.evaluate("document.getElementById('scrub').value = %d; document.getElementById('scrub').dispatchEvent(new Event('input'))" % k)
    page.wait_for_function("window.viewer.frame === %d && !window.viewer.playing" % k)
    before = shot(page)
    box = page.locator("#scene").bounding_box()
    x, y = box["x"] + box["width"] / 4, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 120, y + 40, steps=4)
    page.mouse.up()
    az, el = page.evaluate("[window.viewer.az, window.viewer.el]")
    assert az != -60 and el != 15
    after = shot(page)
    assert np.abs(after - before).sum() > 10000
    w0 = drawn(after, "#2e86ab").sum() + drawn(after, "#d1495b").sum()
    for _ in range(3):
        page.click("#zoomin")
    zoomed = shot(page)
    w1 = drawn(zoomed, "#2e86ab").sum() + drawn(zoomed, "#d1495b").sum()
    assert page.evaluate("window.viewer.zoom") > 1.9 and w1 > 1.5 * w0
    page.evaluate("const s = document.getElementById('el'); s.value = 80; s.dispatchEvent(new Event('input'))")
    assert page.evaluate("window.viewer.el") == 80
    for _ in range(3):
        page.click("#zoomout")


def test_localhost_only_and_unknown_paths(shared_data):
    import urllib.error
    import urllib.request
    clip = trim(read_bvh(str(shared_data / "bvh" / "131_03.bvh")), 0.0, 0.5)
    with pytest.raises(ValueError, match="localhost"):
        Viewer([clip], host="0.0.0.0")
    with Viewer([clip]) as v:
        assert v.httpd.server_address[0] == "127.0.0.1"
        for bad in ("body/5.json", "../host/cli.py", "staff/x.png", "etc/passwd"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(v.url + bad, timeout=10)
            assert e.value.code == 404
        doc = urllib.request.urlopen(v.url + "body/0.json", timeout=10).read()
        assert b'"frames": 60' in doc
