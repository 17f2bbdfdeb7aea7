"""NXP PCA9685 16-channel PWM over I2C (machine.I2C-style bus: writeto_mem / readfrom_mem_into).

    from device.servo.pca9685 import PCA9685
    pca = PCA9685(bus, address=0x40, osc_hz=25_000_000)   # osc_hz: this board's calibration
    pca.init(50)              # W 00 10 | W FE 79 | W 00 20 | W 00 A0  (sleep, prescale, AI, restart)
    pca.send_positions([(0, 1500), (1, 1000)])   # pulse widths in us, one write per channel run
    # channel 16..31 is channel 0..15 of the next board (address + 1), and so on
    pca.all_off()             # W FA 00 00 00 10: every output stops (failsafe)

Units are microseconds of pulse; counts = round(us * osc_hz / ((prescale + 1) * 4096 * 1e6))
use the board's calibrated oscillator. Auto-increment is set once; consecutive channels go in
one transaction. The chip has no watchdog: the player's failsafe calls all_off().
"""

from device.servo.base import Driver

MODE1 = 0x00
MODE2 = 0x01
LED0_ON_L = 0x06
ALL_LED_ON_L = 0xFA
ALL_LED_OFF_H = 0xFD
PRE_SCALE = 0xFE
MODE1_RESTART = 0x80
MODE1_AI = 0x20
MODE1_SLEEP = 0x10
FULL = 0x1000
OSC_HZ = 25000000


def prescale_for(freq_hz, osc_hz=OSC_HZ):
    """round(osc / (4096 f)) - 1, clamped to the chip's 3..255."""
    p = int(osc_hz / (4096.0 * freq_hz) + 0.5) - 1
    return max(3, min(255, p))


def led_bytes(on, off):
    return bytes((on & 0xFF, (on >> 8) & 0x1F, off & 0xFF, (off >> 8) & 0x1F))


class PCA9685(Driver):
    NAME = "pca9685"
    UNITS = "us"

    def __init__(self, bus, address=0x40, osc_hz=OSC_HZ, freq_hz=50, sleep_us=None):
        Driver.__init__(self, None)
        self.bus = bus
        self.address = address
        self.osc_hz = osc_hz
        self.freq_hz = freq_hz
        self.prescale = prescale_for(freq_hz, osc_hz)
        self._sleep_us = sleep_us or _sleep_us
        self.boards = [address]

    def _w(self, reg, data, address=None):
        self.bus.writeto_mem(self.address if address is None else address, reg, data)
        self.stats["bytes"] += 1 + len(data)

    def init(self, freq_hz=None):
        """Sleep, set PRE_SCALE, wake with auto-increment, wait 500 us, RESTART."""
        if freq_hz is not None:
            self.freq_hz = freq_hz
            self.prescale = prescale_for(freq_hz, self.osc_hz)
        for a in self.boards:
            self._w(MODE1, bytes((MODE1_SLEEP,)), a)
            self._w(PRE_SCALE, bytes((self.prescale,)), a)
            self._w(MODE1, bytes((MODE1_AI,)), a)
        self._sleep_us(500)
        for a in self.boards:
            self._w(MODE1, bytes((MODE1_RESTART | MODE1_AI,)), a)

    def start(self, servos):
        top = max([sid for sid, _ in servos] + [0])
        self.boards = [self.address + k for k in range(top // 16 + 1)]
        self.init()

    def counts_for_us(self, pulse_us):
        period_us = (self.prescale + 1) * 4096 * 1e6 / self.osc_hz
        c = int(pulse_us * 4096 / period_us + 0.5)
        return max(0, min(4095, c))

    def set_counts(self, first, pairs):
        """Consecutive channels from first (same board): (on, off) counts, one transaction."""
        data = b""
        for on, off in pairs:
            data += led_bytes(on, off)
        self._w(LED0_ON_L + 4 * (first % 16), data, self.address + first // 16)

    def encode_positions(self, cmds):
        out = b""
        for first, pairs in self._runs(cmds):
            out += bytes((LED0_ON_L + 4 * (first % 16),)) + b"".join(led_bytes(a, b) for a, b in pairs)
        return out

    def frame_bytes(self, n):
        # one write per 16-channel board: register byte + 4 bytes a channel
        boards = (n + 15) // 16
        return boards + 4 * n

    def _runs(self, cmds):
        cmds = sorted(cmds)
        runs = []
        for ch, us in cmds:
            if us <= 0:
                pair = (0, FULL)                       # full OFF: no pulses
            else:
                pair = (0, self.counts_for_us(us))
            if ch < 0 or ch >= 16 * 8:
                continue                               # no such channel (8 boards at most)
            if runs and runs[-1][0] + len(runs[-1][1]) == ch and ch % 16:
                runs[-1][1].append(pair)
            else:
                runs.append((ch, [pair]))
        return runs

    def send_positions(self, cmds):
        for first, pairs in self._runs(cmds):
            self.set_counts(first, pairs)
        self.stats["frames"] += 1
        self.stats["commands"] += len(cmds)

    def all_off(self):
        for a in self.boards:
            self._w(ALL_LED_ON_L, led_bytes(0, FULL), a)

    def torque_off(self, ids):
        self.all_off()
        return True

    def software_reset(self):
        """SWRST: general call (address 0) with the one data byte 0x06."""
        self.bus.writeto_mem(0x00, 0x06, b"")

    def read_register(self, reg):
        buf = bytearray(1)
        self.bus.readfrom_mem_into(self.address, reg, buf)
        return buf[0]

    def close(self):
        pass


def _sleep_us(us):
    import time
    if hasattr(time, "sleep_us"):
        time.sleep_us(us)
    else:
        time.sleep(us / 1e6)   # the chip's oscillator start-up time, not synchronisation
