"""The capture loop: deadline clock -> read -> estimate -> encode -> record -> outputs, with timing.

    from device.capture.config import default_config
    from device.capture.loop import CaptureLoop
    from device.capture.unit import build_unit
    loop = CaptureLoop(build_unit(default_config()), record="rec.msr")   # virtual time by default
    loop.outputs.append(lambda k, t_s, values, codes: print(k, codes[:4]))
    loop.run(duration_s=5.0)
    print(loop.stats.table())

Frame k is due at t0 + k/rate (absolute deadlines). The read stage lasts at least the bus time
of the unit's slowest (simulated) bus: the clock waits it out (virtual time jumps, real time
sleeps), and stats report it as "bus" beside the unit's CPU work ("busy", what must fit a
quarter of the period); a frame whose work plus bus time exceeds the period is an overrun. In real time (realtime=True) the loop
sleeps until each deadline; when a frame's work overruns past later deadlines it captures at
the latest deadline that has passed, records the frames before it as missing columns (the
staff keeps its timeline) and counts them as skipped. In
virtual time the clock jumps from deadline to deadline, so tests and the demo run as fast as
the machine allows and are deterministic. An output that raises is counted and dropped from
nothing: the unit keeps capturing (outputs[i] errors go to output_errors, the first one kept
in first_output_error so that the command line can name it).
"""

import time

import numpy as np

from device.capture.clock import RealClock, VirtualClock, deadline
from device.capture.stats import TimingStats
from protocol import container, staffcodec, staffheader

STAGES = ("read", "estimate", "encode", "record", "output")
# the simulator's share of "read" (subject, truth, rendering) is reported apart as "simulate"
# and excluded from the unit's busy time: on a real unit that work is the body and the chips


def staff_rows(skeleton):
    """Header rows of a skeleton's staff (one per dof, its range; rotations spanning 360 wrap)."""
    rows = []
    for d in skeleton.dofs:
        rows.append({"name": d.name, "unit": d.unit, "lo": d.lo, "hi": d.hi,
                     "wrap": d.kind == "rotation" and (d.hi - d.lo) >= 359.0})
    return rows


def make_header(skeleton, rate_hz, bits=8, source="motionstaff capture", captured=""):
    return staffheader.make(rows=staff_rows(skeleton), fps=rate_hz, bits=bits,
                            skeleton=skeleton.to_dict(), source=source, captured=captured)


def check_recording_header(header):
    """The checks convert and info apply to a recording's header (protocol/staffheader.py, the
    skeleton's own), before anything is recorded: a recording capture writes is one they read."""
    from protocol.errors import FormatError
    text = staffheader.dumps(header)
    h = staffheader.loads(text.encode("utf-8") if isinstance(text, str) else text, "recording header")
    if h.get("skeleton") is not None:
        from device.body.skeleton import Skeleton
        try:
            Skeleton.from_dict(h["skeleton"])
        except (ValueError, KeyError, TypeError) as e:
            raise FormatError("recording header: skeleton: %s" % e) from None
    return h


class CaptureLoop:
    def __init__(self, unit, record=None, frames_per_block=1, realtime=False, clock=None,
                 outputs=None, raw_log=None, truth=False, bits=None, captured="", storage=None,
                 sync_s=None, own_record=False, record_dir=None):
        self.unit = unit
        self.rate_hz = unit.rate_hz
        self.period_s = 1.0 / self.rate_hz
        self.bits = bits or unit.cfg.get("bits", 8)
        self.clock = clock or (RealClock() if realtime else VirtualClock())
        self.header = make_header(unit.skeleton, self.rate_hz, self.bits, captured=captured)
        self.los = [r["lo"] for r in self.header["rows"]]
        self.his = [r["hi"] for r in self.header["rows"]]
        self.writer = None
        self._record_file = None
        self.sync_s = float(unit.cfg.get("sync_s", 1.0) if sync_s is None else sync_s)
        self.record_path = record if isinstance(record, str) else None
        if record is not None or record_dir is not None:
            check_recording_header(self.header)
            # a path is created with its header on the medium, never over an existing file
            # (storage.create_recording: FileExistsError); record_dir gets a new name
            # (storage.new_recording); both on `storage` (the file system, or its power-cut
            # twin). A file object is appended to as is (header included).
            head = isinstance(record, str) or record_dir is not None
            if head:
                from device.capture.storage import create_recording, new_recording
                hb = container.encode_header(self.header)
                if record_dir is not None:
                    self.record_path, record = new_recording(record_dir, hb, storage)
                else:
                    record = create_recording(record, hb, storage)
                own_record = True
            if own_record:
                self._record_file = record          # closed by close()
            # the policy's syncs on another thread (device/capture/syncer.py): an fsync on a
            # microSD card stalls for milliseconds to a second, never in a frame's time
            from device.capture.syncer import make_syncer
            self.writer = container.Writer(record, self.header, frames_per_block=frames_per_block,
                                           sync_s=self.sync_s, write_header=not head,
                                           syncer=make_syncer(record, self.clock.now))
        self.outputs = list(outputs or [])
        self.output_errors = 0
        self.first_output_error = None
        self.raw_log = raw_log
        self.truth = [] if truth else None
        self.stats = TimingStats(self.period_s, STAGES)
        self.frame_index = 0
        self.t0 = None
        self.last_q = None
        self.status_callback = None

    def _emit(self, k, t_s, values, codes):
        for out in self.outputs:
            try:
                out(k, t_s, values, codes)
            except Exception as e:
                self.output_errors += 1
                if self.first_output_error is None:
                    self.first_output_error = e

    def _missing_frame(self, k, t_s):
        codes = [None] * len(self.los)
        if self.writer is not None:
            self.writer.write_frame(codes, int(round(t_s * 1000)))
        if self.truth is not None and self.unit.subject is not None:
            self.truth.append(self.unit.subject.q_true(t_s))

    def step(self):
        """Capture frame self.frame_index at its deadline; returns the joint values."""
        if self.t0 is None:
            self.t0 = self.clock.now()
            self.unit.clock_t0_s = self.t0     # the camera's frames are stamped on this clock
        k = self.frame_index
        due = deadline(self.t0, k, self.period_s)
        self.clock.sleep_until(due)
        t_s = due - self.t0
        start = self.clock.now()
        c0 = time.thread_time()
        p0 = time.perf_counter()
        readings = self.unit.read(t_s)
        p1 = time.perf_counter()
        bus_s = max(self.unit.bus_s.values()) if getattr(self.unit, "bus_s", None) else 0.0
        if bus_s > 0:
            # the simulated buses' time (in parallel: the slowest): the read stage lasts at least
            # that long, in virtual time and, with real-time pacing, on the wall clock
            self.clock.sleep_until(self.clock.now() + bus_s)
        wait_s = time.perf_counter() - p1
        p1 = time.perf_counter()
        if self.raw_log is not None:
            self.raw_log.write(k, t_s, readings)
        q = self.unit.estimate(t_s, readings)
        p2 = time.perf_counter()
        values = [None if v != v else float(v) for v in q]
        codes = staffcodec.encode_column(values, self.los, self.his, self.bits)
        p3 = time.perf_counter()
        if self.writer is not None:
            self.writer.write_frame(codes, int(round(t_s * 1000)))
        p4 = time.perf_counter()
        self._emit(k, t_s, values, codes)
        p5 = time.perf_counter()
        cpu = time.thread_time() - c0
        sim = getattr(self.unit, "sim_s", 0.0) if self.unit.replay is None else 0.0
        sim_cpu = getattr(self.unit, "sim_cpu_s", 0.0) if self.unit.replay is None else 0.0
        read = (p1 - wait_s) - p0 - sim
        work = read + (p5 - p1)
        latency = work + max(bus_s, wait_s)
        # an overrun: the frame ends after the next deadline (real time: by the clock; virtual
        # time: its start plus the unit's CPU time and the bus time, so that other processes on
        # a shared machine, which stretch wall time, do not count as the unit's overruns)
        unit_cpu_s = max(0.0, cpu - sim_cpu)
        end = self.clock.now() if self.clock.realtime else start + unit_cpu_s + bus_s
        self.stats.frame(start, due, {"read": read, "estimate": p2 - p1, "encode": p3 - p2,
                                      "record": p4 - p3, "output": p5 - p4},
                         latency, bus_s=bus_s, cpu_s=unit_cpu_s,
                         overrun=end > due + self.period_s)
        self.stats.simulate_s.append(sim)
        if self.truth is not None and self.unit.subject is not None:
            self.truth.append(self.unit.subject.q_true(t_s))
        self.last_q = q
        self.frame_index += 1
        return q

    def run(self, duration_s=None, frames=None, status_every_s=None, stop=None):
        """Capture until duration_s (or frames) is reached, or stop() returns True."""
        if self.t0 is None:
            self.t0 = self.clock.now()
            self.unit.clock_t0_s = self.t0     # the camera's frames are stamped on this clock
        n = frames if frames is not None else (
            int(round(duration_s * self.rate_hz)) if duration_s is not None else None)
        next_status = status_every_s
        while n is None or self.frame_index < n:
            if stop is not None and stop():
                break
            if self.clock.realtime:
                # late: capture at the latest deadline that has passed, skipping those before it
                latest = int((self.clock.now() - self.t0) / self.period_s)
                behind = latest - self.frame_index
                if behind >= 1:
                    for j in range(behind):
                        if n is not None and self.frame_index >= n:
                            break
                        self._missing_frame(self.frame_index, self.frame_index * self.period_s)
                        self.frame_index += 1
                        self.stats.missed()
                    if n is not None and self.frame_index >= n:
                        break
            self.step()
            t = self.frame_index * self.period_s
            if next_status is not None and t >= next_status and self.status_callback is not None:
                self.status_callback(self.status())
                next_status += status_every_s
        return self.stats

    def status(self):
        """A snapshot for the status display: sensors alive, rate, estimate health, timing."""
        sens = self.unit.sensor_status()
        alive = sum(1 for s in sens if s["alive"])
        st = self.stats.summary()
        return {"frame": self.frame_index, "t_s": self.frame_index * self.period_s,
                "sensors_alive": alive, "sensors": len(sens),
                "stale": [s["name"] for s in sens if not s["alive"]],
                "calibrating": self.unit.calibrated is None, "health": self.unit.health,
                "rate_hz": (1000.0 / st["period_mean_ms"]) if st.get("period_mean_ms") else self.rate_hz,
                "busy_ms": st.get("busy_mean_ms", 0.0), "skipped": st["skipped"],
                "overruns": st["overruns"], "bus_ms": st.get("bus_mean_ms", 0.0),
                "output_errors": self.output_errors}

    def add_configured_outputs(self):
        """The outputs the unit's configuration lists (device.capture.outputs)."""
        from device.capture.outputs import make_outputs
        outs = make_outputs(self.unit.cfg.get("outputs"), self.header, self.unit.skeleton, self.rate_hz)
        self.outputs.extend(outs)
        self._owned = getattr(self, "_owned", []) + outs
        return outs

    def close(self):
        for out in getattr(self, "_owned", []):
            try:
                out.close()
            except Exception:
                self.output_errors += 1
        # each released even when one before it fails (a card pulled mid-run: the recording's
        # last sync raises OSError; the buses and the unit's threads are closed all the same),
        # the first failure raised after
        first = None
        for part in (self.writer, self._record_file, self.raw_log, self.unit):
            if part is None:
                continue
            try:
                part.close()
            except Exception as e:
                first = first or e
        if first is not None:
            raise first

    def truth_values(self):
        """(F, ndof) true joint values, one row per captured frame (simulated subject only)."""
        return np.array(self.truth) if self.truth else np.zeros((0, self.unit.skeleton.ndof))
