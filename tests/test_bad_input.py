"""Bad model input is refused with a ModelError (LoopError for loops) whose message names the
offending item, at the call that introduces it (or at compile() for loops)."""

import math
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
    assert model.body_names == ("upper_arm", "forearm")
    assert model.joint_names == ("hinge", "bend")
