"""What runs on the capture unit: body model, estimator, sensors, capture loop, servo drivers.

    from device.body.human import human_model
    sk = human_model(); sk.ndof   # 48
"""
