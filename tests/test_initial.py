"""Initial states: the relaxed start that carries free FE nodes along with the joints' q0/u0
(issue 11.10, flexmb/solvers/initial.py)."""

import warnings

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler
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
    ev = Assembler(m).evaluate(raw)
    assert ev.strain_energy > 1e6 and np.abs(ev.beam_forces[:, 0]).max() > 1e7
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
    ev = Assembler(m).evaluate(st)
    assert rep.strain_energy == pytest.approx(ev.strain_energy, rel=1e-12)
    assert str(rep.worst_element) in str(rec[0].message)
    # the balance (1) holds at the relaxed interior nodes: element forces cancel there
    f = np.flatnonzero([n.startswith("coupler.") and ":free" in n for n in m.coordinate_names])
    r = ev.residual(np.zeros(m.n_u))
    assert np.abs(r[f]).max() < 1e-8 * np.abs(ev.beam_forces).max()
    with warnings.catch_warnings():
        warnings.simplefilter("error", StartWarning)
        relax_free_nodes(planar_four_bar_with_beam_coupler())
