"""The servo receiver firmware for a MicroPython board (Raspberry Pi Pico): UART in, PWM out.

    from device.firmware.receiver import Receiver, main
    main()        # on the board: reads /receiver.json, runs forever (main.py does this)
"""
