def simulated():
    return {}
