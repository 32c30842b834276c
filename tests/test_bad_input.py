"""Bad model input is refused with a ModelError (LoopError for loops) whose message names the
offending item, at the call that introduces it (or at compile() for loops)."""

import math
import warnings
from contextlib import contextmanager

import numpy as np
import pytest

import flexmb as fm

NAN = math.nan
ROD = np.diag([0.0, 1 / 12, 1 / 12])


def builder() -> fm.ModelBuilder:
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("shoulder", position=(0, 0, 0))
    mb.add_node("elbow", position=(1, 0, 0))
    mb.add_body("upper_arm", node="shoulder", mass=1.0, com=(0.5, 0, 0), inertia=ROD)
    mb.add_joint("hinge", "revolute", parent="ground", child="shoulder", axis=(0, 0, 1))
    return mb


@contextmanager
def raises_naming(exc_type, *names):
    """exc_type is raised inside the block and every one of ``names`` appears in its message."""
    with pytest.raises(exc_type) as info:
        yield info
    msg = str(info.value)
    for n in names:
        assert n in msg, f"{n!r} not named in: {msg}"


# ---------------------------------------------------------------------------- names
def test_unknown_node_in_add_body():
    mb = builder()
    with raises_naming(fm.ModelError, "wrist", "forearm"):
        mb.add_body("forearm", node="wrist", mass=1.0)


@pytest.mark.parametrize("parent, child", [("wrist", "elbow"), ("shoulder", "wrist")])
def test_unknown_node_in_add_joint(parent, child):
    mb = builder()
    with raises_naming(fm.ModelError, "wrist", "bend"):
        mb.add_joint("bend", "revolute", parent=parent, child=child, axis=(0, 0, 1))


def test_duplicate_node_name():
    mb = builder()
    with raises_naming(fm.ModelError, "elbow"):
        mb.add_node("elbow", position=(2, 0, 0))


def test_duplicate_body_name():
    mb = builder()
    with raises_naming(fm.ModelError, "upper_arm"):
        mb.add_body("upper_arm", node="elbow", mass=1.0)


def test_duplicate_joint_name():
    mb = builder()
    with raises_naming(fm.ModelError, "hinge"):
        mb.add_joint("hinge", "revolute", parent="shoulder", child="elbow", axis=(0, 0, 1))


# ---------------------------------------------------------------------------- mass and inertia
@pytest.mark.parametrize("mass", [0.0, -1.0, 0, NAN])
def test_nonpositive_or_nan_mass(mass):
    mb = builder()
    with raises_naming(fm.ModelError, "forearm"):
        mb.add_body("forearm", node="elbow", mass=mass, inertia=ROD)


def test_inertia_not_symmetric():
    mb = builder()
    J = np.array([[1.0, 0.2, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    with raises_naming(fm.ModelError, "forearm", "symmetric"):
        mb.add_body("forearm", node="elbow", mass=1.0, inertia=J)


def test_inertia_negative_principal_moment():
    mb = builder()
    with raises_naming(fm.ModelError, "forearm"):
        mb.add_body("forearm", node="elbow", mass=1.0, inertia=np.diag([-0.1, 1.0, 1.0]))
    # also when hidden in a rotated (non-diagonal) tensor
    Q = np.array([[0.6, -0.8, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
    with raises_naming(fm.ModelError, "forearm"):
        mb.add_body("forearm", node="elbow", mass=1.0, inertia=Q @ np.diag([1.0, -0.5, 1.2]) @ Q.T)


def test_inertia_violating_triangle_inequality():
    mb = builder()
    with raises_naming(fm.ModelError, "forearm", "triangle"):
        mb.add_body("forearm", node="elbow", mass=1.0, inertia=np.diag([1.0, 1.0, 3.0]))
    # the limiting cases are physical: a thin rod (0, J, J) and a flat plate (J1, J2, J1 + J2)
    mb.add_body("rod", node="elbow", mass=1.0, inertia=np.diag([0.0, 1.0, 1.0]))
    mb.add_body("plate", node="elbow", mass=1.0, inertia=np.diag([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------------------- joints
@pytest.mark.parametrize("kind", ["revolute", "prismatic", "cylindrical"])
def test_zero_length_axis(kind):
    mb = builder()
    with raises_naming(fm.ModelError, "bend"):
        mb.add_joint("bend", kind, parent="shoulder", child="elbow", axis=(0, 0, 0))


def test_zero_length_universal_axis():
    mb = builder()
    with raises_naming(fm.ModelError, "cardan"):
        mb.add_joint("cardan", "universal", parent="shoulder", child="elbow", axes=[(1, 0, 0), (0.0, 0.0, 0.0)])


def assert_loop_message(msg: str, loop_joints):
    for j in loop_joints:
        assert f"'{j}'" in msg, msg
    low = msg.lower()
    assert "loop" in low
    for word in ("elastic", "bushing", "beam"):
        assert word in low, msg


def test_triangle_with_ground_is_a_loop():
    """ground -> a -> b -> ground: three revolute joints in a triangle through ground."""
    mb = fm.ModelBuilder()
    mb.add_node("a", position=(1, 0, 0))
    mb.add_node("b", position=(0, 1, 0))
    mb.add_joint("ga", "revolute", parent="ground", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_joint("ab", "revolute", parent="a", child="b", point=(1, 0, 0), axis=(0, 0, 1))
    mb.add_joint("gb", "revolute", parent="ground", child="b", point=(0, 1, 0), axis=(0, 0, 1))
    with pytest.raises(fm.LoopError) as info:
        mb.compile()
    assert isinstance(info.value, fm.ModelError)
    assert_loop_message(str(info.value), ["ga", "ab", "gb"])


def triangle(grounded: bool) -> fm.ModelBuilder:
    mb = fm.ModelBuilder()
    for name, x in (("a", (0, 0, 0)), ("b", (1, 0, 0)), ("c", (0, 1, 0))):
        mb.add_node(name, position=x)
        mb.add_body(f"body_{name}", node=name, mass=1.0, inertia=np.eye(3))
    if grounded:
        mb.add_joint("hang", "revolute", parent="ground", child="a", axis=(1, 0, 0))
    mb.add_joint("ab", "revolute", parent="a", child="b", axis=(0, 0, 1))
    mb.add_joint("bc", "revolute", parent="b", child="c", axis=(0, 0, 1))
    mb.add_joint("ca", "revolute", parent="c", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    return mb


def test_triangle_of_revolute_joints_is_a_loop():
    """Triangle a-b-c of revolute joints, hung from ground by a fourth joint."""
    with pytest.raises(fm.LoopError) as info:
        triangle(grounded=True).compile()
    assert_loop_message(str(info.value), ["ab", "bc", "ca"])
    assert "'hang'" not in str(info.value).split("through")[0]  # the loop's joints only


def test_floating_triangle_of_revolute_joints_is_a_loop():
    """The same triangle with no joint to ground (a floating mechanism) still closes a loop."""
    with pytest.raises(fm.LoopError) as info:
        triangle(grounded=False).compile()
    assert_loop_message(str(info.value), ["ab", "bc", "ca"])


def test_floating_chain_gets_one_free_joint():
    """A chain with no joint to ground floats: its first node gets a free joint, none is lost."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("A", (0, 0, 0))
    mb.add_node("B", (1, 0, 0))
    mb.add_body("bA", "A", 1.0, inertia=np.eye(3))
    mb.add_body("bB", "B", 1.0, inertia=np.eye(3))
    mb.add_joint("ab", "revolute", "A", "B", axis=(0, 0, 1))
    m = mb.compile()
    assert m.auto_free_nodes == ("A",)
    assert m.n_u == 7 and "ab" in m.joint_names


def test_ground_as_child_is_refused():
    mb = builder()
    with raises_naming(fm.ModelError, "ground"):
        mb.add_joint("upside", "revolute", "elbow", "ground", axis=(0, 0, 1))


def test_coordinate_driven_twice():
    mb = builder()
    mb.add_drive("hinge", position=lambda t: 0.1 * t)
    with raises_naming(fm.ModelError, "hinge"):
        mb.add_drive("hinge", position=lambda t: 0.2 * t)


# ---------------------------------------------------------------------------- NaN anywhere
def test_nan_node_position():
    mb = builder()
    with raises_naming(fm.ModelError, "wrist", "NaN"):
        mb.add_node("wrist", position=(2.0, NAN, 0.0))


def test_nan_com():
    mb = builder()
    with raises_naming(fm.ModelError, "forearm", "NaN"):
        mb.add_body("forearm", node="elbow", mass=1.0, com=(NAN, 0, 0), inertia=ROD)


def test_nan_inertia():
    mb = builder()
    J = ROD.copy()
    J[1, 1] = NAN
    with raises_naming(fm.ModelError, "forearm", "NaN"):
        mb.add_body("forearm", node="elbow", mass=1.0, inertia=J)


def test_nan_axis():
    mb = builder()
    with raises_naming(fm.ModelError, "bend", "NaN"):
        mb.add_joint("bend", "revolute", parent="shoulder", child="elbow", axis=(0, NAN, 1))


def test_nan_joint_point():
    mb = builder()
    with raises_naming(fm.ModelError, "bend", "NaN"):
        mb.add_joint("bend", "revolute", parent="shoulder", child="elbow", point=(NAN, 0, 0), axis=(0, 0, 1))


@pytest.mark.parametrize("what", ["q0", "u0"])
def test_nan_initial_coordinates(what):
    mb = builder()
    with raises_naming(fm.ModelError, "bend", what, "NaN"):
        mb.add_joint("bend", "revolute", parent="shoulder", child="elbow", axis=(0, 0, 1), **{what: NAN})
    with raises_naming(fm.ModelError, "swing", what, "NaN"):
        mb.add_joint("swing", "free", parent="ground", child="elbow", **{what: [0, 0, 0, 0, NAN, 0]})


def test_nan_gravity():
    with raises_naming(fm.ModelError, "gravity", "NaN"):
        fm.ModelBuilder(gravity=(0.0, NAN, 0.0))


def _cut_arm(gravity, cut: str, k: float = 1e4) -> fm.ModelBuilder:
    """A revolute crank and a link on a spherical joint, the link's node tied to ground by ``cut``
    ("bushing", "rigid" or "none")."""
    mb = fm.ModelBuilder(gravity=gravity)
    mb.add_node("crank", (0.5, 0.3, 0))
    mb.add_body("crank", "crank", 1.0, (0.2, 0, 0), np.eye(3))
    mb.add_joint("O", "revolute", "ground", "crank", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_node("link", (1.0, 0, 0))
    mb.add_body("link", "link", 1.0, (0.2, 0, 0), np.eye(3))
    mb.add_joint("A", "spherical", "crank", "link")
    if cut == "bushing":
        mb.add_bushing("tie", "ground", "link", [k] * 6, point=(1.0, 0, 0))
    elif cut == "rigid":
        mb.add_rigid_cut("tie", "ground", "link", point=(1.0, 0, 0), free_rotation="all")
    return mb


@pytest.mark.parametrize("gravity", [(-1e308, 1e308, 0.0), (1e308, 0.0, 0.0)])
@pytest.mark.parametrize("cut", ["bushing", "rigid", "none"])
def test_gravity_whose_weights_overflow_is_refused_at_compile_naming_gravity(gravity, cut):
    """Issue 33.2: a finite gravity whose generalized forces overflow (1e308 times a lever arm of
    0.58 m summed over two bodies) raised a bare ValueError('non-finite solution') in the cut
    defaults, or failed at simulate's first step; compile() now names gravity and the coordinate."""
    with raises_naming(fm.ModelError, "compile", "gravity", "1e+308", "'O.q'", "joint 'O'"):
        _cut_arm(gravity, cut).compile()


def test_an_overflow_of_far_positions_is_not_blamed_on_standard_gravity():
    """A body 1e308 m out on a slider: its weight's moment overflows with any gravity, so
    compile() names the node and its position, not gravity (-9.81 m/s² is no cause to correct)."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("far", (1e308, 1e308, 0))
    mb.add_body("far", "far", 1.0, (0.2, 0, 0), np.eye(3))
    mb.add_joint("slide", "prismatic", "ground", "far", axis=(0, 0, 1), point=(1e308, 1e308, 0))
    with raises_naming(fm.ModelError, "compile", "'slide.q'", "node 'far'", "[1e+308, 1e+308, 0.0]", "node positions") as info:
        mb.compile()
    assert "gravity" not in str(info.value)


def test_a_potential_energy_overflow_of_a_far_body_names_its_node():
    """A body welded 1e308 m out under -9.81 m/s²: g·x overflows; compile() names the node and its
    position (before: 'first in the model's elements', naming nothing)."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("far", (1e308, 1e308, 0))
    mb.add_body("far", "far", 0.13, (0.2, 0, 0), np.eye(3))
    mb.add_joint("weld", "fixed", "ground", "far")
    with raises_naming(fm.ModelError, "compile", "potential energy", "node 'far'", "[1e+308, 1e+308, 0.0]") as info:
        mb.compile()
    assert "gravity" not in str(info.value)


def test_gravity_whose_potential_energy_overflows_is_refused_at_compile_naming_gravity():
    """A body welded to ground (no coordinate) 1.9 m along a gravity of 1e308: its weight and
    moments are finite, its potential energy m g·x is not; simulate failed at t = 0 naming only
    the energy ('potential'); compile() names gravity."""
    mb = fm.ModelBuilder(gravity=(1e308, 0.0, 0.0))
    mb.add_node("block", (1.7, 0, 0))
    mb.add_body("block", "block", 1.0, (0.2, 0, 0), np.eye(3))
    mb.add_joint("weld", "fixed", "ground", "block")
    with raises_naming(fm.ModelError, "compile", "gravity", "1e+308", "potential energy"):
        mb.compile()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the rigid cut's own round-off floor, size² at 1e200
def test_a_rigid_cut_whose_penalty_scale_overflows_is_refused_naming_it():
    """A rigid pin on a held slider 1e200 m out (a pendulum elsewhere moves): the pin's rotations
    move nothing, so their penalty scale is the loop's mass times the model's size squared, 1e400;
    a bare OverflowError before, now a ModelError naming the cut."""
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("bob", (0, -1, 0))
    mb.add_body("bob", "bob", 1.0, (0, 0, 0), np.eye(3) * 0.01)
    mb.add_joint("swing", "revolute", "ground", "bob", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_node("far", (1e200, 0, 0))
    mb.add_body("far", "far", 1.0, (0.2, 0, 0), np.eye(3))
    mb.add_joint("slide", "prismatic", "ground", "far", axis=(1, 0, 0))
    mb.add_drive("slide", lambda t: 0.0 * t)
    mb.add_rigid_cut("pin", "ground", "far", point=(1e200, 0, 0), free_rotation="z")
    with raises_naming(fm.ModelError, "compile", "rigid cut 'pin'", "penalty scale", "1e+200", "not finite"):
        mb.compile()


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the bushing's own K d at 1e308
def test_a_bushing_whose_default_damping_overflows_is_refused_naming_it():
    """A stiffness of 1e308 N/m: its default damping √(k m) needs k + kᵀ, beyond floating point
    (a bare ValueError from eigh before); compile() names the bushing and its stiffness."""
    with raises_naming(fm.ModelError, "compile", "bushing 'tie'", "default damping", "1e+308", "not finite"):
        _cut_arm((0, -9.81, 0), "bushing", k=1e308).compile()


def test_bad_input_leaves_builder_usable():
    """A refused call adds nothing: the builder still compiles the valid model."""
    mb = builder()
    with pytest.raises(fm.ModelError):
        mb.add_body("forearm", node="elbow", mass=-1.0)
    with pytest.raises(fm.ModelError):
        mb.add_joint("bend", "revolute", parent="shoulder", child="elbow", axis=(0, 0, 0))
    mb.add_body("forearm", node="elbow", mass=1.0, com=(0.5, 0, 0), inertia=ROD)
    mb.add_joint("bend", "revolute", parent="shoulder", child="elbow", axis=(0, 0, 1))
    model = mb.compile()
    assert model.elements["body"].names == ("upper_arm", "forearm")
    assert model.joint_names == ("hinge", "bend")


# ---------------------------------------------------------------------------- every argument checked where it is given
SEC = dict(E=7e10, G=2.7e10, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=2700.0)


def _spring(mb, **kw):
    mb.add_joint_spring("hinge", **{"stiffness": 10.0, **kw})


# (call, names that the ModelError must contain): the call, the argument, and what is expected
BAD_CALLS = {
    "BeamSection ky without kz": (lambda mb: fm.BeamSection(**SEC, ky=0.85), ["BeamSection", "ky", "kz"]),
    "BeamSection E a string": (lambda mb: fm.BeamSection(**{**SEC, "E": "7e10"}), ["BeamSection", "E", "number"]),
    "drive dof 0.5": (lambda mb: mb.add_drive("hinge", lambda t: t, dof=0.5), ["add_drive", "hinge", "dof", "integer"]),
    "spring dof True": (lambda mb: _spring(mb, dof=True), ["add_joint_spring", "dof", "integer"]),
    "joint force dof '0'": (lambda mb: mb.add_joint_force("hinge", 1.0, dof="0"), ["add_joint_force", "dof", "integer"]),
    "mass a string": (lambda mb: mb.add_body("forearm", "elbow", mass="1.0"), ["add_body", "forearm", "mass", "number"]),
    "mass True": (lambda mb: mb.add_body("forearm", "elbow", mass=True), ["add_body", "forearm", "mass", "boolean"]),
    "mass 10**400": (lambda mb: mb.add_body("forearm", "elbow", mass=10**400), ["add_body", "mass", "too large"]),
    "position strings": (lambda mb: mb.add_node("wrist", ("2", "0", "0")), ["add_node", "wrist", "position", "strings"]),
    "position 10**400": (lambda mb: mb.add_node("wrist", (10**400, 0, 0)), ["add_node", "wrist", "position", "too large"]),
    "position booleans": (lambda mb: mb.add_node("wrist", (True, False, False)), ["add_node", "position", "booleans"]),
    "node name a list": (lambda mb: mb.add_node(["wrist"], (2, 0, 0)), ["add_node", "['wrist']", "string"]),
    "body on a list node": (lambda mb: mb.add_body("forearm", ["elbow"], 1.0), ["add_body", "forearm", "['elbow']"]),
    "joint parent a list": (lambda mb: mb.add_joint("bend", "revolute", ["shoulder"], "elbow", axis=(0, 0, 1)),
                            ["add_joint", "bend", "parent", "['shoulder']"]),
    "joint kind a list": (lambda mb: mb.add_joint("bend", ["revolute"], "shoulder", "elbow"), ["add_joint", "bend", "kind"]),
    "joint q0 a string": (lambda mb: mb.add_joint("bend", "revolute", "shoulder", "elbow", axis=(0, 0, 1), q0="0.1"),
                          ["add_joint", "bend", "q0", "number"]),
    "spring stiffness None": (lambda mb: _spring(mb, stiffness=None), ["add_joint_spring", "hinge", "stiffness", "number"]),
    "spring damping complex": (lambda mb: _spring(mb, damping=1j), ["add_joint_spring", "damping", "number"]),
    "spring rest a string": (lambda mb: _spring(mb, rest="0"), ["add_joint_spring", "rest", "number"]),
    "drive returning an array": (lambda mb: mb.add_drive("hinge", lambda t: np.array([t, 2 * t])),
                                 ["add_drive", "hinge", "position", "number"]),
    "drive returning a 1-array": (lambda mb: mb.add_drive("hinge", lambda t: np.array([t])),
                                  ["add_drive", "hinge", "position", "shape (1,)", "number"]),
    "drive position not callable": (lambda mb: mb.add_drive("hinge", 0.5), ["add_drive", "hinge", "position", "function"]),
    "drive that fails": (lambda mb: mb.add_drive("hinge", lambda t: 1 / 0), ["add_drive", "hinge", "ZeroDivisionError"]),
    "load force a dict": (lambda mb: mb.add_load("push", "elbow", force={"x": 1.0}), ["add_load", "push", "force"]),
    "load force 2 numbers": (lambda mb: mb.add_load("push", "elbow", force=(1.0, 2.0)), ["add_load", "push", "force", "3"]),
    "load moment f(t) of 2": (lambda mb: mb.add_load("push", "elbow", moment=lambda t: (0, t)), ["add_load", "moment", "3"]),
    "load follower 'yes'": (lambda mb: mb.add_load("push", "elbow", force=(1, 0, 0), follower="yes"),
                            ["add_load", "push", "follower", "True or False"]),
    "gravity strings": (lambda mb: fm.ModelBuilder(gravity=("0", "-9.81", "0")), ["ModelBuilder", "gravity", "strings"]),
    "gravity None": (lambda mb: fm.ModelBuilder(gravity=None), ["ModelBuilder", "gravity"]),
    "joint force a string": (lambda mb: mb.add_joint_force("hinge", "5"), ["add_joint_force", "hinge", "force", "number"]),
    "joint force f(t) of 3": (lambda mb: mb.add_joint_force("hinge", lambda t: (1, 2, 3)), ["add_joint_force", "force"]),
    "friction mu True": (lambda mb: mb.add_joint_friction("hinge", True, 0.01), ["add_joint_friction", "hinge", "mu"]),
    "bushing stiffness strings": (lambda mb: mb.add_bushing("pad", "ground", "elbow", stiffness=["1e6"] * 6),
                                  ["add_bushing", "pad", "stiffness", "strings"]),
    "bushing free_rotation a list": (lambda mb: mb.add_bushing("pad", "ground", "elbow", [1e6] * 6, free_rotation=["x"]),
                                     ["add_bushing", "pad", "free_rotation"]),
    # damping=None is the default (chosen by the compiler where the beam closes a loop): a string is refused
    "beam damping text": (lambda mb: mb.add_beam("b", "shoulder", "elbow", fm.BeamSection(**SEC), damping="0.1"),
                          ["add_beam", "damping", "number"]),
    "flexible link n_elements True": (lambda mb: mb.add_flexible_link("l", (0, 1, 0), (1, 1, 0), True, fm.BeamSection(**SEC)),
                                      ["add_flexible_link", "n_elements", "integer"]),
    "flexible link n_elements 2.0": (lambda mb: mb.add_flexible_link("l", (0, 1, 0), (1, 1, 0), 2.0, fm.BeamSection(**SEC)),
                                     ["add_flexible_link", "n_elements", "integer"]),
    "particle mass a string": (lambda mb: mb.add_particle_body("pb", "elbow", "2", inertia=0.1,
                                                               particle_nodes=[(1, 0, 0), (2, 0, 0), (1, 1, 0)]),
                               ["add_particle_body", "pb", "mass", "number"]),
    "particle inertia strings": (lambda mb: mb.add_particle_body("pb", "elbow", 2.0, inertia="0.1",
                                                                 particle_nodes=[(1, 0, 0), (2, 0, 0), (1, 1, 0)]),
                                 ["add_particle_body", "pb", "inertia"]),
    "particle point strings": (lambda mb: mb.add_particle_body("pb", "elbow", 2.0, inertia=0.1,
                                                               particle_nodes=[(1, 0, 0), ("2", "0", "0"), (1, 1, 0)]),
                               ["add_particle_body", "pb", "particle 2", "strings"]),
    "particle kind a list": (lambda mb: mb.add_particle_body("pb", "elbow", 2.0, inertia=0.1, kind=["planar"]),
                             ["add_particle_body", "pb", "kind"]),
}


@pytest.mark.parametrize("case", sorted(BAD_CALLS))
def test_every_argument_is_checked_where_it_is_given(case):
    """Issue 11 item 13: a ModelError at the call, naming the call, the argument and what is
    expected (before: TypeError, ValueError, OverflowError, ZeroDivisionError at the call, at
    compile or in simulate, or silent acceptance of booleans and numeric strings)."""
    call, names = BAD_CALLS[case]
    mb = builder()
    with raises_naming(fm.ModelError, *names):
        call(mb)


def test_a_refused_flexible_link_adds_no_node():
    mb = builder()
    with pytest.raises(fm.ModelError):
        mb.add_flexible_link("l", (0, 1, 0), (1, 1, 0), 3, fm.BeamSection(**SEC), damping=-1.0)
    assert [n for n in mb.nodes if n.startswith("l.")] == []


def test_a_section_whose_element_stiffness_overflows_is_refused_naming_the_link():
    """Issue 33.3: Iz = 1e308 is a finite, positive BeamSection value, but E·Iz/L of the link's
    elements overflows; compile() then blamed the forces on node 'shoulder' ("give physical initial
    velocities, loads and masses"). add_flexible_link now names the link, the section value and the
    term, and adds no node."""
    mb = builder()
    sec = fm.BeamSection(**{**SEC, "Iz": 1e308})
    with raises_naming(fm.ModelError, "add_flexible_link", "'coupler'", "section Iz = 1e+308", "E·Iz/L", "0.5 m"):
        mb.add_flexible_link("coupler", (0, 0, 0), (1, 0, 0), 2, sec, node_a="shoulder")
    assert [n for n in mb.nodes if n.startswith("coupler.")] == []


def test_a_section_whose_element_mass_overflows_is_refused_naming_the_beam():
    """rho = 1e308 on a 2 m² section 1 m long: the element mass rho·A·L overflows; add_beam names the beam."""
    mb = builder()
    with raises_naming(fm.ModelError, "add_beam", "'rod'", "section rho = 1e+308", "rho·A·L"):
        mb.add_beam("rod", "shoulder", "elbow", fm.BeamSection(**{**SEC, "rho": 1e308, "A": 2.0}))
    assert "rod" not in mb.beams


def test_huge_z_hint_gives_the_same_section_frame():
    """Issue 11 item 13: z_hint = (0, 0, 1e200) overflowed the frame's normalisation (a zero e2,
    then ZeroDivisionError in simulate); it is a direction like (0, 0, 1)."""
    frames = []
    for z in ((0, 0, 1.0), (0, 0, 1e200), (0, 0, 1e-200)):
        mb = fm.ModelBuilder()
        mb.add_node("a", (0, 0, 0))
        mb.add_node("b", (0.6, 0.8, 0))
        mb.add_body("m", "b", 1.0, inertia=np.eye(3) * 1e-3)
        mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
        mb.add_beam("beam", "a", "b", fm.BeamSection(**SEC), z_hint=z)
        frames.append(mb.compile().elements["beam"].C1[0])
    assert np.all(np.isfinite(frames[1])) and np.array_equal(frames[0], frames[1]) and np.array_equal(frames[0], frames[2])


def test_a_second_joint_spring_on_one_coordinate_is_refused():
    """Issue 11 item 14: a second add_joint_spring replaced the first silently (10 + 90 acted as 90)."""
    mb = builder()
    mb.add_body("forearm", "elbow", 1.0, inertia=np.eye(3))
    mb.add_joint_spring("hinge", stiffness=10.0)
    with raises_naming(fm.ModelError, "add_joint_spring", "hinge", "already has a joint spring"):
        mb.add_joint_spring("hinge", stiffness=90.0)
    m = mb.compile()
    assert m.spring_k.tolist() == [10.0]


def test_numbers_of_every_numeric_type_are_accepted():
    """numpy scalars and Python ints are numbers; the checks refuse only what is not one."""
    mb = builder()
    mb.add_body("forearm", "elbow", mass=np.float32(2.0), com=np.array([1, 0, 0]), inertia=np.diag([0, 1, 1]) * 0.1)
    mb.add_joint("bend", "revolute", "shoulder", "elbow", axis=[0, 0, np.int64(1)], q0=np.float64(0.1), u0=[0])
    mb.add_joint_spring("bend", stiffness=5, damping=np.int32(1), dof=np.int64(0))
    mb.add_load("push", "elbow", force=lambda t: [0, -t, 0], follower=False)
    mb.add_body("cap", "elbow", mass=np.array(0.5))  # a 0-d array is a number
    m = mb.compile()
    assert m.elements["body"].mass.tolist() == [1.0, 2.0, 0.5] and m.spring_c.tolist() == [1.0] and m.q0.tolist() == [0.0, 0.1]


# ---------------------------------------------------------------------------- massless coordinates (issue 11 item 11)
def _arm_with(extra):
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    mb.add_node("shoulder", (0, 0, 0))
    mb.add_body("upper", "shoulder", 1.0, (0.5, 0, 0), ROD)
    mb.add_joint("hinge", "revolute", "ground", "shoulder", axis=(0, 0, 1))
    extra(mb)
    return mb


def _loose_node(mb):
    mb.add_node("loose", (2, 0, 0))


def _point_mass_on_ball(com):
    def extra(mb):
        mb.add_node("ball", (1, 0, 0))
        mb.add_body("bob", "ball", 1.0, com)
        mb.add_joint("socket", "spherical", "shoulder", "ball")
    return extra


def _coaxial_through_massless(mb):
    mb.add_node("mid", (1, 0, 0))
    mb.add_node("tip", (1, 0, 0))
    mb.add_body("tip_body", "tip", 1.0, (0.5, 0, 0), np.eye(3))
    mb.add_joint("j1", "revolute", "shoulder", "mid", axis=(0, 0, 1))
    mb.add_joint("j2", "revolute", "mid", "tip", axis=(0, 0, 1))


def _far_com(mb):
    mb.add_node("far", (1, 0, 0))
    mb.add_body("far_body", "far", 1.0, (1e300, 0, 0), np.eye(3))
    mb.add_joint("j", "revolute", "shoulder", "far", axis=(0, 0, 1))


def _floating_node_undone_by_a_ball(mb):
    """A body-less node on its own (a free joint) carrying a body on a spherical joint: turning the
    node about the body's node while the ball turns back moves no mass. Round-off let CHOLMOD
    factorize this M̄ (eigenvalues ~1e-15 against 36), and simulate failed at its first step."""
    mb.add_node("hub", (-1.27, -1.88, 0.0))
    mb.add_node("bob", (-1.42, 0.0, 1.82))
    mb.add_body("bob", "bob", 3.9, (0.2, 0, 0), np.diag([5.1, 2.5, 4.1]))
    mb.add_joint("ball", "spherical", "hub", "bob")


MASSLESS = {
    "a free body-less node whose turn a ball undoes": (_floating_node_undone_by_a_ball,
                                                       ["compile", "'hub:free'", "'ball'", "'hub:free.wx'", "'ball.wz'",
                                                        "node 'hub' (no body)", "no mass"]),
    "a node with no mass": (_loose_node, ["compile", "'loose:free'", "'loose:free.t0'", "'loose:free.wz'",
                                          "node 'loose' (no body)", "no mass"]),
    "a point mass on a spherical joint": (_point_mass_on_ball((0, 0, 0)), ["compile", "'socket'", "'socket.wx'",
                                                                          "'socket.wz'", "node 'ball'", "no mass"]),
    "a point mass off a spherical joint": (_point_mass_on_ball((0.3, 0, 0)),
                                           ["'socket'", "'socket.wx'", "axis [1.0, 0.0, 0.0] of node 'ball'", "no mass"]),
    "coaxial revolutes through a massless node": (_coaxial_through_massless,
                                                  ["'j1'", "'j2'", "'j1.q'", "'j2.q'", "node 'mid' (no body)", "no mass"]),
    "a centre of mass at 1e300": (_far_com, ["compile", "node 'far'", "far_body", "not finite"]),
    "a drive velocity of 1e300": (lambda mb: mb.add_drive("hinge", lambda t: 1e300 * t),
                                  ["compile", "node 'shoulder'", "not finite", "'hinge.q'", "velocity 1e+300"]),
}


@pytest.mark.parametrize("case", sorted(MASSLESS))
def test_compile_names_the_coordinate_that_moves_no_mass(case):
    """Before: simulate failed with CHOLMOD's 'not positive definite (../Cholesky/t_cholmod_rowfac.c:430)'
    or 'non-finite udot' naming nothing; now compile names the coordinate, joint and node."""
    extra, names = MASSLESS[case]
    with raises_naming(fm.ModelError, *names):
        _arm_with(extra).compile()


def test_require_mass_false_compiles_a_massless_model_for_kinematics():
    m = _arm_with(_loose_node).compile(require_mass=False)
    assert m.auto_free_nodes == ("loose",)
    with raises_naming(fm.ModelError, "node 'far'", "not finite"):  # overflow is refused either way
        _arm_with(_far_com).compile(require_mass=False)


def test_beam_and_particle_masses_count():
    """A node carried only by a beam element, or only by a particle of a particle body, has mass."""
    def beam(mb):
        mb.add_node("tip", (1, 0, 0))
        mb.add_beam("rod", "shoulder", "tip", fm.BeamSection(**SEC))  # 'tip' is a free node on the beam alone
    m = _arm_with(beam).compile()
    assert m.auto_free_nodes == ("tip",) and m.elements["body"].names == ("upper",)

    def plate(mb):  # primaries about one radius of gyration around the centre of mass: positive masses
        mb.add_particle_body("plate", "shoulder", 2.0, (0.3, 0.1, 0), 0.05,
                             [(0.5, 0.1, 0), (0.2, 0.27, 0), (0.2, -0.07, 0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = _arm_with(plate).compile()
    assert "plate.p2" in m.elements["body"].names and "plate.2" in m.node_names and min(m.elements["particle_body"].masses[0]) > 0

    def rod_on_ball(mb):  # a rod's particles lie on its axis: its spin on a spherical joint moves no mass
        mb.add_node("ball", (1, 0, 0))
        mb.add_joint("socket", "spherical", "shoulder", "ball")
        mb.add_particle_body("link", "ball", 2.0, (0.5, 0, 0), 0.1, ["ball", (2, 0, 0)], kind="rod")
    with pytest.warns(UserWarning, match="about the rod's axis"):
        with raises_naming(fm.ModelError, "'socket'", "'socket.wx'", "axis [1.0, 0.0, 0.0] of node 'ball'", "no mass"):
            _arm_with(rod_on_ball).compile()
