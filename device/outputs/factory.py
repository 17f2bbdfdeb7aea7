"""Outputs from the unit configuration's "outputs" entries (OSC, VMC, gestures).

    from device.outputs.factory import make_output, OUTPUT_KINDS
    out = make_output({"kind": "osc", "target": "127.0.0.1:9000", "per_row": False}, skeleton)
    out = make_output({"kind": "vmc", "target": ":39539"}, skeleton)
    out = make_output({"kind": "gestures", "library": "gestures.json", "target": ":9000"}, skeleton,
                      rate_hz=30.0)
    loop.outputs.append(out)            # each is called (frame_index, t_s, values, codes)

"gestures" runs the recogniser on the live estimate and sends every match as the OSC message
`/motionstaff/gesture  name confidence t_start_s t_end_s t_decided_s` to target (the unit
itself never runs shell commands; `motionstaff gestures run` on a host performs a gesture's
command). Unknown kinds or fields raise FormatError naming them.
"""

from protocol.errors import FormatError

OUTPUT_KINDS = ("osc", "vmc", "gestures")


class GestureOsc:
    """The recogniser as a capture output, reporting matches over OSC."""

    def __init__(self, recognizer, client, address="/motionstaff/gesture"):
        self.recognizer = recognizer
        self.client = client
        self.address = address
        self.matches = []

    def __call__(self, frame_index, t_s, values, codes=None):
        from device.outputs.osc import send_bundle
        ms = self.recognizer(frame_index, t_s, values, codes)
        for m in ms:
            send_bundle(self.client, [(self.address, [m.name, m.confidence, m.t_start_s, m.t_end_s,
                                                      m.t_decided_s])])
        self.matches.extend(ms)
        return ms

    def close(self):
        sock = getattr(self.client, "_sock", None)
        if sock is not None:
            sock.close()


def make_output(spec, skeleton, rate_hz=30.0, where="outputs"):
    """An output callable for one configuration entry (see the module docstring); rate_hz is
    the capture rate (the recogniser's frame rate)."""
    from device.outputs.osc import OscOutput, _client, parse_target
    if not isinstance(spec, dict) or spec.get("kind") not in OUTPUT_KINDS:
        raise FormatError("%s: 'kind' must be one of %s" % (where, ", ".join(OUTPUT_KINDS)))
    kind = spec["kind"]
    allowed = {"osc": {"kind", "target", "per_row", "prefix"}, "vmc": {"kind", "target"},
               "gestures": {"kind", "target", "library", "address"}}[kind]
    extra = sorted(set(spec) - allowed)
    if extra:
        raise FormatError("%s: %s output has unknown fields %s" % (where, kind, ", ".join(extra)))
    try:
        host, port = parse_target(spec.get("target", ""), 39539 if kind == "vmc" else 9000)
    except ValueError as e:
        raise FormatError("%s: %s" % (where, e)) from None
    if kind == "osc":
        return OscOutput(skeleton.dof_names, host, port, prefix=spec.get("prefix", "/motionstaff"),
                         per_row=bool(spec.get("per_row", False)), units=[d.unit for d in skeleton.dofs])
    if kind == "vmc":
        from device.outputs.vmc import VmcOutput
        return VmcOutput(skeleton, host, port)
    from device.gestures.library import load_library
    from device.gestures.recognizer import Recognizer
    if not spec.get("library"):
        raise FormatError("%s: gestures output needs 'library'" % where)
    rec = Recognizer(load_library(spec["library"]), skeleton=skeleton, fps=rate_hz)
    return GestureOsc(rec, _client(host, port), spec.get("address", "/motionstaff/gesture"))
