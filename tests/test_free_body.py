"""Torque-free rigid body spun near its intermediate principal axis (Dzhanibekov / tennis-racket
flips) on a free node: conservation of kinetic energy and of the global angular momentum
H = R J Ω, second order in the step, flip period and body angular velocity against an
independent solution of Euler's equations J Ω' + Ω × J Ω = 0."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import flexmb as fm
from flexmb.solvers.simulate import simulate

J = np.diag([1.0, 2.0, 3.0])  # kg m², distinct principal inertias, intermediate axis = body y
# spin about the intermediate axis, perturbed so that the flips come every ≈ 5.75 s: four
# sign changes of Ω_y within 21 s
W0 = np.array([0.2, 2.0, 0.2])
RHO_INF = 1.0
H_MAIN = 4e-3  # step of the long run (the step at which the tolerances below are asserted)
T_LONG = 21.0
T_SHORT = 4.0  # the convergence check runs through the first flip (at ≈ 3.44 s)


def free_body() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0, 0, 0))
    mb.add_node("b", (0, 0, 0))
    mb.add_body("body", "b", 1.0, (0, 0, 0), J)
    # the node is reached by no other joint; the free joint is given explicitly to set u0:
    # 3 translation rates (global), then the body angular velocity in body axes
    mb.add_joint("f", "free", "ground", "b", u0=[0, 0, 0, *W0])
    return mb.compile()


def euler_rhs(t, w):
    return np.linalg.solve(J, -np.cross(w, J @ w))


@pytest.fixture(scope="module")
def euler():
    sol = solve_ivp(euler_rhs, (0.0, T_LONG + 1.0), W0, method="DOP853", rtol=1e-11, atol=1e-13, dense_output=True)
    assert sol.success
    return sol.sol


def run(h: float, t_end: float):
    res = simulate(free_body(), t_end=t_end, dt=h, rho_inf=RHO_INF)
    assert res.status == "finished"
    return res


@pytest.fixture(scope="module")
def long_run():
    return run(H_MAIN, T_LONG)


@pytest.fixture(scope="module")
def short_run():
    return run(H_MAIN / 2, T_SHORT)


def body_omega(res) -> np.ndarray:
    assert res.coordinate_names[3:6] == ("f.wx", "f.wy", "f.wz")
    return res.u[:, 3:6]


def conservation_errors(res, t_max: float) -> tuple[float, float]:
    """max relative error of kinetic energy and of the global angular momentum up to t_max."""
    keep = res.t <= t_max + 1e-9
    W = body_omega(res)[keep]
    R = res.R[keep, res.node_names.index("b")]
    T = 0.5 * np.einsum("ni,ij,nj->n", W, J, W)
    H = np.einsum("nij,jk,nk->ni", R, J, W)  # R: node axes in global columns
    # flexmb's own kinetic energy is the same quantity
    assert np.allclose(res.energy["kinetic"][keep], T, rtol=1e-12, atol=0)
    e_T = float(np.abs(T / T[0] - 1).max())
    e_H = float(np.linalg.norm(H - H[0], axis=1).max() / np.linalg.norm(H[0]))
    return e_T, e_H


def sign_changes(t: np.ndarray, y: np.ndarray) -> np.ndarray:
    i = np.nonzero(np.sign(y[:-1]) * np.sign(y[1:]) < 0)[0]
    return t[i] - y[i] * (t[i + 1] - t[i]) / (y[i + 1] - y[i])


def omega_error_at(res, euler, t: float) -> float:
    k = int(np.argmin(np.abs(res.t - t)))
    assert abs(res.t[k] - t) < 1e-9
    return float(np.abs(body_omega(res)[k] - euler(t)).max())


def test_free_body_stays_put_and_flips(long_run):
    # no force: the node origin (the centre of mass) stays at rest at the origin
    assert np.abs(long_run.x[:, 0]).max() < 1e-12
    assert np.abs(long_run.u[:, :3]).max() < 1e-12
    flips = sign_changes(long_run.t, body_omega(long_run)[:, 1])
    assert len(flips) >= 4


def test_energy_and_global_angular_momentum_conserved_through_flips(long_run):
    e_T, e_H = conservation_errors(long_run, T_LONG)
    assert e_T < 1e-4
    assert e_H < 1e-4


def test_conservation_errors_fall_as_h_squared(long_run, short_run):
    eT1, eH1 = conservation_errors(long_run, T_SHORT)
    eT2, eH2 = conservation_errors(short_run, T_SHORT)
    assert 3.0 < eT1 / eT2 < 5.0
    assert 3.0 < eH1 / eH2 < 5.0


def test_body_angular_velocity_second_order_against_euler_equations(long_run, short_run, euler):
    for t in (1.0, T_SHORT):
        e1, e2 = omega_error_at(long_run, euler, t), omega_error_at(short_run, euler, t)
        assert 3.0 < e1 / e2 < 5.0


def test_body_angular_velocity_matches_euler_equations_at_1s(long_run, euler):
    # global error of a second-order step after 1 s is of order (h|Ω|)²|Ω| ≈ 1.3e-4 rad/s
    assert omega_error_at(long_run, euler, 1.0) < 1e-4 * np.linalg.norm(W0)


def test_flip_period_matches_euler_equations(long_run, euler):
    t = np.linspace(0.0, T_LONG, int(T_LONG / 1e-3) + 1)
    ref = sign_changes(t, euler(t)[1])
    got = sign_changes(long_run.t, body_omega(long_run)[:, 1])
    assert len(got) == len(ref) >= 4
    half_ref = (ref[-1] - ref[0]) / (len(ref) - 1)
    half_got = (got[-1] - got[0]) / (len(got) - 1)
    assert abs(half_got / half_ref - 1) < 1e-2
    assert np.abs(got - ref).max() < 1e-2 * half_ref
