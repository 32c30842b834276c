"""Bearing friction and self-locking (Zahariev & Cuadrado §1, §5; cases/bearing_friction_self_locking.py):
an in-line slider-crank near its outer dead centre, pushed through the connecting rod by a force
on the slider, locks with pin friction when the line of action of the rod force passes inside
the friction circles, and moves when it passes outside, or without friction.

The locking angle θ* is computed here independently of the case's friction-circle formula: by
the static equilibrium of the three bodies (massless, incipient motion θ increasing) with the
unknown pin forces R_O, R_A, R_B, the guide's normal force and moment, and the torque M_h that
would hold the crank, each pin's friction couple at its limit ρ |R| opposing the pin's relative
rotation (crank +, rod - relative to crank and slider). Friction holds the mechanism where
M_h >= 0 (the limit couples would push it back): θ* is the root of M_h(θ).
"""

import numpy as np
import pytest
from conftest import load_case
from scipy.optimize import brentq, fsolve

from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.simulate import simulate

case = load_case("bearing_friction_self_locking")
P = case.DEFAULTS
T_RUN = 0.5


def cross2(r, f):
    return r[0] * f[1] - r[1] * f[0]


def holding_torque(theta: float) -> float:
    """M_h: the torque on the crank that keeps it from turning forwards, friction at its limit."""
    a, b, F = P["a"], P["b"], P["P"]
    rho = P["mu"] * P["pin_radius"]
    A = a * np.array([np.cos(theta), np.sin(theta)])
    B = np.array([A[0] + np.sqrt(b * b - A[1] ** 2), 0.0])
    # relative rotations at incipient motion: crank +, rod - (rod angle falls as θ grows),
    # so the coordinates O (crank), A (rod - crank), B (slider - rod) have signs +, -, +
    sO, sA, sB = 1.0, -1.0, 1.0

    def eqs(x):
        RO, RA, RB, N, Mg, Mh = x[0:2], x[2:4], x[4:6], x[6], x[7], x[8]
        # pin couples on the joints' coordinates: -ρ|R| sign(u); on the child +, on the parent -
        tO, tA, tB = -rho * np.linalg.norm(RO) * sO, -rho * np.linalg.norm(RA) * sA, -rho * np.linalg.norm(RB) * sB
        # R_O: ground on crank; R_A: crank on rod; R_B: rod on slider
        crank_f = RO - RA
        crank_m = cross2(A, -RA) + tO - tA + Mh
        rod_f = RA - RB
        rod_m = cross2(B - A, -RB) + tA - tB  # moments about A
        slider_f = RB + np.array([-F, N])
        slider_m = tB + Mg
        return np.concatenate([crank_f, [crank_m], rod_f, [rod_m], slider_f, [slider_m]])

    e = (A - B) / b
    Fr = F / abs(e[0])
    x0 = np.concatenate([Fr * e, Fr * e, Fr * e, [F * e[1] / abs(e[0])], [0.0], [0.0]])  # frictionless guess
    x, info, ok, msg = fsolve(eqs, x0, full_output=True, xtol=1e-13)
    assert ok == 1, msg
    return float(x[8])


@pytest.fixture(scope="module")
def theta_star():
    return brentq(holding_torque, 1e-4, 0.3, xtol=1e-12)


def test_locking_angle_by_hand_equals_the_case_friction_circle_rule(theta_star):
    # sanity of the hand model: without the margin the dead centre itself needs no holding
    assert holding_torque(0.5 * theta_star) > 0 > holding_torque(2 * theta_star)
    assert case.locking_angle(P) == pytest.approx(theta_star, rel=1e-9)
    assert 3 < np.degrees(theta_star) < 7  # ~4.6° for a = 0.1 m, b = 0.3 m, μ r = 4 mm


def turn(theta_deg: float, friction: bool):
    res = simulate(case.build(theta0_deg=theta_deg, friction=friction), T_RUN, P["dt"], rho_inf=P["rho_inf"])
    assert res.status == "finished"
    return res


def test_locks_inside_the_friction_circles_and_moves_outside(theta_star):
    th_lock, th_move = 0.8 * np.degrees(theta_star), 1.25 * np.degrees(theta_star)
    locked = turn(th_lock, True)
    moved = turn(th_move, True)
    free = turn(th_lock, False)
    eps = P["omega_eps"]
    # locked: only the regularisation's creep, a few ω_ε (flexmb/engine/friction.py)
    assert np.abs(locked.u[:, 0]).max() < 10 * eps
    assert abs(locked.coordinate("O.q")[-1]) < 10 * eps * T_RUN
    # outside the circles it accelerates away, and without friction even at the locking angle
    assert moved.coordinate("O.q")[-1] > 0.05 and moved.u[-1, 0] > 100 * eps
    assert free.coordinate("O.q")[-1] > 0.2
    # the pins carry the push (bad transmission angle): |R_O| ≈ P
    assert np.linalg.norm(locked.reaction("O")[-1, :2]) == pytest.approx(P["P"], rel=0.01)
    # Newton converges while pins stick and slide (secant slope in the iteration matrix)
    for r in (locked, moved):
        assert r.stats["newton_iterations"] / r.stats["steps"] < 6
    # friction's dissipation closes the energy balance: drift << friction work
    E = moved.total_energy
    assert moved.energy["dissipated"][-1] > 0.01
    assert np.abs(E - E[0]).max() < 1e-3 * moved.energy["dissipated"][-1]


def test_friction_slope_in_the_iteration_matrix_gets_through_the_lock(monkeypatch):
    """Why flexmb/engine/friction.py puts a friction slope into the iteration matrix: the crank that
    starts to slide and then sticks within a step makes Newton cycle at dt = 1 ms. With the
    secant slope a few halved steps get through the lock; without any slope the step halving
    needs tens of times more sub-steps for the same motion (measured with the halving of
    flexmb.solvers.generalized_alpha: 16 against 453 sub-steps for 5 steps; over 50 steps 61
    against 6213, and the tangent slope sech²(u/ω_ε) 64)."""
    from flexmb.engine import friction

    model = case.build(theta0_deg=3.0, J_flywheel=1e-6, P=100.0)  # light crank, hard push: sticks within a step
    ok = simulate(model, 0.005, P["dt"], rho_inf=P["rho_inf"])
    assert ok.status == "finished" and np.abs(ok.u[-1, 0]) < 10 * P["omega_eps"]
    assert ok.stats["substeps"] > ok.stats["steps"]  # the lock needs halved steps even so

    def no_slope(self, cols, w=None):
        return np.zeros(len(np.asarray(cols)))

    monkeypatch.setattr(friction.JointFriction, "damping_diag", no_slope)
    # the Python Newton step, whose slope the patch removes (the compiled step takes the same slope from the
    # same kernel, flexmb/engine/friction.py friction_diag: the run above)
    monkeypatch.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
    res = simulate(model, 0.005, P["dt"], rho_inf=P["rho_inf"])
    assert res.status == "finished" and res.stats["substeps"] > 10 * ok.stats["substeps"]
    # the same motion: the crank creeps by the same angle (to 2 % of it) and sticks
    creep = abs(ok.q[-1, 0] - ok.q[0, 0])
    assert np.abs(res.q[-1] - ok.q[-1]).max() < 0.02 * creep and np.abs(res.u[-1, 0]) < 10 * P["omega_eps"]
