"""Loops with no free coordinate: every joint of the loop fixed or driven, closed by a bushing or a
rigid cut (flexmb.builder.cut_defaults). A bushing there is a spring on a prescribed motion
(inverse dynamics: its force follows from its stiffness and its default damping from the loop's
mass, the cap (D8)); a rigid cut there is refused when the drives open it, or when the model has
no undriven coordinate at all, with a ModelError naming the cut."""

import numpy as np
import pytest

import flexmb as fm

K = 1e4  # bushing stiffness [N/m, N m/rad]
V = 0.1  # slider drive speed [m/s]
M_SLIDER = 2.0
I_SLIDER = 0.01  # each principal moment [kg m^2]


def slider(drive_speed: float = V, pendulum: bool = False, start: float = 0.0) -> fm.ModelBuilder:
    """A 2 kg slider on a prismatic joint along x, driven at ``drive_speed`` from ``start`` (its
    coordinate at t = 0); ``pendulum``: plus an undriven pendulum on ground (a free coordinate away
    from the loop)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("slider", (0.0, 0.0, 0.0))
    mb.add_body("slider", "slider", M_SLIDER, (0.0, 0.0, 0.0), np.eye(3) * I_SLIDER)
    mb.add_joint("S", "prismatic", "ground", "slider", axis=(1.0, 0.0, 0.0))
    mb.add_drive("S", lambda t: start + drive_speed * t, lambda t: drive_speed + 0.0 * t, lambda t: 0.0 * t)
    if pendulum:
        mb.add_node("bob", (0.0, -1.0, 0.0))
        mb.add_body("bob", "bob", 1.0, (0.0, 0.0, 0.0), np.eye(3) * 0.01)
        mb.add_joint("P", "revolute", "ground", "bob", point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    return mb


def turntable() -> fm.ModelBuilder:
    """A body on a revolute joint about z through the origin, driven at 3 rad/s from rest angle 0,
    plus an undriven pendulum elsewhere."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("table", (0.3, 0.1, 0.0))
    mb.add_body("table", "table", 1.0, (0.2, 0.0, 0.0), np.eye(3))
    mb.add_joint("T", "revolute", "ground", "table", point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    mb.add_drive("T", lambda t: 3.0 * t, lambda t: 3.0 + 0.0 * t, lambda t: 0.0 * t)
    mb.add_node("bob", (0.0, -1.0, 0.0))
    mb.add_body("bob", "bob", 1.0, (0.0, 0.0, 0.0), np.eye(3) * 0.01)
    mb.add_joint("P", "revolute", "ground", "bob", point=(0.0, 0.0, 0.0), axis=(0.0, 0.0, 1.0))
    return mb


def test_a_bushing_on_a_fixed_joint_compiles_with_the_loop_mass_as_its_damping_mass():
    """A fixed joint closed by a bushing (issue 33.1: compile() crashed broadcasting an empty W): no
    coordinate at all, so every effective mass is inf and the default damping takes the cap (D8):
    c = 2 ζ √(k m_cap), m_cap = 1 kg on the translations and tr I = 3 kg m² on the rotations."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n0", (0.0, 0.0, 0.0))
    mb.add_body("b", "n0", 1.0, (0.2, 0.0, 0.0), np.eye(3))
    mb.add_joint("j0", "fixed", "ground", "n0")
    mb.add_bushing("bush", "ground", "n0", [10.0] * 6)
    model = mb.compile()
    bu = model.elements["bushing"]
    assert np.all(np.isinf(bu.m_eff[0]))
    m_r = 1.0 * 0.2**2 + 3.0  # Σ m |c - p|² + tr I about the cut point (the origin)
    expected = 2 * 0.5 * np.sqrt(10.0 * np.array([1.0, 1.0, 1.0, m_r, m_r, m_r]))
    assert np.diag(bu.C[0]) == pytest.approx(expected, rel=1e-12)
    res = fm.simulate(model, 0.003, 1e-3)
    assert res.status == "finished"
    assert not np.any(res.cut_force("bush"))  # the fixed joint keeps it undeformed


@pytest.mark.parametrize("pendulum", [False, True])
def test_a_driven_slider_welded_by_a_bushing_gives_the_spring_law_as_drive_force(pendulum):
    """Inverse dynamics of a driven slider welded to ground by a bushing (issue 33.1): the bushing
    force is -(k x + c x') with x = V t and the default damping c = 2 ζ √(k m) (m the slider's 2 kg),
    and the drive supplies exactly its opposite (no acceleration along x)."""
    mb = slider(pendulum=pendulum)
    mb.add_bushing("weld", "ground", "slider", [K] * 6)
    model = mb.compile()
    c = model.elements["bushing"].C[0, 0, 0]
    assert c == pytest.approx(np.sqrt(K * M_SLIDER), rel=1e-12)
    res = fm.simulate(model, 0.01, 1e-3)
    assert res.status == "finished"
    expected = -(K * V * res.t + c * V)
    assert res.cut_force("weld")[:, 0] == pytest.approx(expected, rel=1e-12)
    assert res.drive_force("S.q") == pytest.approx(-expected, rel=1e-9)


def test_a_rigid_cut_in_a_model_without_undriven_coordinates_is_refused_naming_it():
    """A driven revolute joint closed by a rigid cut (issue 33.1), every coordinate driven: the cut
    holds nothing, its force is undetermined and its projections have no unknowns; compile() says
    so and names the elastic alternative."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n0", (0.0, 0.0, 0.0))
    mb.add_body("b", "n0", 1.0, (0.2, 0.0, 0.0), np.eye(3))
    mb.add_joint("j0", "revolute", "ground", "n0", axis=(0.0, 0.0, 1.0))
    mb.add_drive("j0", lambda t: 2.0 * t)
    mb.add_rigid_cut("pin", "ground", "n0", free_rotation="z")
    with pytest.raises(fm.ModelError) as info:
        mb.compile()
    msg = str(info.value)
    assert "rigid cut 'pin'" in msg and "every coordinate of the model is fixed or driven" in msg
    assert "add_bushing('pin'" in msg


def test_a_rigid_cut_in_a_fixed_loop_is_refused_naming_it():
    """A fixed joint closed by a rigid cut (issue 33.1), no coordinate at all: refused as above."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("n0", (0.0, 0.0, 0.0))
    mb.add_body("b", "n0", 1.0, (0.2, 0.0, 0.0), np.eye(3))
    mb.add_joint("j0", "fixed", "ground", "n0")
    mb.add_rigid_cut("weld", "ground", "n0")
    with pytest.raises(fm.ModelError, match="rigid cut 'weld'"):
        mb.compile()


@pytest.mark.parametrize("speed, what", [(V, "opening at the rate 0.1 m/s in direction tx"),
                                         (0.0, None)])
def test_a_rigid_cut_the_drives_open_is_refused_and_one_they_keep_closed_runs(speed, what):
    """A driven slider welded to ground by a rigid cut, with an undriven pendulum elsewhere: moving,
    the drive opens the cut at 0.1 m/s and nothing can close it (refused, naming the cut, the
    direction and the rate); at rest the cut is redundant and the model runs."""
    mb = slider(speed, pendulum=True)
    mb.add_rigid_cut("weld", "ground", "slider")
    if what is None:
        res = fm.simulate(mb.compile(), 0.01, 1e-3)
        assert res.status == "finished"
        return
    with pytest.raises(fm.ModelError) as info:
        mb.compile()
    msg = str(info.value)
    assert "rigid cut 'weld'" in msg and "['S']" in msg and what in msg


def test_a_rigid_cut_the_drives_open_at_the_start_is_refused_with_the_gap():
    """As above with the drive holding the slider 0.1 m off the cut point: open by 0.1 m."""
    mb = slider(0.0, pendulum=True, start=0.1)
    mb.add_rigid_cut("weld", "ground", "slider")
    with pytest.raises(fm.ModelError, match=r"rigid cut 'weld'.*open by 0\.1 m in direction tx"):
        mb.compile()


def test_a_driven_turntable_pinned_by_a_rigid_cut_on_its_axis_runs():
    """A revolute joint driven at 3 rad/s, closed by a revolute rigid cut on the same axis (free
    rotation z at the joint point): the drive keeps the cut closed, so the cut is redundant; the
    model compiles and runs, the cut closed."""
    mb = turntable()
    mb.add_rigid_cut("pin", "ground", "table", point=(0.0, 0.0, 0.0), free_rotation="z")
    model = mb.compile()
    res = fm.simulate(model, 0.05, 1e-3)
    assert res.status == "finished"
    assert res.coordinate("T.q")[-1] == pytest.approx(0.15, rel=1e-12)
