"""Inverse dynamics of driven coordinates and joint reaction wrenches, against closed forms.

The Sharma & Saha two-link arm (cases/sharma_saha_arm.py) with both joints driven: flexmb's
drive torques must equal the Lagrange equations built on eq. (8), and the elbow reaction must
equal a free-body balance of link 2 written here from the closed-form kinematics.
"""

import numpy as np
from conftest import load_case

from flexmb.solvers.simulate import simulate

arm = load_case("sharma_saha_arm")

P = {**arm.DEFAULTS, "m1": 1.3, "m2": 0.7, "a1": 0.9, "a2": 1.1, "t_end": 1.0, "dt": 2e-3}


def run():
    model = arm.build(**P)
    return model, simulate(model, P["t_end"], P["dt"], rho_inf=1.0)


def test_drive_torques_equal_closed_form_lagrange_equations():
    model, res = run()
    assert res.status == "finished"
    ref = arm.closed_form_torques(P, res.q, res.u, res.udot)
    # the motion is prescribed exactly, so only round-off separates the two
    assert np.abs(res.drive_forces - ref).max() <= 1e-10 * np.abs(ref).max()
    # the driven coordinates follow their functions exactly
    th1, th2 = arm.trajectories(P)
    assert np.allclose(res.coordinate("joint1.q"), [th1(t) for t in res.t], atol=1e-13)


def test_elbow_reaction_equals_free_body_balance_of_link2():
    model, res = run()
    m2, a1, a2, g = P["m2"], P["a1"], P["a2"], P["g"]
    th, thd, thdd = res.q, res.u, res.udot
    t1, t12 = th[:, 0], th[:, 0] + th[:, 1]
    w1, w12 = thd[:, 0], thd[:, 0] + thd[:, 1]
    al1, al12 = thdd[:, 0], thdd[:, 0] + thdd[:, 1]

    def acc(r, ang, w, al):  # acceleration of a point at distance r along angle ang
        e = np.stack([np.cos(ang), np.sin(ang)], 1)
        n = np.stack([-np.sin(ang), np.cos(ang)], 1)
        return r * (al[:, None] * n - (w**2)[:, None] * e)

    a_com2 = acc(a1, t1, w1, al1) + acc(a2 / 2, t12, w12, al12)
    F = m2 * (a_com2 - np.array([0, -g]))  # force the elbow exerts on link 2
    r = (a2 / 2) * np.stack([np.cos(t12), np.sin(t12)], 1)  # elbow -> centre of mass
    Mz = m2 * a2**2 / 12 * al12 + (r[:, 0] * F[:, 1] - r[:, 1] * F[:, 0])
    R = res.reaction("joint2")
    scale = np.abs(F).max()
    assert np.abs(R[:, :2] - F).max() <= 1e-10 * scale
    assert np.abs(R[:, 2]).max() <= 1e-10 * scale  # planar: no out-of-plane force
    assert np.abs(R[:, 5] - Mz).max() <= 1e-10 * np.abs(Mz).max()
    # the reaction's moment about the joint axis is the joint's drive torque
    assert np.allclose(R[:, 5], res.drive_force("joint2.q"), rtol=0, atol=1e-10 * np.abs(Mz).max())


def test_energy_balance_of_driven_motion():
    model, res = run()
    e = res.energy
    # kinetic + potential changes equal the drives' work (trapezoidal quadrature, O(h^2))
    drift = np.abs(res.total_energy - res.total_energy[0]).max()
    assert drift <= 1e-4 * np.abs(e["drive_work"]).max()
