"""The Zhao et al. Gough–Stewart case (cases/zhao_stewart_platform.py), shortened to 0.3 s.

Checks, each against something computed here:
* the reconstructed geometry has every fact the paper states (leg 1 m from radius 0.5 m to
  radius 0.2 m, tilted 30°, platform at √3/2, fixed-part CoM at r_d = A + 0.25 e, moving-part
  CoM at r_e = A + 0.5 e), its leg Jacobian is well conditioned along the trajectory, while the
  same legs all rotated one way (no alternation) would be singular;
* the universal-joint cut: the bushing's constrained deformations vanish for any universal-joint
  motion and not for a twist about the leg;
* inverse kinematics: the driven coordinates are the leg lengths |C_p(t) - A_p| - 1 from Table A1;
* the leg forces three ways: (1) power balance Σ F ḋ + external power = d(T + V)/dt with T and V
  computed here from the recorded node poses and twists; (2) the rigid-equivalent inverse
  dynamics (flexmb.analysis.rigid); (3) a forward run with the forces applied to undriven legs
  (add_joint_force) reproduces the platform's trajectory.
"""

import numpy as np
import pytest
from conftest import load_case

from flexmb.analysis.rigid import rigid_inverse_dynamics
from flexmb.elements import bushing as bushing_kernels
from flexmb.rotations import expm
from flexmb.solvers.simulate import simulate

z = load_case("zhao_stewart_platform")

P = {**z.DEFAULTS, "t_end": 0.3}


@pytest.fixture(scope="module")
def run():
    model = z.build(**P)
    res = simulate(model, P["t_end"], P["dt"], rho_inf=P["rho_inf"])
    assert res.status == "finished"
    return model, res


def pose(t, h0):
    """Table A1, written out here: platform centre and rotation about x."""
    P_ = np.array([0.1 * (np.cos(t) - 1), 0.05 * np.sin(t), h0 + 0.1 * (np.cos(t) - 1)])
    th = 0.1 * (1 - np.cos(t))
    c, s = np.cos(th), np.sin(th)
    return P_, np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


# ----------------------------------------------------------------------------- geometry facts
def test_geometry_has_the_stated_facts():
    geo = z.layout(P)
    A, c, h0 = geo["A"], geo["c"], geo["h0"]
    C = c + [0, 0, h0]
    assert h0 == pytest.approx(np.sqrt(3) / 2)  # Table A1 initial height
    np.testing.assert_allclose(np.linalg.norm(A[:, :2], axis=1), 0.5)  # base radius R
    np.testing.assert_allclose(np.linalg.norm(c[:, :2], axis=1), 0.2)  # platform radius r
    np.testing.assert_allclose(np.linalg.norm(C - A, axis=1), 1.0)  # L_AC
    e = (C - A) / 1.0
    np.testing.assert_allclose(np.degrees(np.arccos(e[:, 2])), 30.0)  # tilt θ1 = π/6
    np.testing.assert_allclose(A[0], [0.5, 0, 0])  # Table 1: r_A^1 = [R, 0, 0]
    # centres of mass as Table A2 places them along the leg (r_d: middle of A-B, r_e: at B)
    model = z.build(**P)
    ev_x, ev_R = model.X0, model.R0
    for p in range(6):
        for body, s in ((f"fixed{p + 1}", 0.25), (f"moving{p + 1}", 0.5)):
            b = model.elements["body"].names.index(body)
            n = model.elements["body"].node[b]
            com = ev_x[n] + ev_R[n] @ model.elements["body"].com[b]
            np.testing.assert_allclose(com, A[p] + s * e[p], atol=1e-12)
    # masses (Table A4)
    m = dict(zip(model.elements["body"].names, model.elements["body"].mass))
    assert m["platform"] == 10 and m["fixed1"] == 3 and m["moving1"] == 1


def leg_jacobian(A, c, t, h0):
    """Plücker coordinates of the six leg lines (direction; moment about the platform centre)
    as columns: the statics (and velocity) Jacobian of the platform."""
    P_, Rx = pose(t, h0)
    C = P_ + c @ Rx.T
    e = (C - A) / np.linalg.norm(C - A, axis=1)[:, None]
    return np.vstack([e.T, np.cross(C - P_, e).T])


def test_layout_is_regular_along_the_path_and_the_unalternated_one_is_singular():
    geo = z.layout(P)
    A, c, h0 = geo["A"], geo["c"], geo["h0"]
    conds = [np.linalg.cond(leg_jacobian(A, c, t, h0)) for t in np.linspace(0, 10, 101)]
    assert max(conds) < 20
    # same skew for all six legs: all on one regulus of a hyperboloid -> rank-deficient
    a = np.radians(60.0 * np.arange(6)) + geo["delta"]
    c_same = 0.2 * np.stack([np.cos(a), np.sin(a), np.zeros(6)], axis=1)
    assert np.linalg.cond(leg_jacobian(A, c_same, 0.0, h0)) > 1e12


def test_universal_joint_cut_constrains_only_the_twist_about_the_leg():
    """Bushing kernel with the case's axes: a universal-joint motion (rotation about the
    leg-side axis a, then about the platform-side axis b) leaves the constrained deformations
    zero; a twist about the leg does not."""
    model = z.build(**P)
    i = 0
    Ea, Eb = model.elements["bushing"].Ea[i], model.elements["bushing"].Eb[i]
    Ra = model.R0[model.elements["bushing"].a[i]]
    a_axis, b_axis = Ra @ Ea[:, 1], model.R0[model.elements["bushing"].b[i]] @ Eb[:, 0]
    mode = model.elements["bushing"].mode[i:i + 1]
    mask = np.diagonal(model.elements["bushing"].K[i]) > 0
    mask[3 + mode[0]] = False  # the free rotation
    assert mask.tolist() == [True, True, True, False, False, True]
    sa, sb = model.elements["bushing"].sa[i], model.elements["bushing"].sb[i]

    def deform(Rb):  # both frames turned about the joint point (put at the origin)
        d, _ = bushing_kernels.deformation((-Ra @ sa)[None], Ra[None], (-Rb @ sb)[None], Rb[None], sa[None], Ea[None],
                                           sb[None], Eb[None], mode)
        return d[0]

    Rb0 = model.R0[model.elements["bushing"].b[i]]
    rng = np.random.default_rng(3)
    for th1, th2 in rng.uniform(-0.6, 0.6, size=(5, 2)):
        # universal joint: turn about the leg-side axis a (carrying the platform-side axis b
        # along), then about the turned axis b
        R1 = expm(th1 * a_axis)
        Rb = expm(th2 * (R1 @ b_axis)) @ R1 @ Rb0
        assert np.abs(deform(Rb)[mask]).max() < 1e-14
    leg = np.cross(b_axis, a_axis)
    # eq. (2b): the rotation vector of the tilt between the two axes, |phi| = the tilt angle
    assert abs(deform(expm(0.1 * leg) @ Rb0)[5]) == pytest.approx(0.1, rel=1e-12)


# ----------------------------------------------------------------------------- inverse kinematics
def test_driven_coordinates_are_the_inverse_kinematics_leg_lengths(run):
    model, res = run
    geo = z.layout(P)
    A, c, h0 = geo["A"], geo["c"], geo["h0"]
    for k, t in enumerate(res.t):
        P_, Rx = pose(t, h0)
        ell = np.linalg.norm(P_ + c @ Rx.T - A, axis=1)
        q = np.array([res.coordinate(f"P{p + 1}.q")[k] for p in range(6)])
        np.testing.assert_allclose(q + 1.0, ell, atol=1e-13)
    # the platform follows Table A1 to within the cuts' elastic give (force / stiffness ~ 1e-6 m)
    i = model.node_index("platform")
    for k, t in enumerate(res.t):
        P_, Rx = pose(t, h0)
        assert np.linalg.norm(res.x[k, i] - P_) < 5e-6
        assert np.abs(res.R[k, i] - Rx).max() < 5e-5


# ----------------------------------------------------------------------------- forces
def energies_from_states(model, res):
    """T and gravity V of every rigid body from the recorded node poses and twists."""
    g = model.gravity
    T = np.zeros(res.t.size)
    V = np.zeros(res.t.size)
    bodies = model.elements["body"]
    for b in range(bodies.n):
        n, m, c, J = bodies.node[b], bodies.mass[b], bodies.com[b], bodies.inertia[b]
        x, R, v, w = res.x[:, n], res.R[:, n], res.twists[:, n, :3], res.twists[:, n, 3:]
        rc = np.einsum("tij,j->ti", R, c)
        vc = v + np.cross(w, rc)
        Jw = np.einsum("tij,jk,tlk,tl->ti", R, J, R, w)
        T += 0.5 * m * np.einsum("ti,ti->t", vc, vc) + 0.5 * np.einsum("ti,ti->t", w, Jw)
        V -= m * (x + rc) @ g
    return T, V


def test_power_balance(run):
    model, res = run
    T, V = energies_from_states(model, res)
    E = T + V
    dE = (E[2:] - E[:-2]) / (res.t[2:] - res.t[:-2])
    i = model.node_index("platform")
    p_legs = np.einsum("tk,tk->t", res.drive_forces, res.u[:, model.driven])
    p_ext = res.twists[:, i, :3] @ np.asarray(P["force"]) + res.twists[:, i, 3:] @ np.asarray(P["torque"])
    p_in = (p_legs + p_ext)[1:-1]
    scale = np.abs(p_legs).max()
    assert scale > 1.0  # the legs really do work (W)
    # budget: central difference h^2/6 * E''' ~ 1e-4 W, cut strain energy rate F Fdot / k ~ 1e-5 W
    # (measured 1.2e-4 W); a 1 % error in any single leg force leaves 1.2e-3 to 1.7e-2 W here
    assert np.abs(p_in - dE).max() < 5e-4


def test_forces_equal_the_rigid_equivalent_inverse_dynamics(run):
    model, res = run
    rig = rigid_inverse_dynamics(model, res.t[::15])
    F = res.drive_forces[::15]
    assert np.abs(F).max() > 10.0
    # the cuts deflect by F / k ~ 1e-6 m; that changes the geometry, hence the forces, by
    # ~ F^2 / (k L) ~ 5e-5 N
    assert np.abs(F - rig.drive_forces).max() < 5e-4
    assert rig.sigma_min.min() > 0.05  # the rigid platform is far from singular here


def test_forward_run_with_the_computed_forces_reproduces_the_trajectory(run):
    from scipy.interpolate import CubicSpline

    model, res = run
    spline = CubicSpline(res.t, res.drive_forces, axis=0)
    fwd_model = z.build_forward(lambda t: spline(t), **P)
    assert fwd_model.driven.size == 0 and fwd_model.jforce_u.size == 6
    fwd = simulate(fwd_model, P["t_end"], P["dt"], rho_inf=P["rho_inf"])
    assert fwd.status == "finished"
    i = model.node_index("platform")
    moved = np.linalg.norm(res.x[-1, i] - res.x[0, i])
    assert moved > 0.01
    # a 1 N error in one leg would move the 14 kg assembly by ~ t^2 / (2 * 14) = 3e-3 m
    assert np.abs(fwd.x[:, i] - res.x[:, i]).max() < 1e-6
    for p in range(6):
        np.testing.assert_allclose(fwd.coordinate(f"P{p + 1}.q"), res.coordinate(f"P{p + 1}.q"), atol=1e-6)
