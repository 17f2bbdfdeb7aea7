"""The viewer's local web server: 127.0.0.1 only, python http.server in a thread.

    from host.view.server import Viewer
    v = Viewer([staff, edited], names=["walk.png", "edited.png"], port=0)   # 0: any free port
    v = Viewer([staff], extra=[(name, body_doc, staff_for_png)])  # a precomputed body (robot run)
    v.start(); print(v.url)          # http://127.0.0.1:PORT/
    ...; v.stop()

Routes: / (index.html), /viewer.js, /bodies.json (the list), /body/N.json (FK segments per
frame), /staff/N.png. Nothing else is served: no files from disk beyond the two bundled ones,
nothing from the internet.
"""

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from host.view.data import body_json, staff_png

HERE = os.path.dirname(os.path.abspath(__file__))
STATIC = {"/": ("index.html", "text/html; charset=utf-8"),
          "/index.html": ("index.html", "text/html; charset=utf-8"),
          "/viewer.js": ("viewer.js", "text/javascript; charset=utf-8")}


class Viewer:
    def __init__(self, staffs, names=None, port=0, host="127.0.0.1", extra=None):
        if host not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError("the viewer serves localhost only, not %r" % host)
        self.staffs = list(staffs)
        self.names = list(names or ["staff %d" % (i + 1) for i in range(len(self.staffs))])
        self._cache = {}
        for name, doc, st in extra or ():
            self._cache[len(self.staffs)] = json.dumps(doc).encode("utf-8")
            self.staffs.append(st)
            self.names.append(name)
        self.httpd = ThreadingHTTPServer((host, int(port)), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = "http://127.0.0.1:%d/" % self.port
        self.thread = None
        # compute the bodies now, so a bad staff fails before the browser opens
        for i in range(len(self.staffs)):
            self._body(i)

    def _body(self, i):
        if i not in self._cache:
            self._cache[i] = json.dumps(body_json(self.staffs[i], self.names[i])).encode("utf-8")
        return self._cache[i]

    def _handler(self):
        viewer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def _send(self, code, ctype, body):
                self.send_response(code)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path.split("?", 1)[0]
                try:
                    if path in STATIC:
                        fname, ctype = STATIC[path]
                        with open(os.path.join(HERE, fname), "rb") as f:
                            return self._send(200, ctype, f.read())
                    if path == "/bodies.json":
                        doc = [{"name": n, "body": "/body/%d.json" % i, "staff": "/staff/%d.png" % i}
                               for i, n in enumerate(viewer.names)]
                        return self._send(200, "application/json", json.dumps(doc).encode())
                    for prefix, ext in (("/body/", ".json"), ("/staff/", ".png")):
                        if path.startswith(prefix) and path.endswith(ext):
                            num = path[len(prefix):-len(ext)]
                            if num.isdigit() and int(num) < len(viewer.staffs):
                                i = int(num)
                                if ext == ".json":
                                    return self._send(200, "application/json", viewer._body(i))
                                return self._send(200, "image/png", staff_png(viewer.staffs[i]))
                    self._send(404, "text/plain", b"not found")
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler

    def start(self):
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="motionstaff-view", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
