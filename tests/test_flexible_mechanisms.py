"""Beams in mechanisms (issue 3): a four-bar whose coupler is a beam closes its loop through
the beam and approaches the rigid four-bar as the coupler stiffens; a pinned flexible link
swinging under gravity keeps its energy."""

import numpy as np

import flexmb as fm
from flexmb.simulate import simulate

# Grashof crank-rocker: crank a, coupler b, rocker c, ground d
A_, B_, C_, D_ = 0.3, 1.0, 0.8, 1.0
TH0, W, T = 1.0, 2 * np.pi, 0.5


def rocker_angle(th2):
    """Closed-form rocker angle: B is where the circles |B - A| = b and |B - O4| = c meet (the
    branch of the assembly configuration)."""
    A = np.stack([A_ * np.cos(th2), A_ * np.sin(th2)], -1)
    D = np.array([D_, 0.0]) - A
    dist = np.linalg.norm(D, axis=-1)
    x = (B_**2 - C_**2 + dist**2) / (2 * dist)
    h = np.sqrt(B_**2 - x**2)
    e = D / dist[..., None]
    n = np.stack([-e[..., 1], e[..., 0]], -1)
    B = A + x[..., None] * e + h[..., None] * n
    return np.arctan2(B[..., 1], B[..., 0] - D_), A, B


def crank(t):
    """Crank angle increment: smooth start to constant speed W at t = T (C1 in rate, C0 in acceleration)."""
    if np.real(t) < T:
        return W / 2 * (t - T / np.pi * np.sin(np.pi * t / T))
    return W * (t - T / 2) + 0 * t


def four_bar(E, n=4, alpha=2e-4):
    th4, A, B = rocker_angle(np.array(TH0))
    A, B = np.r_[A, 0.0], np.r_[B, 0.0]
    z = (0, 0, 1.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (A_ / 2 * np.cos(TH0), A_ / 2 * np.sin(TH0), 0), np.eye(3) * 1e-3)
    mb.add_node("rocker", (D_, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, (C_ / 2 * np.cos(th4), C_ / 2 * np.sin(th4), 0), np.eye(3) * 1e-2)
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=(D_, 0, 0), axis=z)
    sec = fm.BeamSection(E, E / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    nodes = mb.add_flexible_link("coupler", A, B, n, sec, damping=alpha)
    mb.add_joint("A", "revolute", "crank", nodes[0], point=A, axis=z)
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B, axis=z)
    mb.add_drive("O2", crank)
    return mb.compile(), th4


def test_four_bar_loop_is_closed_through_the_beam():
    m, _ = four_bar(0.7e11)
    assert len(m.loops) == 1
    lp = m.loops[0]
    assert set(lp.joints) == {"O2", "O4", "A", "B"}
    assert set(lp.elements) == {f"coupler.e{i}" for i in range(4)}
    assert "beam 'coupler'" in lp.cut


def test_four_bar_with_beam_coupler_approaches_the_rigid_four_bar():
    errors = []
    for E in (0.7e9, 0.7e10, 0.7e11):
        m, th4 = four_bar(E)
        res = simulate(m, 0.8, 2e-3, rho_inf=0.8)
        assert res.status == "finished"
        th2 = TH0 + res.coordinate("O2.q")
        errors.append(np.abs(th4 + res.coordinate("O4.q") - rocker_angle(th2)[0]).max())
    # compliance error ~ 1/EA and 1/EI: tenfold stiffer, about tenfold closer
    assert errors[1] < 0.2 * errors[0] and errors[2] < 0.2 * errors[1]
    assert errors[2] < 1e-4


def pinned_link(n=4):
    E, rho, A, I, L = 0.7e9, 3000.0, 4e-4, 2e-7, 2.0
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    sec = fm.BeamSection(E, E / 2.6, A, I, I, 2 * I, rho)
    nodes = mb.add_flexible_link("link", (0, 0, 0), (L, 0, 0), n, sec)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0, 0, 1))
    return mb.compile()


def test_swinging_flexible_link_keeps_its_energy():
    """No physical damping; rho_inf = 0.98 is the smallest numerical dissipation that runs this
    link stably at h = 2 ms (its axial mode, ~1.5e4 rad/s, is far beyond 1/h)."""
    res = simulate(pinned_link(), 5.0, 2e-3, rho_inf=0.98)
    assert res.status == "finished"
    E = res.total_energy
    scale = np.abs(res.energy["potential"]).max()  # energy exchanged: the swing's mg L/2
    assert (E - E[0]).max() <= 1e-9 * scale  # never grows (beyond round-off)
    assert np.abs(E - E[0]).max() < 1e-3 * scale
    assert res.energy["kinetic"].max() > 0.5 * scale  # it really swings
