"""Bushing (elastic cut joint): exact derivatives, conservation, loops closed through it, and
the rigid limit of a slider-crank whose guide is a stiff bushing."""

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements.bushing import deformation
from flexmb.rotations import axis_angle, expm
from flexmb.solvers.initial import StartWarning
from flexmb.solvers.simulate import simulate


@pytest.mark.parametrize("mode", [-1, 0, 1, 2, 3])
def test_deformation_derivative_matches_finite_differences(mode):
    rng = np.random.default_rng(mode + 5)
    n = 3
    xa, xb, sa, sb = (rng.normal(size=(n, 3)) for _ in range(4))
    Ra, Rb, Ea, Eb = (expm(rng.normal(size=(n, 3))) for _ in range(4))
    modes = np.full(n, mode)
    d, G = deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, modes)
    eps = 1e-6
    for j in range(12):
        X = np.zeros(12)
        X[j] = eps

        def at(s, X=X):
            Y = s * X
            return deformation(xa + Y[:3], expm(np.tile(Y[3:6], (n, 1))) @ Ra, xb + Y[6:9],
                               expm(np.tile(Y[9:], (n, 1))) @ Rb, sa, Ea, sb, Eb, modes)[0]

        fd = (at(1) - at(-1)) / (2 * eps)
        assert np.abs(fd - G[:, :, j]).max() < 1e-7


def oscillator(k=100.0, m=2.0):
    mb = fm.ModelBuilder()
    mb.add_node("m", (0, 0, 0))
    mb.add_body("b", "m", m, (0, 0, 0), np.diag([1.0, 2.0, 2.5]))
    mb.add_bushing("s", "ground", "m", stiffness=[k, k, k, 10, 20, 30])
    mb.add_joint("f", "free", "ground", "m", q0=[0.1, 0, 0, 0.3, 0.2, 0.1], u0=[0, 0.2, 0, 0.5, 0, 0])
    return mb.compile()


def test_bushing_oscillator_frequency_and_energy():
    k, m = 100.0, 2.0
    # the oscillator starts displaced on purpose: the start warning names its stretched bushing
    with pytest.warns(StartWarning, match="element 's'"):
        res = simulate(oscillator(k, m), 3.0, 1e-3, rho_inf=1.0)
    x = res.q[:, 0]
    up = np.flatnonzero((x[:-1] < 0) & (x[1:] >= 0))
    tc = res.t[up] - x[up] * (res.t[up + 1] - res.t[up]) / (x[up + 1] - x[up])
    period = np.diff(tc).mean()
    assert period == pytest.approx(2 * np.pi * np.sqrt(m / k), rel=1e-4)  # trapezoidal rule: (h w)^2/12 ~ 2e-6
    E = res.total_energy
    # rho_inf = 1: no numerical dissipation; the residual drift comes from the rotational
    # (log-map) potential on SO(3) and is second order in h
    assert np.abs(E - E[0]).max() < 1e-6 * (res.energy["potential"][0] + res.energy["strain"][0])  # strain: the bushing


def test_free_joint_to_ground_closes_no_loop_and_bushing_loop_is_listed():
    assert oscillator().loops == ()
    mb = fm.ModelBuilder()
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", (1, 0, 0))
    mb.add_body("ba", "a", 1.0, inertia=np.eye(3))
    mb.add_body("bb", "b", 1.0, inertia=np.eye(3))
    mb.add_joint("ja", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("jab", "revolute", "a", "b", axis=(0, 0, 1))
    mb.add_bushing("cut", "ground", "b", stiffness=[1e6] * 3 + [0, 0, 0], point=(1, 0, 0), free_rotation="all")
    m = mb.compile()
    assert len(m.loops) == 1
    lp = m.loops[0]
    assert set(lp.joints) == {"ja", "jab"} and lp.elements == ("cut",)
    assert "loop 1: cut at bushing 'cut'" in fm.describe(m)


@pytest.mark.parametrize("bad,word", [
    (np.diag([1, 2, 3, 4, 5, 6]) + np.triu(np.ones((6, 6)), 1), "symmetric"),
    ([1, 1, 1, -1, 1, 1], "indefinite"),
    ([1, 1, np.nan, 1, 1, 1], "NaN"),
])
def test_bad_bushing_stiffness_is_refused_with_its_name(bad, word):
    mb = fm.ModelBuilder()
    mb.add_node("a", (0, 0, 0))
    with pytest.raises(fm.ModelError, match=word) as info:
        mb.add_bushing("pad7", "ground", "a", stiffness=bad)
    assert "pad7" in str(info.value)


# ------------------------------------------------------------------ slider-crank, rigid limit
R_, L_, M1, M2, M3, G_, W, TH0 = 0.2, 0.6, 1.0, 2.0, 1.5, 9.81, 2 * np.pi, 0.3


def slider_crank(k):
    """Crank driven at constant speed; the slider's guide is a bushing to ground that leaves
    the translation along the guide free (stiffness 0) and holds the rest with stiffness k."""
    th = TH0
    C = np.array([R_ * np.cos(th), R_ * np.sin(th), 0])
    P = np.array([R_ * np.cos(th) + np.sqrt(L_**2 - (R_ * np.sin(th)) ** 2), 0, 0])
    phi = np.arctan2(P[1] - C[1], P[0] - C[0])
    dphi = -R_ * np.cos(th) / (L_ * np.cos(phi)) * W  # consistent initial rates
    z = np.array([0, 0, 1.0])
    rod = lambda m, length: np.diag([0, m * length**2 / 12, m * length**2 / 12])  # noqa: E731
    mb = fm.ModelBuilder(gravity=(0, -G_, 0))
    mb.add_node("crank", (0, 0, 0), axis_angle(z, th))
    mb.add_node("rod", C, axis_angle(z, phi))
    mb.add_node("slider", P)
    mb.add_body("crank", "crank", M1, (R_ / 2, 0, 0), rod(M1, R_))
    mb.add_body("rod", "rod", M2, (L_ / 2, 0, 0), rod(M2, L_))
    mb.add_body("slider", "slider", M3, (0, 0, 0), 1e-3 * np.eye(3))
    mb.add_joint("O", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("A", "revolute", "crank", "rod", point=C, axis=z, u0=dphi - W)
    mb.add_joint("B", "revolute", "rod", "slider", point=P, axis=z, u0=-dphi)
    mb.add_drive("O", lambda t: W * t)
    c = 1e-3 * k
    mb.add_bushing("guide", "ground", "slider", stiffness=[0, k, k, k, k, k], damping=[0, c, c, c, c, c], point=P)
    return mb.compile()


def closed_form_crank_torque(th, thd):
    """Lagrange equation of the rigid slider-crank in the crank angle (constant speed):
    tau = 1/2 M'(th) thd^2 + V'(th), with M(th) from the closed-form kinematics."""
    h = 1e-20

    def d(f, t):  # complex step
        return np.imag(f(t + 1j * h)) / h

    xp = lambda t: R_ * np.cos(t) + np.sqrt(L_**2 - (R_ * np.sin(t)) ** 2)  # noqa: E731
    gx = lambda t: (R_ * np.cos(t) + xp(t)) / 2  # noqa: E731
    gy = lambda t: R_ * np.sin(t) / 2  # noqa: E731
    phi = lambda t: np.arcsin(-R_ * np.sin(t) / L_)  # noqa: E731

    def M(t):
        return M1 * R_**2 / 3 + M2 * (d(gx, t) ** 2 + d(gy, t) ** 2) + M2 * L_**2 / 12 * d(phi, t) ** 2 + M3 * d(xp, t) ** 2

    dM = (M(th + 1e-5) - M(th - 1e-5)) / 2e-5
    V = lambda t: M1 * G_ * R_ / 2 * np.sin(t) + M2 * G_ * gy(t)  # noqa: E731
    return 0.5 * dM * thd**2 + d(V, th)


def test_slider_crank_converges_to_rigid_closed_form_as_guide_stiffens():
    piston_err, torque_err = [], []
    for k in (1e5, 1e6, 1e7):
        res = simulate(slider_crank(k), 0.4, 1e-3, rho_inf=0.8)
        assert res.status == "finished"
        th = TH0 + res.coordinate("O.q")
        xp = R_ * np.cos(th) + np.sqrt(L_**2 - (R_ * np.sin(th)) ** 2)
        piston_err.append(np.abs(res.node_position("slider")[:, 0] - xp).max())
        ref = closed_form_crank_torque(th, W)
        # after the start-up transient (the guide force starts at zero and builds up in
        # a few of the guide's damped periods, << 0.05 s)
        late = res.t > 0.05
        torque_err.append(np.abs(res.drive_force("O.q") - ref)[late].max() / np.abs(ref).max())
    # compliance error ~ force / k: a tenfold stiffer guide gives a ~tenfold smaller error
    assert piston_err[1] < 0.2 * piston_err[0] and piston_err[2] < 0.2 * piston_err[1]
    assert piston_err[2] < 2e-6
    assert torque_err[2] < 1e-4 and torque_err[2] < torque_err[0]


# ------------------------------------------------------------------ the bushing's point (issue 12 item 6)
def _two_nodes(b=(1.0, 0.0, 0.0)):
    mb = fm.ModelBuilder()
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", b)
    mb.add_body("ba", "a", 1.0, inertia=np.eye(3))
    mb.add_body("bb", "b", 1.0, inertia=np.eye(3))
    mb.add_joint("ja", "revolute", "ground", "a", axis=(0, 0, 1))
    return mb


def test_bushing_point_is_required_where_its_ends_do_not_coincide():
    """Before, the point defaulted silently to node_b's position, which builds another mechanism
    when the joint the bushing replaces is elsewhere; now the call names the point to give."""
    mb = _two_nodes()
    with pytest.raises(fm.ModelError, match=r"add_bushing: bushing 'cut': give point.*node 'b' at \[1.0, 0.0, 0.0\]"
                                            r".*node 'a' at \[0.0, 0.0, 0.0\]"):
        mb.add_bushing("cut", "a", "b", stiffness=[1e6] * 6)
    with pytest.raises(fm.ModelError, match="give point.*ground's origin"):
        mb.add_bushing("cut", "ground", "b", stiffness=[1e6] * 6)
    mb.add_bushing("cut", "a", "b", stiffness=[1e6] * 6, point=(0.5, 0, 0))
    m = mb.compile()
    assert m.elements["bushing"].sa[0].tolist() == [0.5, 0.0, 0.0] and m.elements["bushing"].sb[0].tolist() == [-0.5, 0.0, 0.0]


def test_bushing_point_defaults_to_the_common_position_of_coinciding_ends():
    mb = _two_nodes(b=(0.0, 0.0, 0.0))
    mb.add_bushing("pad", "a", "b", stiffness=[1e6] * 6)
    mb.add_bushing("ground_pad", "ground", "a", stiffness=[1e6] * 6)
    m = mb.compile()
    bu = m.elements["bushing"]
    assert np.array_equal(bu.sa, np.zeros((2, 3))) and np.array_equal(bu.sb, np.zeros((2, 3)))


def test_revolute_bushing_does_not_close_at_opposite_axes():
    """Eq. (2b) is the rotation vector of the tilt between axis k of the two frames: |phi| = the tilt
    angle, pi at opposite axes (the cross product alone vanishes there: a false closure a Newton
    solve of the loop could land on, docs/loops.md §5.2); its derivative stays exact at large
    tilts."""
    one = np.ones((1, 3))
    zero = np.zeros((1, 3))
    eye = np.eye(3)[None]
    for k in (0, 1, 2):
        mode = np.array([k])
        for th in (0.3, 2.5, np.pi - 1e-3, np.pi):
            tilt = np.zeros(3)
            tilt[(k + 1) % 3] = th
            d, _ = deformation(zero, eye, zero, expm(tilt[None]), zero, eye, zero, eye, mode)
            assert np.linalg.norm(d[0, 3:]) == pytest.approx(th, rel=1e-12)
        # derivative at a tilt of 2.5 rad, by central differences
        R = expm(np.array([[0.4, 2.5, -0.3]]))
        d, G = deformation(one, eye, zero, R, zero, eye, zero, eye, mode)
        eps = 1e-6
        for j in range(9, 12):
            w = np.zeros((1, 3))
            w[0, j - 9] = eps
            fd = (deformation(one, eye, zero, expm(w) @ R, zero, eye, zero, eye, mode)[0]
                  - deformation(one, eye, zero, expm(-w) @ R, zero, eye, zero, eye, mode)[0]) / (2 * eps)
            assert np.abs(fd - G[:, :, j]).max() < 1e-7
