"""A simulated humanoid on a live link: the product's LinkBridge -> the robot's real driver ->
its controller emulator -> the MuJoCo twin, all on the link's clock.

    end = TwinEnd("op3-dynamixel", clock=lambda: sim[0])
    end.step(bytes_from_the_link)      # the same bytes the demo's robot end gets (it listens:
                                       # its REQUESTs go nowhere, the header repeats every 1 s)
    end.sample()                       # once per frame: the body's state for the GIF
    end.run                            # host.physics.simulate.Run: .qpos, .times_s, .report
    end.summary()                      # fell, fall_time_s, frames driven, tracking, ...

The live link carries the person's joint angles. With mapping="pose" (the default) the
bridge hands each decoded frame to host.retarget.live.LiveRetargeter (pose retargeting with
balance, frame by frame) and the player gets the servos' angles; on a robot with a bus IMU
(the OP3's OpenCR board) the bridge reads it on the same driver and bus, as on the robot, and
the emulator's board answers with what the firmware would hold (imu=False: no feedback; a
robot whose description names no bus IMU gets none either); mapping="human" copies rows joint
for joint with the description's row map (on a humanoid: what that does to balance).

    end = TwinEnd("op3-dynamixel", clock, mapping="human")    # the row copy

The robot's computer thinks before it writes: each retargeted frame and each balance tick
costs its CPU time on the twin's clock (PLAN_CPU_S before a step reads the IMU, STEP_AFTER_CPU_S
after it, IDLE_CPU_S after the send, TICK_CPU_S a tick), the body moving on under the last command meanwhile, so a frame's
servo bytes leave after the IK, and the IMU sample is as old as the feedback's own compute.
"""

import numpy as np

from host.physics.simulate import FALL_HEIGHT_FRAC, FALL_TILT_DEG, FootSlip, Run

# fixed (deterministic) figures: about the p99 of this machine's CPU time per call, measured
# by benchmarks/robot_end_cpu.py (docs/benchmarks/robot_end_cpu.txt), with the OP3's own
# computer (an Intel NUC i3) taken as fast as this one: an assumption, not measured. A
# Raspberry Pi 4 as the robot's computer is about 9x slower (that table's formula column): the
# live IK would not keep up at 30 fps there.
PLAN_CPU_S = 0.011          # a step up to its IMU read: the IK and the balance plan
STEP_AFTER_CPU_S = 0.002    # the rest of it: the feedback on that read
IDLE_CPU_S = 0.002          # after the send: the pose error's bookkeeping (idle())
TICK_CPU_S = 0.001          # a balance tick between frames


class _Thinking:
    """A retargeter whose calls take the robot computer's time on the twin's clock: a step's
    plan before its IMU read, the rest after it; a tick after its own read (its compute is
    the feedback's)."""

    def __init__(self, retargeter, twin):
        self._r = retargeter
        self._twin = twin
        self._t_s = 0.0
        self._owed_s = 0.0
        imu = getattr(retargeter, "imu", None)
        if imu is not None:
            def read():
                # the plan computed before this read has taken its time: the sample is now's
                self._think(self._owed_s)
                self._owed_s = 0.0
                return imu()
            read.source = imu                   # (the reader it times: the bridge's bus IMU)
            retargeter.imu = read

    def _think(self, cost_s):
        # the CPU's own time line (exact, not rounded to the physics steps), the body follows it
        if cost_s > 0.0:
            tw = self._twin
            # from the twin's time if it moved on past this line (the link's time), else from
            # this line's exact time (the twin's is rounded to its physics steps)
            base = self._t_s if self._t_s > tw.time_s - 0.5 * tw.dt_s else tw.time_s
            self._t_s = base + cost_s
            tw.advance_to(self._t_s)

    def step(self, values, t_s):
        self._owed_s = PLAN_CPU_S
        try:
            out = self._r.step(values, t_s)
        finally:
            owed, self._owed_s = self._owed_s, 0.0
        self._think(owed + STEP_AFTER_CPU_S)
        return out

    def tick(self, now_s):
        tick = getattr(self._r, "tick", None)          # (optional, as the bridge has it)
        out = None if tick is None else tick(now_s)
        if out is not None:
            self._think(TICK_CPU_S)
        return out

    def idle(self):
        idle = getattr(self._r, "idle", None)
        if idle is None:
            return
        pending = getattr(self._r, "_pending", None) is not None
        idle()
        if pending:
            self._think(IDLE_CPU_S)

    def __getattr__(self, name):
        return getattr(self._r, name)


class TwinEnd:
    def __init__(self, robot_name, clock, seed=0, mapping="pose", fps=30.0, imu=True):
        from device.servo.drivers import open_driver
        from device.servo.emulate import make_emulator
        from host.physics.simport import REPLY_DELAY_S, USB_S, SimPort
        from host.physics.twin import Twin
        self.clock = clock
        self.twin = Twin(robot_name, seed=seed)
        rm = self.twin.rm
        desc = rm.description
        kw = {"clock": self.twin.clock, "body": self.twin}
        if desc.controller in ("dynamixel", "feetech"):
            kw["ids"] = self.twin.ids
        if getattr(desc, "imu", None):
            kw["imu_id"] = desc.imu["id"]          # the OP3's OpenCR board on the servos' bus
        self.emu = make_emulator(desc.controller, **kw)
        self.port = SimPort(self.emu, self.twin, desc.baud, REPLY_DELAY_S.get(desc.controller, 0.0),
                            usb_s=USB_S.get(desc.controller, 0.0))
        self.driver = open_driver(desc.controller, self.port, clock=self.port.clock, **dict(desc.options))
        from host.robot_link import open_link_end
        # the robot end a robot's computer runs (motionstaff follow), on the twin's driver
        self.end = open_link_end(desc, self.driver, clock, mapping=mapping, imu=imu, fps=fps)
        self.mapping = self.end.mapping
        self.bridge = self.end.bridge
        made = self.bridge.retarget
        if made is not None:
            # each header's retargeter, as the robot's computer runs it: in its CPU time
            def thinking(names, imu):
                r = made(names, imu)
                return None if r is None else _Thinking(r, self.twin)
            self.bridge.retarget = thinking
        # the robot switched on before the link: it stands at home until its OpenCR board
        # answers and its standing reference is taken (the twin's time runs on meanwhile;
        # the link's clock starts after)
        self.end.power_up(self.twin.advance)
        self.boot_s = self.port.clock()         # (the port's: its last wait may end within a step)
        self.run = Run()
        self.run.robot = rm
        self.fall_s = None
        self.slip = FootSlip(self.twin) if rm.humanoid else None
        self.selfc = 0
        self._pending = b""
        self.blocked_steps = 0                  # steps the robot end was still in a bus wait
        self.t0 = clock()

    def step(self, data):
        """The link's bytes now to the robot end, the body moved on with the link's time (after
        its power-up's boot_s). A robot end still in a bus wait (a read waiting out a packet
        timeout put the port's clock past this step's time) does not run this step: its bytes
        wait in the link's buffer for the next step it runs (counted in blocked_steps), as a
        loop blocked in a read on the robot misses its turns."""
        self._pending += data
        t = self.clock() - self.t0 + self.boot_s
        if self.port.clock() > t + 1e-9:
            self.blocked_steps += 1
            return
        self.twin.advance_to(t)
        data, self._pending = self._pending, b""
        self.end.step(data)

    def sample(self):
        tw = self.twin
        t = round(self.clock() - self.t0, 5)
        self.run.times_s.append(t)
        self.run.qpos.append(tw.data.qpos.copy())
        if self.fall_s is None and (tw.torso_height_m() < FALL_HEIGHT_FRAC * tw.rm.standing_height_m
                                    or tw.tilt_deg() > FALL_TILT_DEG):
            self.fall_s = t
        selfc, feet = tw.contacts()
        self.selfc += bool(selfc)
        if self.slip is not None and self.fall_s is None:
            self.slip.observe(feet)             # (until a fall: a body on the floor slides)

    @property
    def retargeter(self):
        return self.end.retargeter

    def summary(self):
        b = self.bridge
        return {"robot": self.twin.rm.name, "frames_sampled": len(self.run.times_s),
                "sim_s": round(self.twin.time_s, 3), "fell": self.fall_s is not None,
                "blocked_steps": self.blocked_steps,
                "fall_time_s": self.fall_s, "self_collision_frames": self.selfc,
                "foot_slip_mm": None if self.slip is None else round(1000.0 * self.slip.slip_m, 2),
                "bridge": dict(getattr(b, "counts", {})),
                "imu_reads": dict(b.bus_imu.stats) if getattr(b, "bus_imu", None) is not None else None,
                "torque_saturated_frac": round(self.twin.sat_steps / float(max(1, self.twin.on_steps)), 5),
                "mapping": "pose" if self.mapping == "pose" else
                getattr(self.twin.rm.description, "mapping_used", None),
                "pose_error_deg": self._pose_error(),
                "infeasible": list(self.retargeter.infeasible) if self.retargeter is not None else []}

    def _pose_error(self):
        """Median angle between the person's and the robot's segments, over the frames driven."""
        r = self.retargeter
        if r is not None:
            e = r.pose_error_deg()
            return None if e is None else round(e, 3)
        return None

    def finish(self, fps):
        class _Fps:
            pass
        st = _Fps()
        st.fps = fps
        self.run.staff = st
        self.run.report = self.summary()
        self.run.times_s = list(np.asarray(self.run.times_s) - (self.run.times_s[0] if self.run.times_s else 0))
        return self.run

    def close(self):
        try:
            self.bridge.close()
        except OSError:
            pass
        close = getattr(self.emu, "close", None)
        if close is not None:
            close()                             # its OpenCR board off the twin
