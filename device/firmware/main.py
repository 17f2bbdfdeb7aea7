"""Board entry point: MicroPython runs /main.py at boot; `motionstaff deploy --receiver` copies this.

    # /main.py on the Pico
    from device.firmware.receiver import main
    main("/receiver.json")
"""

from device.firmware.receiver import main

main("/receiver.json")
