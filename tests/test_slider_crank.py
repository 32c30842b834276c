"""Slider-crank with driven crank (issue 2, item 6): its loop is closed through the guide
bushing of tests/test_bushing.py; the rigid-equivalent model (flexmb.analysis.rigid) gives piston
position, crank torque and crank-pin reaction, checked here against closed forms written by
hand: the kinematics, the Lagrange equation in the crank angle, and a free-body balance of
connecting rod and slider."""

import numpy as np
import pytest
from test_bushing import G_, L_, M2, M3, R_, TH0, W, closed_form_crank_torque, slider_crank

from flexmb.analysis.rigid import RigidModel, rigid_inverse_dynamics

H = 1e-20


def cs(f, t):
    """Complex-step derivative."""
    return np.imag(f(t + 1j * H)) / H


def d2(f, t, h=1e-5):
    """Second derivative: central difference of complex-step first derivatives."""
    return (cs(f, t + h) - cs(f, t - h)) / (2 * h)


xp = lambda t: R_ * np.cos(t) + np.sqrt(L_**2 - (R_ * np.sin(t)) ** 2)  # noqa: E731
ax = lambda t: R_ * np.cos(t)  # noqa: E731  crank pin A
ay = lambda t: R_ * np.sin(t)  # noqa: E731
phi = lambda t: np.arcsin(-R_ * np.sin(t) / L_)  # noqa: E731


@pytest.fixture(scope="module")
def rigid():
    model = slider_crank(1e7)
    times = np.linspace(0.0, 1.0, 41)  # one crank revolution at 2 pi rad/s
    return model, rigid_inverse_dynamics(model, times)


def test_piston_follows_closed_form_kinematics(rigid):
    model, rr = rigid
    th = TH0 + rr.q[:, model.coordinate_index("O")]
    assert np.allclose(th, TH0 + W * rr.t, atol=1e-12)
    assert np.abs(rr.x[:, model.node_index("slider"), 0] - xp(th)).max() < 1e-10
    assert np.abs(rr.x[:, model.node_index("slider"), 1]).max() < 1e-10


def test_crank_torque_equals_closed_form_inverse_dynamics(rigid):
    model, rr = rigid
    th = TH0 + W * rr.t
    ref = closed_form_crank_torque(th, W)
    assert np.abs(rr.drive_forces[:, 0] - ref).max() <= 1e-8 * np.abs(ref).max()


def test_crank_pin_reaction_equals_free_body_balance(rigid):
    model, rr = rigid
    th = TH0 + W * rr.t
    # accelerations at constant crank speed: d2/dth2 * W^2
    aG2 = np.stack([(d2(ax, th) + d2(xp, th)) / 2, d2(ay, th) / 2], 1) * W**2
    aP = np.stack([d2(xp, th), 0 * th], 1) * W**2
    alpha2 = d2(phi, th) * W**2
    A = np.stack([ax(th), ay(th)], 1)
    P = np.stack([xp(th), 0 * th], 1)
    G2 = (A + P) / 2
    F = np.zeros((th.size, 2))
    for i in range(th.size):
        # unknowns F_A (crank on rod), N (guide on slider): rod+slider forces, rod moments about P
        rA, rG = A[i] - P[i], G2[i] - P[i]
        lhs = np.array([[1, 0, 0], [0, 1, 1], [-rA[1], rA[0], 0]])
        rhs = np.array([
            M2 * aG2[i, 0] + M3 * aP[i, 0],
            M2 * aG2[i, 1] + M3 * aP[i, 1] + (M2 + M3) * G_,
            M2 * L_**2 / 12 * alpha2[i] + M2 * (rG[0] * aG2[i, 1] - rG[1] * aG2[i, 0]) + rG[0] * M2 * G_,
        ])
        F[i] = np.linalg.solve(lhs, rhs)[:2]
    R = rr.reactions[:, model.joint_names.index("A"), :2]
    assert np.abs(R - F).max() <= 1e-8 * np.abs(F).max()


def test_rigid_model_of_elastic_cut_is_what_the_stiff_elastic_run_approaches(rigid):
    """sigma_min stays away from zero here (no singular configuration in a slider-crank with
    r < l), and the rigid crank torque is the limit of the elastic one (tests/test_bushing.py)."""
    model, rr = rigid
    assert rr.sigma_min.min() > 0.1
    assert RigidModel(model).cut_names == ("guide.ty", "guide.tz", "guide.rx", "guide.ry", "guide.rz")
