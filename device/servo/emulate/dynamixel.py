"""Dynamixel Protocol 2.0 bus emulator (X series control table): CRC-16 and stuffing checked,
ping/read/write/sync write/sync read/bulk write/reboot, status replies (not to broadcasts except
ping and sync read), torque enable, and the Bus Watchdog (98) as the e-manual gives it
(ROBOTIS-GIT/emanual 01a2df1, _includes/en/dxl/control_table_buswatchdog.md): with torque on and
no instruction packet on the bus (to any id) for N x 20 ms the servo stops where it is (no
profile), 98 reads -1, the Goal values (PWM 100, Current 102, Velocity 104, Position 116) turn
read-only, so a write to them is refused with Data Range Error, and only writing 0 to 98 clears
the error (a non-zero write while tripped is refused too: the manual documents only 0 as
clearing). On a body with a clock hook (a physics twin's attach_sensor) the servo stops at the
step its timeout ends, whoever is feeding the bus; otherwise at the next packet or tick(). As the
XM430: in position mode (Operating Mode 3) a Goal Position outside Min..Max Position Limit
(0..4095) is refused with Data Limit Error, and the EEPROM (below 64) is locked while torque is on.

    emu = DynamixelEmulator(ids=(1, 2)); emu.feed(dx.write(1, 64, 1, 1) + dx.write(1, 116, 4, 2048))
    emu.positions[1] == 2048

With imu_id (the OP3's 200) an OpenCR board shares the bus (emulate/opencr.py): it answers
ping, read and its share of a sync read with the body's IMU in its registers.

With a body (base.py): Goal Position, Torque Enable, Profile Velocity/Acceleration and the
Position P/D Gains go to it; Present Position, Present Velocity, Present Current and Moving
are read from it before each read reply.

A power cut (base.py: power_off/power_on, schedule_power_cut): while off and for BOOT_S after
the power returns no servo answers or acts (an OpenCR board on the bus is as silent; its own
power-up, the IMU's calibration, is not replayed); each servo's joint goes limp at the cut. Back, the RAM area is at the e-manual's initial values
(XM430-W350 control table, ROBOTIS-GIT/emanual docs/en/dxl/x/xm430-w350.md: "Initial Values in
the RAM area are restored when the DYNAMIXEL is turned on"; ROBOTIS on DynamixelSDK issue 282:
a power cycle resets the control table, the servo does not move until set up again): Torque
Enable 0, Bus Watchdog 0 (a tripped one cleared), Profile Acceleration/Velocity 0, Hardware
Error Status 0, the gains at their defaults; the EEPROM (below 64) is kept. Goal Position has no
initial value in the e-manual ("-"): the twin takes the present position (assumed), so a torque
on after the boot holds where the joint lies.
"""

import struct

from device.servo import dynamixel as dx
from device.servo.emulate.base import Emulator

MODEL_XM430 = 1020
MOVING_THRESHOLD = 24
OPERATING_MODE = 11
POSITION_MODE = 3
MAX_POSITION_LIMIT = 48
MIN_POSITION_LIMIT = 52
DATA_RANGE_ERROR = 0x04             # status error: a Goal value written while the watchdog tripped
DATA_LIMIT_ERROR = 0x06             # status error: the data exceeds the limit value
ACCESS_ERROR = 0x07                 # status error: e.g. an EEPROM write while torque is on
EEPROM_END = 64                     # addresses below: EEPROM, locked while torque is on
POSITION_D_GAIN = 80
POSITION_P_GAIN = 84
MOVING = 122
PRESENT_CURRENT = 126
PRESENT_VELOCITY = 128
RPM_UNIT = 0.229                    # Profile Velocity / Present Velocity unit (rev/min)
RPM2_UNIT = 214.577                 # Profile Acceleration unit (rev/min^2)
CURRENT_UNIT_MA = 2.69              # Present Current unit
STALL_CURRENT_MA = 2100.0           # XM430-W350 at 11.1 V (e-manual; 2.3 A at 12 V)
WATCHDOG_ERROR = 0xFF               # Bus Watchdog (98) once tripped: -1 (int8)
HARDWARE_ERROR_STATUS = dx.HARDWARE_ERROR_STATUS  # RAM: bit 0 input voltage, 2 overheating, 3 motor encoder,
                                    # 4 electrical shock, 5 overload (XM430-W350 e-manual)
ALERT = 0x80                        # status error bit 7: a hardware error stands (e-manual 2.0)
GOAL_VALUES = (100, 108)            # Goal PWM 100 .. Goal Position 116 + 4 (Profiles 108..115
GOAL_POSITION_END = 120             # are not Goal values: writable while tripped)


# power back -> answering: assumed 0.5 s. The e-manual gives no figure; an XC330 is silent
# about 0.4 s after a REBOOT (a user's measurement, ROBOTIS-GIT/emanual issue 1698), rounded up
BOOT_S = 0.5
# the RAM area's initial values (XM430-W350 control table): address -> (size, value)
RAM_DEFAULTS = {dx.TORQUE_ENABLE: (1, 0), 65: (1, 0), 68: (1, 2), 69: (1, 0), 70: (1, 0),
                76: (2, 1920), 78: (2, 100), POSITION_D_GAIN: (2, 0), 82: (2, 0),
                POSITION_P_GAIN: (2, 800), 88: (2, 0), 90: (2, 0), dx.BUS_WATCHDOG: (1, 0),
                dx.PROFILE_ACCELERATION: (4, 0), dx.PROFILE_VELOCITY: (4, 0), MOVING: (1, 0),
                123: (1, 0)}


class DynamixelEmulator(Emulator):
    NAME = "dynamixel"
    UNITS = "units"
    BOOT_S = BOOT_S

    def __init__(self, ids=tuple(range(1, 21)), clock=None, body=None, imu_id=None):
        Emulator.__init__(self, clock, deg_per_unit=360.0 / 4096, centre=2048, body=body)
        self.boards = {}
        if imu_id is not None:
            # the OP3's OpenCR board on the same bus, its IMU from the body (emulate/opencr.py)
            from device.servo.emulate.opencr import OpenCRBoard
            self.boards[imu_id] = OpenCRBoard(imu_id, body)
        self.tables = {}
        for i in ids:
            t = bytearray(256)
            struct.pack_into("<H", t, 0, MODEL_XM430)
            t[6] = 46
            t[7] = i
            struct.pack_into("<i", t, 116, 2048)
            struct.pack_into("<i", t, 132, 2048)
            struct.pack_into("<I", t, MOVING_THRESHOLD, 10)         # X series defaults
            struct.pack_into("<H", t, POSITION_P_GAIN, 800)
            t[OPERATING_MODE] = POSITION_MODE
            struct.pack_into("<i", t, MAX_POSITION_LIMIT, 4095)
            struct.pack_into("<i", t, MIN_POSITION_LIMIT, 0)
            self.tables[i] = t
        self.buf = b""
        self.last_packet = self.clock()
        self.watchdog_tripped = set()
        self._rebooting = {}            # sid -> when it answers again after a REBOOT
        self._wd_min_s = None           # the shortest armed timeout (torque on), None: none armed
        attach = getattr(body, "attach_sensor", None)
        if attach is not None:
            attach(self._watch_step)

    def status_packets(self, reply):
        """How many status packets a reply holds (each servo waits its Return Delay Time before
        its own: PtyServer's pacing). The stuffing keeps the header out of the parameters (a
        CRC after parameters ending FF FF may mimic it: one delay too many, never too few)."""
        return reply.count(dx.HEADER)

    def _feed(self, data):
        self.buf += data
        out = b""
        while True:
            i = self.buf.find(dx.HEADER)
            if i < 0:
                self.buf = self.buf[-3:]
                return out
            b = self.buf[i:]
            if len(b) < 10:
                self.buf = b
                return out
            n = b[5] | (b[6] << 8)
            if n < 3 or n > 1000:
                self.errors += 1
                self.buf = b[4:]
                continue
            if len(b) < 7 + n:
                self.buf = b
                return out
            pkt = b[:7 + n]
            self.buf = b[7 + n:]
            if dx.crc16_buypass(pkt[:-2]) != (pkt[-2] | (pkt[-1] << 8)):
                self.errors += 1
                continue
            now = self.clock()
            # the silence before this packet may have tripped a watchdog (no clock hook)
            self._trip_due(now)
            self.last_packet = now
            out += self._run(pkt[4], pkt[7], dx.unstuff(pkt[8:-2]))

    def _ids(self, sid):
        return sorted(self.tables) if sid == dx.BROADCAST else ([sid] if sid in self.tables else [])

    def _write(self, sid, addr, data):
        """Write data at addr; the status error (0, or DATA_LIMIT_ERROR when a Goal Position
        outside Min..Max Position Limit in position mode is refused, ACCESS_ERROR for an EEPROM
        write while torque is on: nothing is written)."""
        t = self.tables[sid]
        if addr < EEPROM_END and t[dx.TORQUE_ENABLE]:
            self.errors += 1
            return ACCESS_ERROR
        if t[HARDWARE_ERROR_STATUS] and addr <= dx.TORQUE_ENABLE < addr + len(data) \
                and data[dx.TORQUE_ENABLE - addr]:
            # a shut-down servo keeps its torque off until a REBOOT (or a power cycle) clears
            # Hardware Error Status (e-manual: Shutdown (63), Hardware Error Status (70))
            self.errors += 1
            return ACCESS_ERROR
        if addr <= dx.GOAL_POSITION and addr + len(data) >= dx.GOAL_POSITION + 4 \
                and t[OPERATING_MODE] == POSITION_MODE:
            g = struct.unpack_from("<i", bytes(data), dx.GOAL_POSITION - addr)[0]
            if not (struct.unpack_from("<i", t, MIN_POSITION_LIMIT)[0] <= g
                    <= struct.unpack_from("<i", t, MAX_POSITION_LIMIT)[0]):
                self.errors += 1
                return DATA_LIMIT_ERROR
        end = addr + len(data)
        if sid in self.watchdog_tripped:
            clears = addr <= dx.BUS_WATCHDOG < end and data[dx.BUS_WATCHDOG - addr] == 0
            goals = (addr < GOAL_VALUES[1] and end > GOAL_VALUES[0]) or \
                (addr < GOAL_POSITION_END and end > dx.GOAL_POSITION)
            if (goals and not clears) or (addr <= dx.BUS_WATCHDOG < end and not clears):
                # read-only Goal values, or 98 written other than 0: Data Range Error
                self.errors += 1
                return DATA_RANGE_ERROR
            if clears:
                self.watchdog_tripped.discard(sid)
        if addr <= dx.GOAL_POSITION < end and end >= dx.GOAL_POSITION + 4:
            if not t[dx.TORQUE_ENABLE]:
                data = data[:dx.GOAL_POSITION - addr]   # ignored goal (torque off)
        t[addr:addr + len(data)] = data
        if addr <= dx.BUS_WATCHDOG < end or addr <= dx.TORQUE_ENABLE < end:
            self._arm_state()
        if addr <= dx.TORQUE_ENABLE < addr + len(data) and not t[dx.TORQUE_ENABLE]:
            self.record(sid, None)
        if addr <= dx.GOAL_POSITION and addr + len(data) >= dx.GOAL_POSITION + 4:
            g = struct.unpack_from("<i", t, dx.GOAL_POSITION)[0]
            if self.body is None:
                struct.pack_into("<i", t, dx.PRESENT_POSITION, g)
            self.record(sid, g)
        if self.body is not None and (addr <= dx.TORQUE_ENABLE < end
                                      or addr < dx.GOAL_POSITION + 4 and end > POSITION_D_GAIN):
            self._drive(sid)
        return 0

    def _drive(self, sid):
        """Goal, torque, profile and gains to the body (velocity in units/s, accel units/s^2)."""
        t = self.tables[sid]
        goal = struct.unpack_from("<i", t, dx.GOAL_POSITION)[0]
        vel = struct.unpack_from("<I", t, dx.PROFILE_VELOCITY)[0] * RPM_UNIT * 4096 / 60.0
        acc = struct.unpack_from("<I", t, dx.PROFILE_ACCELERATION)[0] * RPM2_UNIT * 4096 / 3600.0
        p = struct.unpack_from("<H", t, POSITION_P_GAIN)[0]
        d = struct.unpack_from("<H", t, POSITION_D_GAIN)[0]
        self.body.set_goal(sid, goal, vel, bool(t[dx.TORQUE_ENABLE]), acc, p, d)

    def _sense(self, sid):
        """Present Position / Velocity / Current and Moving from the body."""
        r = self.body_state(sid)
        if r is None:
            return
        t = self.tables[sid]
        pos, load, moving, vel = r
        struct.pack_into("<i", t, dx.PRESENT_POSITION, int(pos))
        cur = 0 if load is None else int(round(load * STALL_CURRENT_MA / CURRENT_UNIT_MA))
        struct.pack_into("<h", t, PRESENT_CURRENT, max(-32768, min(32767, cur)))
        if vel is not None:
            struct.pack_into("<i", t, PRESENT_VELOCITY, int(round(vel * 60.0 / 4096 / RPM_UNIT)))
        t[MOVING] = 1 if moving else 0

    def hardware_error(self, sid, bits=0x20):
        """Servo sid shuts itself down now (its Shutdown (63) bits: default overload, 0x20):
        Hardware Error Status set, torque off, its joint limp; every status it sends carries
        the Alert bit; Torque Enable stays 0 until a REBOOT or a power cycle."""
        with self.lock:
            t = self.tables[sid]
            t[HARDWARE_ERROR_STATUS] |= bits & 0xFF
            t[dx.TORQUE_ENABLE] = 0
            self.record(sid, None)
            if self.body is not None:
                self._drive(sid)
            self._arm_state()

    def _alert(self, sid, err=0):
        """A status error byte: err, with the Alert bit while a hardware error stands."""
        return err | (ALERT if self.tables[sid][HARDWARE_ERROR_STATUS] else 0)

    def _deaf(self, sid):
        """True while servo sid reboots (a REBOOT's BOOT_S: it hears and answers nothing)."""
        until = self._rebooting.get(sid)
        if until is None:
            return False
        if self.clock() >= until:
            del self._rebooting[sid]
            return False
        return True

    def _run(self, sid, inst, p):
        out = b""
        if sid in self.boards:
            return self.boards[sid].run(sid, inst, p)
        if sid in self.tables and self._deaf(sid):
            return out
        if inst == dx.PING:
            for s in self._ids(sid):
                if self._deaf(s):
                    continue
                out += dx.status(s, self._alert(s), struct.pack("<HB", struct.unpack_from("<H", self.tables[s])[0], 46))
            if sid == dx.BROADCAST:
                for b in sorted(self.boards):
                    out += self.boards[b].run(b, inst, p)
        elif inst == dx.READ and len(p) == 4 and sid in self.tables:
            a, n = struct.unpack("<HH", p)
            self._sense(sid)
            out += dx.status(sid, self._alert(sid), bytes(self.tables[sid][a:a + n]))
        elif inst == dx.WRITE and len(p) >= 3:
            a = p[0] | (p[1] << 8)
            err = 0
            for s in self._ids(sid):
                if not self._deaf(s):
                    err = self._write(s, a, p[2:])
            if sid != dx.BROADCAST and sid in self.tables:
                out += dx.status(sid, self._alert(sid, err))
        elif inst == dx.SYNC_WRITE and len(p) >= 4:
            a, n = struct.unpack_from("<HH", p)
            k = 4
            while k + 1 + n <= len(p):
                if p[k] in self.tables and not self._deaf(p[k]):
                    self._write(p[k], a, p[k + 1:k + 1 + n])
                k += 1 + n
        elif inst == dx.SYNC_READ and len(p) >= 4:
            a, n = struct.unpack_from("<HH", p)
            for s in p[4:]:
                if s in self.tables:
                    if self._deaf(s):
                        continue
                    self._sense(s)
                    out += dx.status(s, self._alert(s), bytes(self.tables[s][a:a + n]))
                elif s in self.boards:
                    out += self.boards[s].read(a, n)
        elif inst == dx.BULK_WRITE:
            k = 0
            while k + 5 <= len(p):
                s = p[k]
                a, n = struct.unpack_from("<HH", p, k + 1)
                if s in self.tables and not self._deaf(s):
                    self._write(s, a, p[k + 5:k + 5 + n])
                k += 5 + n
        elif inst == dx.REBOOT and sid in self.tables:
            # the status first, then the servo restarts: its RAM at the initial values (the
            # hardware error cleared), deaf for BOOT_S (as after a power cut, assumed the same)
            out += dx.status(sid, self._alert(sid))
            if self.tables[sid][dx.TORQUE_ENABLE]:
                self.record(sid, None)
            self._boot_servo(sid)
            self._rebooting[sid] = self.clock() + self.BOOT_S
            self._arm_state()
        return out

    def close(self):
        """The emulator discarded: its boards and its watchdog leave the body
        (host/physics/twin.py detach_sensor)."""
        for b in self.boards.values():
            b.close()
        detach = getattr(self.body, "detach_sensor", None)
        if detach is not None:
            detach(self._watch_step)
        Emulator.close(self)

    def _lose_power(self):
        """Every servo unpowered: its joint limp (the motor driver off), no watchdog left."""
        self._limp_all(dx.TORQUE_ENABLE)
        self.watchdog_tripped.clear()
        self._arm_state()

    def _boot(self):
        """The power back: every servo's RAM area at its initial values, Goal Position at
        the present position (the joint where it fell), torque off."""
        for s in self.tables:
            self._boot_servo(s)
        self._rebooting.clear()
        self.watchdog_tripped.clear()
        self._arm_state()

    def _boot_servo(self, s):
        """Servo s starts: its RAM area at the initial values (torque off, no hardware error),
        Goal Position at the present position (the joint where it fell)."""
        t = self.tables[s]
        self._sense(s)
        for addr, (size, value) in RAM_DEFAULTS.items():
            t[addr:addr + size] = value.to_bytes(size, "little")
        t[dx.GOAL_POSITION:dx.GOAL_POSITION + 4] = t[dx.PRESENT_POSITION:dx.PRESENT_POSITION + 4]
        self.watchdog_tripped.discard(s)
        if self.body is not None:
            self._drive(s)

    def _arm_state(self):
        """The shortest timeout armed (98 in 1..127, torque on, not tripped), in seconds."""
        armed = [t[dx.BUS_WATCHDOG] * 0.02 for s, t in self.tables.items()
                 if 0 < t[dx.BUS_WATCHDOG] < 128 and t[dx.TORQUE_ENABLE] and s not in self.watchdog_tripped]
        self._wd_min_s = min(armed) if armed else None

    def _watch_step(self, body):
        """After every physics step: a watchdog whose timeout ran out stops its servo now. The
        twin's lock is held here; the emulator's is only tried (a feed in another thread holds
        it, and waits for the twin's): taken, the trip is now, else at the next step."""
        if self._wd_min_s is None or self.clock() - self.last_packet <= self._wd_min_s:
            return
        if self.lock.acquire(False):
            try:
                self._trip_due(self.clock())
            finally:
                self.lock.release()

    def _trip_due(self, now):
        """Trip every armed watchdog whose timeout the bus's silence up to now has passed."""
        if self._wd_min_s is None:
            return
        quiet_s = now - self.last_packet
        if quiet_s <= self._wd_min_s:
            return
        for s, t in self.tables.items():
            wd = t[dx.BUS_WATCHDOG]
            if 0 < wd < 128 and t[dx.TORQUE_ENABLE] and s not in self.watchdog_tripped and quiet_s > wd * 0.02:
                self.watchdog_tripped.add(s)
                t[dx.BUS_WATCHDOG] = WATCHDOG_ERROR
                self.errors += 1
                self._sense(s)
                here = struct.unpack_from("<i", t, dx.PRESENT_POSITION)[0]
                if self.body is not None:         # stops where it is, profiles as 0
                    self.body.set_goal(s, here, 0.0, True)
                self.record(s, here)
        self._arm_state()

    def tick(self):
        """Apply the bus watchdog now (an emulator without a clock hook: the pty server's loop):
        servos with torque on and a watchdog set stop when the bus was silent longer than their
        setting."""
        with self.lock:
            self._power_due(self.clock())
            self._trip_due(self.clock())
            self.changed.notify_all()

    def to_deg(self, servo, units):
        return float("nan") if units is None else (units - self.centre) * self.deg_per_unit
