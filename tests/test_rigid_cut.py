"""Rigid-limit loop cuts (issue 12.2; flexmb.elements.rigid_cut: index-3 augmented Lagrangian with
mass-orthogonal projections, docs/rigid_cut.md §4) and cut forces as outputs (issue 12.3)."""

import warnings
import xml.etree.ElementTree as ET

import meshio
import numpy as np
import pytest
from cut_mechanisms import GRASHOF, bricard, bricard_relation, four_bar, ramp, rocker_angle, rod_inertia, slider_crank

import flexmb as fm
from flexmb.errors import FlexmbError
from flexmb.results.drawing import cell_kinds
from flexmb.results.paraview import write_pvd
from flexmb.solvers.energy_check import EnergyWarning


def closure(res, model, name="B"):
    """|p_b - p_a| (nt,) of the cut ``name`` from the recorded node poses (independent of the solver's Φ)."""
    rc = model.elements["rigid_cut"]
    i = rc.names.index(name)
    a, b = int(rc.a[i]), int(rc.b[i])
    pa = rc.sa[i] if a < 0 else res.x[:, a] + np.einsum("nij,j->ni", res.R[:, a], rc.sa[i])
    pb = res.x[:, b] + np.einsum("nij,j->ni", res.R[:, b], rc.sb[i])
    return np.linalg.norm(pb - pa, axis=-1)


def test_grashof_four_bar_with_a_rigid_cut_follows_the_closed_form_rocker():
    """Crank driven from rest at 1 rad up to 2π rad/s (docs/loops.md §2.1): the rocker angle equals the
    closed-form (F) within 1e-8 rad (measured 5.6e-15) and the cut stays closed within its
    tolerance 1e-10 m at every step; the cut force is the same in both frames' magnitudes."""
    m = four_bar("rigid", th0=1.0, drive=ramp(0.0, 2 * np.pi, 0.5), tolerance=1e-10)
    res = fm.simulate(m, 1.0, 1e-3, rho_inf=0.8)
    assert res.status == "finished"
    th2 = 1.0 + res.coordinate("O2.q")
    th4 = rocker_angle(1.0) + res.coordinate("O4.q")
    assert np.abs(np.angle(np.exp(1j * (th4 - rocker_angle(th2, *GRASHOF))))).max() < 1e-8
    assert closure(res, m).max() <= 1e-10
    F, Fg = res.cut_force("B"), res.cut_force("B", "global")
    assert np.allclose(np.linalg.norm(F[:, :3], axis=1), np.linalg.norm(Fg[:, :3], axis=1), rtol=1e-12, atol=1e-12)
    assert np.abs(F[:, 2:5]).max() < 1e-6 * np.abs(F[:, :2]).max()  # a planar pin: no out-of-plane force or tilt moment


def test_rhombus_released_in_its_folded_singular_position_runs_and_conserves_energy_to_second_order():
    """Rhombus (all links 1 m, 1 kg rods) at rest in its folded configuration, undriven, gravity in the
    plane (docs/loops.md §2.2): it swings through both singular configurations (folded and extended) on
    its parallelogram branch, the cut closed within 1e-10 m; the energy error falls by more than 3
    when h halves (second order: 4; measured 1.96e-5 J -> 3.3e-6 J over 1 s)."""
    drift = []
    for dt in (1e-3, 5e-4):
        m = four_bar("rigid", th0=np.pi, dims=(1, 1, 1, 1))
        res = fm.simulate(m, 1.0, dt, rho_inf=0.9)
        assert res.status == "finished"
        th = res.coordinate("O2.q")
        assert th.max() > 3.0  # crank from π (folded) to ~2π (extended)
        assert np.abs(res.coordinate("O4.q") - th).max() < 1e-6  # parallelogram branch: rocker = crank
        assert closure(res, m).max() <= 1e-10
        E = res.total_energy
        drift.append(np.abs(E - E[0]).max())
    assert drift[0] < 1e-4 * 9.81 and drift[0] / drift[1] > 3


def test_bricard_overconstrained_linkage_runs_with_a_rigid_cut():
    """Bricard's orthogonal 6R (Grübler 0, mobility 1; the cut's 5 rows have rank 4): J1 driven 0.25 rad
    from rest; the joints follow the closed-form relation docs/loops.md (B3) cos θ1 + cos θ2 + cos θ1 cos θ2 = 0 and
    θ3 = -θ1 to 1e-10 (measured 1.6e-15), the cut closed within 1e-10 m."""
    m = bricard("rigid", drive=ramp(0.0, 0.5, 1.0))
    res = fm.simulate(m, 1.0, 2e-3, rho_inf=0.8)
    assert res.status == "finished"
    q = {n: res.coordinate(f"{n}.q") for n in ("J1", "J2", "J3", "J4", "J5")}
    assert q["J1"][-1] == pytest.approx(0.25, rel=1e-9) and abs(q["J2"][-1]) > 0.1  # it moved: 1 DOF
    assert np.abs(bricard_relation(q["J1"], q["J2"])).max() < 1e-10
    assert np.abs(q["J3"] + q["J1"]).max() < 1e-10 and np.abs(q["J4"] + q["J2"]).max() < 1e-10
    assert closure(res, m, "J6").max() <= 1e-10


def test_driven_singular_start_fails_with_a_message_naming_the_cut():
    """The rhombus driven from rest at its folded configuration (docs/loops.md §2.2): no rigid loop can follow
    (unbounded cut forces); the run fails saying which cut and what to do."""
    m = four_bar("rigid", th0=np.pi, dims=(1, 1, 1, 1), drive=ramp(0.0, 2.0, 1.0), g=0.0)
    res = fm.simulate(m, 0.3, 2e-3, rho_inf=0.8)
    assert res.status.startswith("failed") and "rigid cut 'B'" in res.status and "add_bushing" in res.status
    with pytest.raises(FlexmbError, match="rigid cut 'B' does not close"):
        fm.simulate(m, 0.3, 2e-3, rho_inf=0.8, raise_on_failure=True)


def hanging_mass(cut: str, m: float = 2.0, g: float = 9.81):
    """A mass on a vertical prismatic joint held by a cut to ground at its node: the loop ground -> slider
    -> cut -> ground. Elastic: a bushing k = 1e6 N/m (default damping); rigid: add_rigid_cut."""
    mb = fm.ModelBuilder(gravity=(0.0, -g, 0.0))
    mb.add_node("mass", (0.0, 1.0, 0.0))
    mb.add_body("mass", "mass", m, (0, 0, 0), np.eye(3) * 0.01)
    mb.add_joint("slide", "prismatic", "ground", "mass", axis=(0, 1, 0))
    if cut == "rigid":
        mb.add_rigid_cut("hold", "ground", "mass", point=(0.0, 1.0, 0.0))
    else:
        mb.add_bushing("hold", "ground", "mass", stiffness=[1e6] * 6, point=(0.0, 1.0, 0.0))
    return mb.compile()


@pytest.mark.parametrize("cut", ["elastic", "rigid"])
def test_cut_force_of_a_hanging_mass_is_its_weight_and_reaches_paraview(cut, tmp_path):
    """Equilibrium: the cut holding a 2 kg mass exerts m g = 19.62 N upwards on it (its end b), in cut
    and global axes (elastic: once the default damping has settled the drop, 1e-6 relative; rigid:
    at every row, from the start); the ParaView cell data of the cut's cell carry the same values."""
    model = hanging_mass(cut)
    res = fm.simulate(model, 0.2, 1e-3)
    assert res.status == "finished"
    F = res.cut_force("hold")
    rows = slice(None) if cut == "rigid" else slice(-1, None)
    assert np.allclose(F[rows, 1], 2.0 * 9.81, rtol=1e-6)
    assert np.abs(F[rows][:, [0, 2, 3, 4, 5]]).max() < 1e-6 * 19.62
    assert np.array_equal(F, res.cut_force("hold", "global"))  # cut axes = global axes here
    pvd = write_pvd(res, None, tmp_path, "hang")
    last = ET.parse(pvd).getroot().find("Collection").findall("DataSet")[-1]
    mesh = meshio.read(tmp_path / last.get("file"))
    kind = mesh.cell_data["cell_kind"][0]
    cell = np.flatnonzero(kind == cell_kinds().index("bushing" if cut == "elastic" else "rigid_cut"))
    assert cell.size == 1
    for c, col in enumerate(("cut_force_x", "cut_force_y", "cut_force_z", "cut_moment_x", "cut_moment_y", "cut_moment_z")):
        assert mesh.cell_data[col][0][cell[0]] == F[-1, c]
        assert not np.delete(mesh.cell_data[col][0], cell).any()  # zero on the other cells


@pytest.mark.parametrize("cut", ["elastic", "rigid"])
def test_slider_crank_wrist_pin_force_equals_a_hand_free_body_balance(cut):
    """In-line slider-crank, crank held at 0.6 rad, slider pushed by P = 100 N towards the crank, no
    gravity: at rest the rod is a two-force member, so the pin force on the slider is f e along the rod
    (e from A to B) with the slider's x balance f e_x - P = 0 (the guide takes y): F = P e / e_x. Rigid:
    from the first row; elastic (k = 1e8, default damping): once settled. Moment about the pin: 0 (a
    revolute pin; the tilt rows carry nothing in the plane). Elastic: within 1e-6 P (measured 3.4e-5 N)."""
    model, geo = slider_crank(cut)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        res = fm.simulate(model, 0.3, 1e-3)
    assert res.status == "finished"
    # elastic: the step load on the 1e8 N/m cut (omega dt about 8) is a transient dt does not resolve: the damping
    # books about six times the load's work while it rings (flexmb/solvers/energy_check.py), and the run says so
    assert [issubclass(x.category, EnergyWarning) for x in w] == ([True] if cut == "elastic" else [])
    if cut == "elastic":  # the cut named, its stiffest direction first
        assert "(stiff for the step: bushing 'wrist' ty (omega*dt = " in str(w[0].message)
    e, P = geo["e"], geo["P"]
    expect = P * e / e[0]
    F = res.cut_force("wrist", "global")
    rows = slice(None) if cut == "rigid" else slice(-1, None)
    # rigid: the multipliers are known to the penalty's round-off, α·eps·L per iteration: with α = 1e4 m_eff/β'
    # = 6.5e10 N/m (m_eff 1.65 kg, h = 1e-3) that is 16 eps L² α ~ 1.5e-4 N (rigid_cut (AL4)); measured 2.3e-4 N
    tol = 1e-5 * P if cut == "rigid" else 1e-6 * P
    assert np.abs(F[rows, :3] - expect).max() < tol
    assert np.abs(F[rows, 3:]).max() < tol * geo["ell"]


def test_statics_holds_a_rigid_cut_and_modal_analysis_finds_no_mode_naming_it():
    """Statics holds a rigid cut by its own multiplier iteration (docs/statics.md §2): the hanging mass's
    cut carries its weight, m g up on the mass, to 1e-8; modal analysis holds the cut too (docs/modal.md
    (MO7)), which leaves the slider no degree of freedom: it says so, naming the cut (instead of the modes
    of the cut-open mechanism)."""
    from flexmb.solvers.modal import natural_frequencies
    from flexmb.solvers.statics import static_equilibrium

    model = hanging_mass("rigid")
    F = static_equilibrium(model).cut_forces["hold"]
    assert F[1] == pytest.approx(2.0 * 9.81, rel=1e-8)
    assert np.abs(F[[0, 2, 3, 4, 5]]).max() <= 1e-8 * 2.0 * 9.81
    with pytest.raises(fm.SolverError, match="natural_frequencies: the constraints .rigid cut 'hold'.*no degree"):
        natural_frequencies(model, n_modes=1)


def beam_coupler_four_bar(cut: str):
    """The Grashof four-bar with a 4-element beam coupler (E = 0.7e11 Pa, A = 4e-4 m², I = 2e-7 m⁴,
    ρ = 3000 kg/m³; default damping) closed at B on the rocker by a rigid cut (``cut`` "rigid") or by a
    tree joint (the beam is then the cut); crank driven from rest to 2π rad/s over 0.5 s."""
    a, b, c, d = GRASHOF
    A = np.array([a * np.cos(1.0), a * np.sin(1.0), 0.0])
    th4 = rocker_angle(1.0, *GRASHOF)
    B = np.array([d + c * np.cos(th4), c * np.sin(th4), 0.0])
    O4 = np.array([d, 0.0, 0.0])
    z = (0.0, 0.0, 1.0)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, A / 2, rod_inertia(1.0, a, A))
    mb.add_node("rocker", O4)
    mb.add_body("rocker", "rocker", 1.0, (B - O4) / 2, rod_inertia(1.0, c, B - O4))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=z)
    sec = fm.BeamSection(0.7e11, 0.7e11 / 2.6, 4e-4, 2e-7, 2e-7, 4e-7, 3000.0)
    nodes = mb.add_flexible_link("coupler", A, B, 4, sec)
    mb.add_joint("A", "revolute", "crank", nodes[0], point=A, axis=z)
    if cut == "rigid":
        mb.add_rigid_cut("B", "rocker", nodes[-1], point=B, free_rotation="z")
    else:
        mb.add_joint("B", "revolute", "rocker", nodes[-1], point=B, axis=z)
    mb.add_drive("O2", *ramp(0.0, 2 * np.pi, 0.5))
    return mb.compile()


def test_rigid_cut_beside_elastic_elements_keeps_the_energy_balance():
    """A rigid cut closing a loop through a flexible beam gives the motion of the same loop closed by a
    tree joint (rocker angle within 1e-7 rad; measured 2.4e-8 over 1 s) and an energy-balance error of the
    same size (measured 3.95e-5 J against 4.0e-5 J at 1 s), with the velocities projected (AL5) in the
    mass-orthogonal metric M̄ + β'αΦ_qᵀΦ_q and the drive forces of the converged iterate (AL10);
    docs/rigid_cut.md §4 gives the variants measured (2.1e-3 J in the metric of S, 4.4e-4 J with the
    drive forces re-evaluated after the projections)."""
    out = {}
    for cut in ("rigid", "joint"):
        res = fm.simulate(beam_coupler_four_bar(cut), 1.0, 1e-3, rho_inf=0.8)
        assert res.status == "finished"
        out[cut] = (res.coordinate("O4.q"), np.ptp(res.total_energy))
    assert np.abs(out["rigid"][0] - out["joint"][0]).max() < 1e-7
    assert out["rigid"][1] < 2 * out["joint"][1]


def test_closure_wrenches_are_gt_pt_f_on_the_held_rows_and_the_bushings_wrenches_take_every_row():
    """The cut kernels' node wrenches against numpy's products: the rigid cuts' closure_wrenches
    Gᵀ Pᵀ f on the held rows only (elements/rigid_cut_kernels.py), the bushings' add_generalized Gᵀ f
    on all six (elements/cut_kernels.py), each end's half to its node (row N: ground)."""
    from flexmb.elements.cut_kernels import add_generalized
    from flexmb.elements.rigid_cut_kernels import closure_wrenches

    rng = np.random.default_rng(35)
    n, N = 5, 3
    G, f = rng.standard_normal((n, 6, 12)), rng.standard_normal((n, 6))
    mask = rng.random((n, 6)) < 0.6
    ia, ib = np.array([0, 1, 3, 2, 0]), np.array([1, 2, 0, 3, 1])
    for held, kernel in ((mask, lambda w: closure_wrenches(G, mask, f, ia, ib, w)),
                         (np.ones((n, 6), bool), lambda w: add_generalized(G, f, ia, ib, w))):
        expected = np.zeros((N + 1, 6))
        for e in range(n):
            g = G[e].T @ np.where(held[e], f[e], 0.0)
            expected[ia[e]] += g[:6]
            expected[ib[e]] += g[6:]
        w = np.zeros((N + 1, 6))
        kernel(w)
        np.testing.assert_allclose(w, expected, rtol=1e-13, atol=1e-13)
    assert not np.allclose(expected, 0.0)


def test_the_cut_kernels_arrays_share_the_cut_frames_in_the_order_the_compiled_step_passes_them():
    """RigidCutArrays and BushingArrays start with the cut frames (CUT_FRAMES), and the compiled element
    step's plain tuples hold the same arrays in that order (docs/architecture.md P6)."""
    from flexmb.elements.cut_kernels import CUT_FRAMES, BushingArrays
    from flexmb.elements.rigid_cut_kernels import RigidCutArrays
    from flexmb.engine.assembly import Assembler
    from flexmb.solvers.element_step import ElementStep

    frames = tuple(name for name, _ in CUT_FRAMES)
    assert RigidCutArrays._fields == (*frames, "mask", "alpha_scale", "tol", "tol_rot")
    assert BushingArrays._fields == (*frames, "K", "C")
    model = four_bar(cut="rigid")
    data = model.elements["rigid_cut"]
    es = ElementStep(model, Assembler(model))
    for name, array in zip(RigidCutArrays._fields[2:], es.rigid[2:]):
        assert np.array_equal(array, getattr(data, name)), name
