"""The single-problem IK as the oracle of the batched one (device/body/ik_batch.py).

    from tests.ik_oracle import single_steps
    steps = single_steps(sk, names, Rt, seeds_dof, Q_si)   # [(q_new, step, residual)] per seed

One IKProblem per seed (the same orientation targets, weight 1, the seed as its prior at
prior_weight), one damped least squares step from Q[b]: what OrientationIKBatch.iterate must
give for every seed.
"""

from device.body.ik import IKProblem


def single_steps(sk, names, Rt, seeds, Q, prior_weight=0.02):
    out = []
    for b in range(len(Q)):
        p = IKProblem(sk, orientations=dict(zip(names, Rt)), orientation_weight=1.0,
                      q_prior=seeds[b], prior_weight=prior_weight)
        out.append(p.iterate(Q[b]))
    return out
