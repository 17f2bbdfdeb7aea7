"""Configured outputs: native packets a receiver decodes; a port that is full never blocks."""

import io

from device.capture.config import default_config
from device.capture.loop import CaptureLoop
from device.capture.outputs import PacketOutput, make_outputs
from device.capture.unit import build_unit
from protocol import packets as pk


def test_packets_decode_to_the_recorded_codes():
    unit = build_unit(default_config(body="humanoid18"))
    loop = CaptureLoop(unit)
    port = io.BytesIO()
    t = [0.0]
    loop.outputs.append(lambda k, t_s, v, c: t.__setitem__(0, t_s))    # the pacer's clock
    out = PacketOutput(port, loop.header, clock=lambda: t[0])
    loop.outputs.append(out)
    codes = []
    loop.outputs.append(lambda k, t, v, c: codes.append(c))
    loop.run(frames=45)
    dec = pk.Decoder()
    ps = dec.feed(port.getvalue())
    names = [p.name for p in ps]
    assert names[0] == "HELLO" and names[1] == "HEADER"
    frames = [p.frame()[1] for p in ps if p.is_frame()]
    assert frames == codes
    assert names.count("HEARTBEAT") == 2
    assert names.count("HEADER") >= 2                    # repeated every second
    assert sum(dec.drops.values()) == 0 and out.dropped == 0 and out.frames == 45


def test_full_loop_port_drops_instead_of_blocking():
    unit = build_unit(default_config(body="human"))
    cfg_out = [{"kind": "packets", "url": "loop://"}]
    loop = CaptureLoop(unit)
    outs = make_outputs(cfg_out, loop.header, unit.skeleton)
    loop.outputs.extend(outs)
    loop.run(frames=40)                        # the loop:// buffer fills; nothing blocks
    c = outs[0].counts()
    assert outs[0].frames + outs[0].dropped == 40 and c["frames_sent"] == outs[0].frames
    outs[0].close()


def test_capture_link_flag_streams_the_product_link(capsys):
    import json
    from host.cli import main
    from device.servo.emulate.serialtwin import SerialTwin
    twin = SerialTwin()
    assert main(["capture", "--duration", "1", "--body", "humanoid18", "--link", twin.path,
                 "--baud", "115200", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    link = summary["link"]
    assert link["frames_sent"] + link["frames_skipped"] == 30 and link["header_repeats"] >= 1
    got = pk.Decoder().feed(twin.read_written(link["bytes"]))
    asm = pk.HeaderAssembler()
    heads = [h for h in (asm.add(p) for p in got if p.name == "HEADER") if h is not None]
    assert heads and len(heads[0]["rows"]) == 18
    assert sum(1 for p in got if p.is_frame()) == link["frames_sent"]
    twin.close()
    assert main(["capture", "--duration", "1", "--link", twin.path + "-gone"]) == 2
