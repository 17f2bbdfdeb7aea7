"""Servo controllers: drivers producing each vendor's exact bytes, robot descriptions, limiter.

    from device.servo import drivers
    drv = drivers.open_driver("maestro", "/dev/ttyACM0")      # or a pty path, loop://, spy://
    drv.send_positions([(0, 6000), (1, 6400)])                 # (channel or id, controller units)

Drivers: maestro, ssc32, pca9685, lx16a, dynamixel, feetech (sts/scs), native (our FRAME packets).
"""
