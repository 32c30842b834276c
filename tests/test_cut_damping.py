"""Default damping of loop cuts (issue 12.1; flexmb.builder.cut_defaults, docs/cut_damping.md, docs/loops.md §1):
a bushing that closes a loop and is given no damping gets one that makes every local mode of the cut
damped with ratio 0.5; without it the loops of a mechanism that passes repeatedly through singular
configurations drift, and the peak cut force of a singular start depends on the time step."""

import numpy as np
import pytest
from cut_mechanisms import GRASHOF, chain, chain_exact_tip, chain_passages, four_bar, ramp, rocker_angle, rod_inertia

import flexmb as fm
from flexmb.analysis.rigid import RigidModel, preloaded_state
from flexmb.builder.cut_defaults import ZETA
from flexmb.engine.assembly import Assembler


def run_chain(damping):
    """The 4-loop parallelogram chain (k = 1e9 N/m) through 10 singular passages, rho_inf = 1 (no
    numerical dissipation: only the cuts' damping holds the loops), from the preloaded start."""
    m, p = chain(1e9, damping=damping)
    res = fm.simulate(m, 2.6, 1e-3, rho_inf=1.0, state=preloaded_state(m))
    assert res.status == "finished"
    err = np.linalg.norm(res.x[:, m.node_names.index("crank4")] - chain_exact_tip(res.t, p), axis=1)
    th = np.stack([res.coordinate(f"O{i}.q") for i in range(5)], axis=1)
    spread = np.abs(np.angle(np.exp(1j * (th - th[:, :1])))).max()
    return res, p, err, spread


def test_multi_loop_chain_keeps_its_branch_with_default_cut_damping():
    """docs/loops.md §1.4: default-damped, the tracked point stays within 1e-3 m of the exact rigid
    solution (P) at all 10 passages (measured 3.4e-4 m: the cut's give under the weights at each
    passage, ~k^-1/2) and returns to it between them."""
    res, p, err, spread = run_chain(None)
    assert chain_passages(res.t[-1], p) >= 10
    assert spread < 0.1  # same (parallelogram) branch for every loop
    assert err.max() < 1e-3
    assert err[-1] < 1e-6  # measured 4.6e-8 m


def test_multi_loop_chain_drifts_with_undamped_cuts():
    """The same run with damping=0: the error grows at every passage (docs/loops.md §1.3: 1.3e-2 m)."""
    res, p, err, spread = run_chain(0)
    per_passage = [err[(res.t > 0.25 * (i + 0.5)) & (res.t <= 0.25 * (i + 1.5))].max() for i in range(10)]
    assert err.max() > 5e-3
    assert per_passage[-1] > 10 * per_passage[0]


@pytest.mark.parametrize("damping", [None, 0])
def test_peak_cut_force_of_a_singular_start_converges_in_dt_only_when_damped(damping):
    """The rhombus four-bar (all links 1 m) driven from rest in its folded singular configuration
    (docs/loops.md §2.2; elastic cut at B, k = 1e8 N/m, g = 0): damped by default the peak cut force is the
    same at dt = 1e-3 and 5e-4 within 2 % (measured 332.1 and 335.0 N); undamped the cut rings and its
    peak moves by more than 20 % (measured 697 and 932 N)."""
    peaks = []
    for dt in (1e-3, 5e-4):
        m = four_bar("elastic", th0=np.pi, dims=(1, 1, 1, 1), drive=ramp(0.0, 2.0, 1.0), g=0.0, k=1e8, damping=damping)
        res = fm.simulate(m, 0.5, dt, rho_inf=0.8)
        assert res.status == "finished"
        peaks.append(np.linalg.norm(res.cut_force("B", "global")[:, :3], axis=1).max())
    change = abs(peaks[1] - peaks[0]) / peaks[1]
    if damping is None:
        assert change < 0.02
    else:
        assert change > 0.2


def test_default_damping_gives_every_local_mode_of_the_cut_the_ratio_one_half():
    """(D6) on the Grashof four-bar with its crank driven: the cut's local dynamics W⁻¹ d'' + C d' + K d = 0
    (W = J M̄⁻¹ Jᵀ over the free coordinates, computed here independently) have damping ratio 0.5 in
    both modes; the diagonal c_i = 2 ζ √(k m_eff,i) would not (0.38 and 0.59; docs/cut_damping.md §3)."""
    k = 1e6
    m = four_bar("elastic", drive=(lambda t: 0.0 * t,) * 3, k=k)
    bu = m.elements["bushing"]
    assert bool(bu.auto_damping[0])
    rm = RigidModel(m)
    st = m.initial_state()
    ev = Assembler(m).evaluate(st, elastic_cuts=False)
    _, J = rm.closure(st, ev)
    names = list(rm.cut_names)
    rows = [names.index("B.tx"), names.index("B.ty")]
    f = m.free_u
    M = Assembler(m).mbar(ev, f).toarray()
    Jf = J[np.ix_(rows, f)]
    W = Jf @ np.linalg.solve(M, Jf.T)
    C = bu.C[0][:2, :2]
    K = np.diag([k, k])
    # state-space eigenvalues of W⁻¹ d'' + C d' + K d = 0: s = -ζω ± iω√(1-ζ²)
    Minv = np.linalg.inv(W)
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(Minv, K), -np.linalg.solve(Minv, C)]])
    s = np.linalg.eigvals(A)
    zeta = -s.real / np.abs(s)
    assert np.allclose(zeta, ZETA, atol=1e-9)
    assert bu.m_eff[0, 0] == pytest.approx(1 / W[0, 0], rel=1e-9) and bu.m_eff[0, 1] == pytest.approx(1 / W[1, 1], rel=1e-9)


def test_given_damping_is_kept_and_a_bushing_on_no_loop_stays_undamped():
    """damping=0 means undamped; a bushing that closes no loop (a body on a free joint held to ground
    by it: a plain spring) gets no default damping."""
    m = four_bar("elastic", k=1e6, damping=0)
    assert not m.elements["bushing"].auto_damping[0] and not np.any(m.elements["bushing"].C)
    mb = fm.ModelBuilder()
    mb.add_node("m", (0, 0, 0))
    mb.add_body("b", "m", 2.0, (0, 0, 0), np.eye(3))
    mb.add_bushing("s", "ground", "m", stiffness=[100.0] * 6)
    mb.add_joint("f", "free", "ground", "m")
    spring = mb.compile()
    assert spring.loops == () and not np.any(spring.elements["bushing"].C)


def beam_four_bar(damping=None):
    """The Grashof four-bar with a 4-element beam coupler (EA = 2.8e7 N, ρA = 1.2 kg/m; docs/loops.md §2.3), the
    crank held: the flexible link closes the loop."""
    a, b, c, d = GRASHOF
    A = np.array([a * np.cos(1.0), a * np.sin(1.0), 0.0])
    th4 = rocker_angle(1.0, *GRASHOF)
    B = np.array([d + c * np.cos(th4), c * np.sin(th4), 0.0])
    O4 = np.array([d, 0.0, 0.0])
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, A / 2, rod_inertia(1.0, a, A))
    mb.add_node("rocker", O4)
    mb.add_body("rocker", "rocker", 1.0, (B - O4) / 2, rod_inertia(1.0, c, B - O4))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=(0, 0, 1))
    E, area = 2.8e7 / 4e-4, 4e-4
    inertia = 1.4e4 / E
    sec = fm.BeamSection(E, E / 2.6, area, inertia, inertia, 2 * inertia, 1.2 / area)
    nodes = mb.add_flexible_link("coupler", A, B, 4, sec, damping=damping)
    mb.add_joint("A", "revolute", "crank", nodes[0], point=A, axis=(0, 0, 1))
    mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B, axis=(0, 0, 1))
    mb.add_drive("O2", lambda t: 0.0 * t, lambda t: 0.0 * t, lambda t: 0.0 * t)
    return mb.compile()


def test_a_beam_that_closes_a_loop_gets_its_axial_mode_damped_by_default():
    """(D4) on the beam-coupler four-bar (docs/loops.md §2.3): m_eff at the link's ends along its axis 0.4752 kg
    (computed there with the coupler massless), plus a third of the link's 1.2 kg; ω_ax = √((EA/L)/m_ax) =
    5656 rad/s (measured axial ringing of the undamped link: 5512 rad/s), α = 2·0.5/ω_ax = 1.768e-4 s.
    A damping given (0 included) is kept; a beam on no loop stays undamped."""
    beams = beam_four_bar().elements["beam"]
    assert np.all(beams.auto_damping)
    assert beams.m_axial[0] == pytest.approx(0.4752 + 1.2 / 3, rel=1e-3)
    assert np.allclose(beams.alpha, 1.768e-4, rtol=1e-3)
    assert not np.any(beam_four_bar(damping=0.0).elements["beam"].alpha)
    mb = fm.ModelBuilder()
    mb.add_node("root", (0, 0, 0))
    sec = fm.BeamSection(2e11, 8e10, 1e-4, 1e-8, 1e-8, 2e-8, 7800)
    nodes = mb.add_flexible_link("arm", (0, 0, 0), (1, 0, 0), 2, sec, node_a="root")
    mb.add_body("hub", "root", 1.0, inertia=np.eye(3))
    mb.add_joint("hub", "revolute", "ground", "root", axis=(0, 0, 1))
    cantilever = mb.compile()
    assert nodes and cantilever.loops == () and not np.any(cantilever.elements["beam"].alpha)


def test_singular_start_caps_the_effective_mass_at_the_loops_mass():
    """(D8): the rhombus folded at its singular configuration (B on O2): the cut's tx moves no free
    coordinate there (W_xx = 0, m_eff = 1/W_xx unbounded), so its default damping uses the loop's mass,
    3 kg: c = 2 ζ √(k · 3 kg) = 17 320.5 N s/m at k = 1e8; ty is regular (m_eff 0.1556 kg with gravity in
    the plane). `flexmb info` says so."""
    m = four_bar("elastic", th0=np.pi, dims=(1, 1, 1, 1), g=9.81, k=1e8)
    bu = m.elements["bushing"]
    assert np.isinf(bu.m_eff[0, 0]) and np.isfinite(bu.m_eff[0, 1])
    assert bu.C[0, 0, 0] == pytest.approx(2 * ZETA * np.sqrt(1e8 * 3.0), rel=1e-12)
    assert "tx: k = 1e+08 N/m, moves no free coordinate at the start" in fm.describe(m, dt=1e-3)
