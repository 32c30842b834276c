"""Beams in mechanisms (issue 3): a four-bar whose coupler is a beam closes its loop through
the beam and approaches the rigid four-bar as the coupler stiffens; a pinned flexible link
swinging under gravity keeps its energy."""

import numpy as np
from conftest import load_case

import flexmb as fm
from flexmb.solvers.simulate import simulate

# the Grashof crank-rocker of cases/four_bar_rigid_limit.py (crank 0.3, coupler 1, rocker 0.8, ground 1 m)
case = load_case("four_bar_rigid_limit")


def four_bar(E, n=4, alpha=2e-4):
    """The case's four-bar with a coupler of Young's modulus E on a 4 cm², 2e-7 m⁴ section."""
    return case.build(EA=E * 4e-4, EI=E * 2e-7, rho_A=1.2, n_elements=n, alpha=alpha)


def test_four_bar_loop_is_closed_through_the_beam():
    m = four_bar(0.7e11)
    assert len(m.loops) == 1
    lp = m.loops[0]
    assert set(lp.joints) == {"O2", "O4", "A", "B"}
    assert set(lp.elements) == {f"coupler.e{i}" for i in range(4)}
    assert "beam 'coupler'" in lp.cut


def test_four_bar_with_beam_coupler_approaches_the_rigid_four_bar():
    errors = []
    for E in (0.7e9, 0.7e10, 0.7e11):
        res = simulate(four_bar(E), 0.8, 2e-3, rho_inf=0.8)
        assert res.status == "finished"
        errors.append(np.abs(case.rocker_error(res)).max())
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
