"""Initial states: the relaxed start that carries free FE nodes along with the joints' q0/u0
(issue 11.10, flexmb/solvers/initial.py)."""

import warnings

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.solvers.energy_check import EnergyWarning
from flexmb.solvers.initial import StartWarning, relax_free_nodes

EA_STEEL = 2.1e11 * 1e-4


def hanging_beam(q0=0.2, u0=0.0, floating=False):
    """A hub body on a pivot (q0, u0) with an 8-element steel beam clamped to it at (1, 0, 0),
    hanging along -y in the assembly configuration; optionally a second beam floating free."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("hub", (0, 0, 0))
    mb.add_body("hub", "hub", 2.0, (0.5, 0, 0), np.diag([0.01, 0.2, 0.2]))
    mb.add_joint("pivot", "revolute", "ground", "hub", axis=(0, 0, 1), q0=q0, u0=u0)
    sec = fm.BeamSection(2.1e11, 8e10, 1e-4, 1e-9, 1e-9, 2e-9, 7800.0)
    mb.add_flexible_link("rope", (1.0, 0, 0), (1.0, -1.0, 0), 8, sec, damping=1e-4)
    mb.add_joint("clamp", "fixed", "hub", "rope.0", point=(1, 0, 0))
    if floating:
        mb.add_flexible_link("drifter", (3.0, 0, 0), (4.0, 0, 0), 2, sec)
    return mb.compile()


def test_hanging_beam_starts_unstrained_and_runs():
    """q0 = 0.2 on the pivot: unrelaxed, the beam nodes stay where they were built while the
    clamp turns, 3.3e6 J of strain energy and 3.3e7 N of axial force, and the run fails within a
    millisecond. Relaxed (simulate's default), the beam is the assembly beam turned rigidly by 0.2
    rad about the pivot, unstrained, and the swing conserves energy."""
    m = hanging_beam()
    raw = m.initial_state()
    asm = Assembler(m)
    ev = asm.evaluate(raw)
    assert ev.strain_energy > 1e6 and np.abs(asm.element_output(ev, "beam", "section_forces")[:, 0]).max() > 1e7
    assert fm.simulate(m, 0.05, 1e-3, state=raw).status.startswith("failed")

    st, rep = relax_free_nodes(m)
    ev = Assembler(m).evaluate(st)
    c, s = np.cos(0.2), np.sin(0.2)
    Q = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])
    beam = [m.node_index(f"rope.{i}") for i in range(9)]
    assert np.abs(ev.kin.x[beam] - m.X0[beam] @ Q.T).max() < 1e-14
    assert np.abs(ev.kin.R[beam] - Q @ m.R0[beam]).max() < 1e-14
    assert ev.strain_energy < 1e-20 and rep.strain_energy == ev.strain_energy and rep.moved
    assert rep.relaxed_nodes == tuple(f"rope.{i}" for i in range(1, 9))

    res = fm.simulate(m, 0.3, 1e-3)
    assert res.status == "finished"
    assert res.meta["start"]["strain_energy"] < 1e-20 and res.meta["start"]["relaxed_nodes"] == 8
    E = res.energy
    total = E["kinetic"] + E["potential"] + E["strain"] + E["dissipated"] - E["drive_work"] - E["load_work"]
    assert np.ptp(total) < 1e-4 * E["kinetic"].max()
    assert np.abs(res.element_forces[:, :, 0]).max() < 1e-6 * EA_STEEL  # strain below 1e-6 all along


def test_u0_on_the_carrying_joint_moves_the_beam_with_the_body():
    """u0 = 1.5 rad/s on the pivot: every beam node starts with the hub's velocity field
    v_i = v_hub + w x (x_i - x_hub), w_i = w (unrelaxed, they start at rest)."""
    for q0 in (0.0, 0.2):
        m = hanging_beam(q0=q0, u0=1.5)
        assert not np.any(m.initial_state().u[m.free_u][1:])  # today: beam nodes at rest
        st, rep = relax_free_nodes(m)
        assert rep.velocities
        kin = Assembler(m).evaluate(st).kin
        hub = m.node_index("hub")
        w = kin.V[hub, 3:]
        assert np.allclose(w, (0, 0, 1.5), rtol=0, atol=1e-15)
        v_rigid = kin.V[hub, :3] + np.cross(w, kin.x - kin.x[hub])
        assert np.abs(kin.V[:, :3] - v_rigid).max() < 1e-9 * 1.5
        assert np.abs(kin.V[:, 3:] - w).max() < 1e-9 * 1.5
        assert np.linalg.norm(kin.V[m.node_index("rope.8"), :3]) == pytest.approx(1.5 * np.hypot(1.0, 1.0), rel=1e-9)


def test_a_model_at_its_assembly_configuration_starts_bit_for_bit_unchanged():
    """q0 = 0 and u0 = 0 everywhere: the relaxed start is the model's initial state itself, and
    simulate's results are identical to those from that state."""
    m = hanging_beam(q0=0.0)
    st, rep = relax_free_nodes(m)
    raw = m.initial_state()
    assert np.array_equal(st.q, raw.q) and np.array_equal(st.balls, raw.balls) and np.array_equal(st.u, raw.u)
    assert not rep.moved and not rep.velocities
    a = fm.simulate(m, 0.02, 1e-3)
    b = fm.simulate(m, 0.02, 1e-3, state=raw)
    for name in ("q", "u", "udot", "x", "R", "reactions", "element_forces"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_a_floating_beam_linked_to_nothing_held_is_left_alone():
    """A second beam floating free (no joint, no element to anything held) has no support to
    follow: it keeps its coordinates, and the relaxation of the hanging one is not disturbed."""
    m = hanging_beam(floating=True)
    st, rep = relax_free_nodes(m)
    assert not any(n.startswith("drifter") for n in rep.relaxed_nodes)
    drifter = [k for k, n in enumerate(m.coordinate_names) if n.startswith("drifter")]
    assert drifter and not np.any(st.u[drifter])
    assert rep.strain_energy < 1e-20


def planar_four_bar_with_beam_coupler(crank_q0=0.0, rocker_q0=0.0):
    """Crank 0.3 m (A at the origin), coupler beam 1 m, rocker 0.8 m (D at (1, 0)), built at
    crank angle 90 degrees: B = (0, 0.3), C from the circle intersection."""
    a, b, c, d = 0.3, 1.0, 0.8, 1.0
    B = np.array([0.0, a])
    dist = np.linalg.norm(np.array([d, 0.0]) - B)
    e = (np.array([d, 0.0]) - B) / dist
    x = (b**2 - c**2 + dist**2) / (2 * dist)
    C = B + x * e + np.sqrt(b**2 - x**2) * np.array([-e[1], e[0]])
    z = (0, 0, 1)
    mb = fm.ModelBuilder()
    mb.add_node("crank", (0, 0, 0))
    mb.add_body("crank", "crank", 1.0, (0, a / 2, 0), np.diag([0.01, 0.0, 0.01]))
    mb.add_node("rocker", (d, 0, 0))
    mb.add_body("rocker", "rocker", 1.0, tuple((C - [d, 0]) / 2) + (0,), np.diag([0.05, 0.05, 0.05]))
    mb.add_joint("A", "revolute", "ground", "crank", point=(0, 0, 0), axis=z, q0=crank_q0)
    mb.add_joint("D", "revolute", "ground", "rocker", point=(d, 0, 0), axis=z, q0=rocker_q0)
    sec = fm.BeamSection(7e10, 2.7e10, 4e-4, 2e-8, 2e-8, 4e-8, 2700.0)
    nodes = mb.add_flexible_link("coupler", tuple(B) + (0,), tuple(C) + (0,), 4, sec)
    mb.add_joint("B", "revolute", "crank", nodes[0], point=tuple(B) + (0,), axis=z)
    mb.add_joint("C", "revolute", "rocker", nodes[-1], point=tuple(C) + (0,), axis=z)
    return mb.compile()


def test_a_start_that_cannot_close_its_loop_is_warned_naming_the_element():
    """Crank turned by q0 = 0.1 with the rocker left at 0: the coupler beam's ends moved apart,
    no placement of its interior nodes unstrains it. The relaxation bends it into equilibrium
    (Newton iterations > 0: its free nodes are no longer where the predictor put them) and warns
    naming the most strained coupler element; a consistent start (rocker at its closed-form
    angle) would not warn."""
    m = planar_four_bar_with_beam_coupler(crank_q0=0.1)
    with pytest.warns(StartWarning, match=r"element 'coupler\.e\d'.*equivalent strain") as rec:
        st, rep = relax_free_nodes(m)
    assert rep.iterations > 0 and rep.worst_element.startswith("coupler.e") and rep.worst_strain > 1e-4
    asm = Assembler(m)
    ev = asm.evaluate(st)
    assert rep.strain_energy == pytest.approx(ev.strain_energy, rel=1e-12)
    assert str(rep.worst_element) in str(rec[0].message)
    # the balance (1) holds at the relaxed interior nodes: element forces cancel there
    f = np.flatnonzero([n.startswith("coupler.") and ":free" in n for n in m.coordinate_names])
    r = ev.residual(np.zeros(m.n_u))
    assert np.abs(r[f]).max() < 1e-8 * np.abs(asm.element_output(ev, "beam", "section_forces")).max()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        relax_free_nodes(planar_four_bar_with_beam_coupler())


# ----------------------------------------------------------------------------- closed-loop starts (issue 11.15, 12.4)

def _perp(th):
    return np.array([-np.sin(th), np.cos(th)])


def four_bar_angles(th2, a, b, c, d):
    """Closed-form coupler and rocker angles (th3, th4) of the four-bar with ground pins A = 0 and
    D = (d, 0), crank AB = a at th2, coupler BC = b, rocker DC = c (the branch with C left of the
    line from B to D)."""
    B = a * np.array([np.cos(th2), np.sin(th2)])
    D = np.array([d, 0.0])
    dist = np.linalg.norm(D - B)
    e = (D - B) / dist
    x = (b**2 - c**2 + dist**2) / (2 * dist)
    C = B + x * e + np.sqrt(max(b**2 - x**2, 0.0)) * np.array([-e[1], e[0]])
    return np.arctan2(*(C - B)[::-1]), np.arctan2(*(C - D)[::-1])


def four_bar_rates(th2, a, b, c, d):
    """Coupler and rocker angular speeds per unit crank speed: a w2 e'(th2) + b w3 e'(th3) = c w4 e'(th4)."""
    th3, th4 = four_bar_angles(th2, a, b, c, d)
    return np.linalg.solve(np.column_stack([b * _perp(th3), -c * _perp(th4)]), -a * _perp(th2))


def four_bar_crank_acceleration(th2, w2, a, b, c, d, masses, g, h=1e-5):
    """Lagrange's equation of the rigid four-bar in the crank angle: m(th) th'' + m'(th) th'^2 / 2 + V'(th) = 0,
    m the generalized inertia of the three uniform rods from the closed-form rates, V their weight's
    potential; derivatives by central differences (h = 1e-5: error ~1e-10)."""
    m1, m2, m3 = masses

    def inertia_and_potential(t):
        th3, th4 = four_bar_angles(t, a, b, c, d)
        r3, r4 = four_bar_rates(t, a, b, c, d)
        B = a * np.array([np.cos(t), np.sin(t)])
        C = np.array([d, 0.0]) + c * np.array([np.cos(th4), np.sin(th4)])
        v1, v3 = 0.5 * a * _perp(t), 0.5 * c * r4 * _perp(th4)
        v2 = a * _perp(t) + 0.5 * b * r3 * _perp(th3)
        M = (m1 * (v1 @ v1 + a**2 / 12) + m2 * (v2 @ v2 + b**2 / 12 * r3**2) + m3 * (v3 @ v3 + c**2 / 12 * r4**2))
        return M, g * (m1 * B[1] / 2 + m2 * (B[1] + C[1]) / 2 + m3 * C[1] / 2)

    (Mp, Vp), (Mm, Vm), (M0, _) = (inertia_and_potential(th2 + h), inertia_and_potential(th2 - h),
                                   inertia_and_potential(th2))
    return -((Vp - Vm) / (2 * h) + 0.5 * (Mp - Mm) / (2 * h) * w2**2) / M0


def bushing_four_bar(a=0.3, b=1.0, c=0.8, d=1.0, th2=1.0, masses=(1.0, 2.0, 1.5), k=1e8, g=9.81, u0=0.0):
    """Rigid crank (pin A at the origin), coupler (on the crank at pin B) and rocker (pin D at (d, 0)),
    uniform rods, built at crank angle th2; the loop cut by a revolute bushing at C between coupler
    and rocker (translations k, bending rotations k/100, damped). No drive."""
    th3, th4 = four_bar_angles(th2, a, b, c, d)
    B = a * np.array([np.cos(th2), np.sin(th2), 0.0])
    D = np.array([d, 0.0, 0.0])
    C = D + c * np.array([np.cos(th4), np.sin(th4), 0.0])
    mb = fm.ModelBuilder(gravity=(0, -g, 0))

    def rod(name, p, q, mass):
        e = (q - p) / np.linalg.norm(q - p)
        mb.add_node(name, p)
        mb.add_body(name, name, mass, (q - p) / 2, mass * np.linalg.norm(q - p) ** 2 / 12 * (np.eye(3) - np.outer(e, e)))

    rod("crank", np.zeros(3), B, masses[0])
    rod("coupler", B, C, masses[1])
    rod("rocker", D, C, masses[2])
    z = (0, 0, 1)
    mb.add_joint("A", "revolute", "ground", "crank", point=(0, 0, 0), axis=z, u0=u0)
    mb.add_joint("B", "revolute", "crank", "coupler", point=B, axis=z)
    mb.add_joint("D", "revolute", "ground", "rocker", point=D, axis=z)
    K = np.array([k, k, k, k / 100, k / 100, 0.0])
    mb.add_bushing("C", "coupler", "rocker", stiffness=K, damping=1e-3 * K, point=C, free_rotation="z")
    return mb.compile(), (th2, th3, th4)


GEOMETRY = dict(a=0.3, b=1.0, c=0.8, d=1.0)


def test_consistent_start_of_an_undriven_four_bar_from_the_crank():
    """Issue 12.4: crank angle and speed given (1.5 rad, 2 rad/s; built at 1 rad), no drive: the
    coupler and rocker take the closed-form angles and speeds, the cut starts unloaded (its
    deformation and the closure rate J u vanish), and the run follows the rigid four-bar (1e-6 rad),
    while the start with the same crank speed and the rest at rest rings (rocker off by > 1e-5 rad)."""
    from flexmb.analysis.rigid import RigidModel
    from flexmb.solvers.initial import consistent_state

    m, (th2, th3, th4) = bushing_four_bar(u0=2.0)
    st = consistent_state(m, {"A.q": (0.5, 2.0)})
    e3, e4 = four_bar_angles(th2 + 0.5, **GEOMETRY)
    w3, w4 = 2.0 * four_bar_rates(th2 + 0.5, **GEOMETRY)
    q = dict(zip(m.coordinate_names, st.q))
    u = dict(zip(m.coordinate_names, st.u))
    assert q["A.q"] == 0.5 and u["A.q"] == 2.0
    assert q["D.q"] == pytest.approx(e4 - th4, abs=1e-12) and u["D.q"] == pytest.approx(w4, abs=1e-12)
    assert q["B.q"] == pytest.approx(e3 - th3 - 0.5, abs=1e-12) and u["B.q"] == pytest.approx(w3 - 2.0, abs=1e-12)
    c, J = RigidModel(m).closure(st)
    assert np.abs(c).max() < 1e-14 and np.abs(J @ st.u).max() < 1e-13
    assert Assembler(m).evaluate(st).strain_energy < 1e-20

    def rocker_error(res):
        th4_cf = np.array([four_bar_angles(t, **GEOMETRY)[1] for t in th2 + res.coordinate("A.q")])
        return np.abs(res.coordinate("D.q") - (th4_cf - th4)).max()

    with warnings.catch_warnings():
        warnings.simplefilter("error", EnergyWarning)  # the consistent start keeps the energy balance
        assert rocker_error(fm.simulate(m, 0.3, 1e-3, state=st)) < 1e-6
    # u0 on the crank only: the cut is hit at the start, and the energy balance says so (a rise of about
    # all the energy the run moved, booked as dissipated by the cut ringing far above 1/dt)
    with pytest.warns(EnergyWarning, match=r"rose by .* by t = .* \(the dissipated energy changed most.*stiff for the step: "
                      r"bushing 'C' tx \(omega\*dt = "):
        assert rocker_error(fm.simulate(m, 0.3, 1e-3)) > 1e-5
    with pytest.raises(fm.SolverError, match="rank 2 < 3.*1 more degree"):  # nothing given: the mobility is free
        consistent_state(m)
    # a list of names takes the values from the model's q0/u0
    st2 = consistent_state(m, ["A"])
    assert st2.u[m.coordinate_index("A")] == 2.0 and np.abs(RigidModel(m).closure(st2)[1] @ st2.u).max() < 1e-13


def test_preloaded_state_works_without_drives():
    """Issue 11.15: preloaded_state on the undriven four-bar (today: "Matrix is exactly singular",
    then "did not converge (residual nan)"). From the consistent start, the rigid accelerations
    (Gauss's principle) equal Lagrange's equation of the closed-form four-bar, and the preloaded
    elastic state satisfies the elastic equations of motion with them: the cut carries the
    force of the motion (strain energy > 0, residual ~ 0) and moves the crank by < 1e-7 rad."""
    from flexmb.analysis.rigid import RigidModel, consistent_motion, preloaded_state
    from flexmb.solvers.initial import consistent_state

    masses = (1.0, 2.0, 1.5)
    m, (th2, _, _) = bushing_four_bar(masses=masses)
    st = consistent_state(m, {"A.q": (0.5, 2.0)})
    ref = four_bar_crank_acceleration(th2 + 0.5, 2.0, **GEOMETRY, masses=masses, g=9.81)
    rigid, n_free = consistent_motion(m, st)
    assert n_free == 1 and np.abs(rigid.u - st.u).max() < 1e-14  # a consistent velocity is kept
    assert rigid.udot[0] == pytest.approx(ref, rel=1e-7)
    pre = preloaded_state(m, st)
    # the elastic start differs from the rigid one by the cut's compliance (1e8 N/m: positions by
    # ~3e-8 rad): accelerations within 1e-6 of g / b
    assert np.abs(pre.udot - rigid.udot).max() < 1e-6 * 9.81 / GEOMETRY["b"]
    ev = Assembler(m).evaluate(pre)
    assert ev.strain_energy > 1e-8
    # residual within preloaded_state's rtol (1e-8) of the loads the cut carries (the weights;
    # docs/loops.md §5.1: a scale with the cut forces in it shrinks to round-off at the equilibrium)
    assert np.abs(ev.residual(pre.udot)).max() < 1e-8 * sum(masses) * 9.81
    assert abs(pre.q[0] - 0.5) < 1e-7
    assert np.abs(RigidModel(m).closure(pre)[1] @ pre.u).max() < 1e-6  # closure rate at the (elastic) positions
    # from the model's own state (assembly, crank speed only): velocities projected mass-orthogonally on J u = 0
    m2, _ = bushing_four_bar(masses=masses, u0=2.0)
    pre2 = preloaded_state(m2)
    assert np.abs(RigidModel(m2).closure(pre2)[1] @ pre2.u).max() < 1e-6 * np.abs(pre2.u).max()
    Mbar = Assembler(m2).mbar(Assembler(m2).evaluate(pre2)).toarray()
    du = pre2.u - m2.initial_state().u
    _, J = RigidModel(m2).closure(pre2)
    null = np.linalg.svd(J)[2][2:].T  # the four-bar's free motion
    assert np.abs(null.T @ Mbar @ du).max() < 1e-6 * np.abs(Mbar @ du).max()  # the change is M-orthogonal to it


def test_consistent_start_at_the_folded_change_point_needs_the_branch():
    """The change-point four-bar (all links 1 m) folded (crank along -x, C on A): given the crank
    alone, coupler and rocker speeds are not determined (three branches leave this configuration),
    which the start refuses, naming the coordinates; given the rocker's speed too it starts on the
    branch that speed chooses: equal to the crank's, the parallelogram (the coupler translates,
    w3 = 0); zero, the branch where C rests on A (the coupler turns with the crank). preloaded_state
    there refuses too, with the closure's singular values."""
    from flexmb.analysis.rigid import RigidModel
    from flexmb.solvers.initial import consistent_state

    m, _ = bushing_four_bar(a=1.0, b=1.0, c=1.0, d=1.0, th2=np.pi)
    with pytest.raises(fm.SolverError, match=r"\['B.q', 'D.q'\] are not determined.*rank 1 < 2.*singular configuration"):
        consistent_state(m, {"A.q": (0.0, 1.0)})
    for w4, w3 in ((1.0, 0.0), (0.0, 1.0)):
        st = consistent_state(m, {"A.q": (0.0, 1.0), "D.q": (0.0, w4)})
        assert st.u[m.coordinate_index("B")] == pytest.approx(w3 - 1.0, abs=1e-12)
        assert np.abs(RigidModel(m).closure(st)[1] @ st.u).max() < 1e-13
    # preloaded_state there: velocities and accelerations exist (Gauss), the cut cannot carry them by small
    # deformations (the closure lost rank along the line of the links): refused, saying so
    from flexmb.analysis.rigid import preloaded_state

    folded, _ = bushing_four_bar(a=1.0, b=1.0, c=1.0, d=1.0, th2=np.pi, u0=1.0)
    with pytest.raises(fm.SolverError, match=r"singular values \[.*\].*singular configuration.*consistent_state"):
        preloaded_state(folded)
    with pytest.raises(fm.SolverError, match="do not close"):
        consistent_state(m, {"A.q": (0.0, 1.0), "D.q": (0.5, 0.0)})  # a rocker angle the loop cannot reach
    with pytest.raises(fm.ModelError, match="'E.q' is no coordinate"):
        consistent_state(m, {"E.q": 0.0})


def test_consistent_start_of_a_loop_cut_through_a_beam():
    """The four-bar whose coupler is a 4-element beam (the loop closes through it), crank turned
    by 0.1 rad at 1 rad/s: the rocker takes the closed-form angle and speed (rigid coupler = the
    distance condition of RigidClosure), the pins turn the beam onto its chord and the relaxation
    places its interior nodes: no strain, every beam node turns at the closed-form coupler speed."""
    from flexmb.analysis.monitors import RigidClosure
    from flexmb.solvers.initial import consistent_state

    m = planar_four_bar_with_beam_coupler()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        st = consistent_state(m, {"A.q": (0.1, 1.0)})
    th3, th4 = four_bar_angles(np.pi / 2, **GEOMETRY)
    e3, e4 = four_bar_angles(np.pi / 2 + 0.1, **GEOMETRY)
    w3, w4 = four_bar_rates(np.pi / 2 + 0.1, **GEOMETRY)
    D = m.coordinate_index("D")
    assert st.q[m.u_to_q[D]] == pytest.approx(e4 - th4, abs=1e-12) and st.u[D] == pytest.approx(w4, abs=1e-12)
    ev = Assembler(m).evaluate(st)
    assert ev.strain_energy < 1e-20
    c, J = RigidClosure(m).closure(st)
    assert np.abs(c).max() < 1e-14 and np.abs(J @ st.u).max() < 1e-13
    beam = [m.node_index(f"coupler.{i}") for i in range(5)]
    assert np.abs(ev.kin.V[beam, 5] - w3).max() < 1e-12 and np.abs(ev.kin.V[beam, 3:5]).max() < 1e-14
    chord = ev.kin.x[beam[-1]] - ev.kin.x[beam[0]]
    assert np.arctan2(chord[1], chord[0]) == pytest.approx(e3, abs=1e-12)


def test_a_floating_mechanism_carries_its_beam_along():
    """A free-floating body (no joint to ground) with an arm on a revolute joint (q0 = 0.4,
    u0 = 0.5) and a beam welded to the arm: the floating body is held, the beam follows the arm
    rigidly (unrelaxed: 1.4e5 J and the run fails within a millisecond)."""
    mb = fm.ModelBuilder()
    mb.add_node("root", (0, 0, 0))
    mb.add_body("root", "root", 5.0, (0, 0, 0), np.eye(3))
    mb.add_node("arm", (0.5, 0, 0))
    mb.add_body("arm", "arm", 1.0, (0.25, 0, 0), np.eye(3) * 0.01)
    mb.add_joint("elbow", "revolute", "root", "arm", point=(0.5, 0, 0), axis=(0, 0, 1), q0=0.4, u0=0.5)
    sec = fm.BeamSection(7e10, 2.7e10, 1e-4, 1e-9, 1e-9, 2e-9, 2700.0)
    mb.add_flexible_link("tail", (1.0, 0, 0), (2.0, 0, 0), 4, sec)
    mb.add_joint("weld", "fixed", "arm", "tail.0", point=(1.0, 0, 0))
    m = mb.compile()
    assert Assembler(m).evaluate(m.initial_state()).strain_energy > 1e5
    st, rep = relax_free_nodes(m)
    assert rep.relaxed_nodes == ("tail.1", "tail.2", "tail.3", "tail.4") and rep.strain_energy < 1e-20
    kin = Assembler(m).evaluate(st).kin
    arm = m.node_index("arm")
    w = kin.V[arm, 3:]
    assert w[2] == pytest.approx(0.5, abs=1e-15)
    assert np.abs(kin.V[:, :3][arm:] - (kin.V[arm, :3] + np.cross(w, kin.x[arm:] - kin.x[arm]))).max() < 1e-9
    assert fm.simulate(m, 0.05, 1e-3).status == "finished"
