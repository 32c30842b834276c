"""The model as data (issue 13): ``Model`` holds compiled arrays only, every field documented with
its meaning and shape (the element families' arrays too, one documented dataclass per family in
``Model.elements``); the builder, its records and the compiler live apart from it; particle
bodies use the builder's public methods only; the builder's records cannot be changed from outside."""

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.builder import records
from flexmb.model import Model

ROOT = Path(__file__).resolve().parents[1]


def _imports(path: Path) -> set[str]:
    """Every module imported anywhere in ``path`` (function-level imports included)."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
    return out


def test_model_module_is_data_below_the_builder_and_the_engine():
    mods = {m for m in _imports(ROOT / "flexmb/model.py") if m.startswith("flexmb")}
    # motion_functions: the joint forces of the motion's function wrappers (like timefunctions: numpy and errors only)
    assert mods <= {"flexmb.errors", "flexmb.joints", "flexmb.state", "flexmb.timefunctions", "flexmb.topology",
                    "flexmb.element_data", "flexmb.motion_functions"}, mods
    assert not hasattr(Model, "_compile") and not hasattr(Model, "info")
    assert not hasattr(__import__("flexmb.model").model, "ModelBuilder")


def test_every_model_field_has_a_comment_with_meaning_and_shape():
    """Model's fields and every element family's data fields (Model.elements), in their sources."""
    shape = re.compile(r"#\s*\S.*\((n_[a-z]+|3|scalar)([^()]*)\)\s*$")
    classes = [Model] + [type(data) for data in _four_bar_with_cut().compile().elements.values()]
    assert len(classes) >= 5 and len(set(classes)) == len(classes)
    count = 0
    for cls in classes:
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
        source = "\n".join(inspect.getsource(c) for c in cls.__mro__ if dataclasses.is_dataclass(c)).splitlines()
        own = [f.name for f in dataclasses.fields(cls)]  # a family's names come from ElementData
        count += len(own)
        for name in own:
            line = next(ln for ln in source if re.match(rf"\s+{name}: ", ln))
            if name == "tree":  # a structured field: its comment points to its type instead of a shape
                assert "# spanning forest" in line
                continue
            assert shape.search(line), f"{cls.__name__} field {name!r} has no '# meaning (shape)' comment: {line.strip()}"
    assert count >= 70


def test_particle_bodies_use_only_the_builders_public_methods():
    tree = ast.parse((ROOT / "flexmb/builder/particle_bodies.py").read_text())
    private = [f"line {n.lineno}: mb.{n.attr}" for n in ast.walk(tree)
               if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "mb"
               and n.attr.startswith("_")]
    assert private == []
    # no import cycle: at run time particle_bodies imports neither the builder module nor the model
    runtime = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            runtime.add(node.module)
        elif isinstance(node, ast.Import):
            runtime |= {a.name for a in node.names}
    assert not runtime & {"flexmb.builder.model_builder", "flexmb.model"}, runtime


def test_loops_live_in_topology():
    from flexmb import topology

    assert topology.Loop is type(_four_bar_with_cut().compile().loops[0])
    assert callable(topology.find_loops)


def _four_bar_with_cut() -> fm.ModelBuilder:
    mb = fm.ModelBuilder()
    mb.add_node("a", (0, 0, 0))
    mb.add_node("b", (1, 0, 0))
    mb.add_body("ba", "a", 1.0, (0.5, 0, 0), np.eye(3))
    mb.add_body("bb", "b", 1.0, (0.5, 0, 0), np.eye(3))
    mb.add_joint("ja", "revolute", "ground", "a", axis=(0, 0, 1))
    mb.add_joint("jab", "revolute", "a", "b", axis=(0, 0, 1))
    mb.add_bushing("cut", "ground", "b", stiffness=[1e6] * 3 + [0, 0, 0], point=(1, 0, 0), free_rotation="all")
    return mb


def test_builder_records_are_frozen_and_read_only():
    mb = _four_bar_with_cut()
    node = mb.nodes["a"]
    assert isinstance(node, records.NodeSpec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        node.position = np.ones(3)
    with pytest.raises(ValueError):
        node.position[0] = 5.0  # read-only array
    with pytest.raises(TypeError):
        mb.nodes["c"] = node  # a read-only view
    spec = mb.bushings["cut"]
    assert isinstance(spec, records.BushingSpec) and spec.node_a == "ground" and spec.free_rotation == 3
    assert mb.joints["jab"].parent == "a" and mb.joints["jab"].child == "b"
    for cls in (records.NodeSpec, records.BodySpec, records.JointSpec, records.DriveSpec, records.SpringSpec,
                records.JointForceSpec, records.FrictionSpec, records.LoadSpec, records.BushingSpec, records.BeamSpec,
                records.ParticleBodySpec, records.BeamSection, records.MotionLoadSpec):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls


def test_compile_is_a_function_of_the_builder_records():
    from flexmb.builder.compile import compile as compile_model
    from flexmb.builder.cut_defaults import finish

    mb = _four_bar_with_cut()
    # ModelBuilder.compile = compile, checks, then the compiler's choices for the cuts (cut_defaults.finish)
    a, b = finish(compile_model(mb)), mb.compile()
    pairs = [(f.name, getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(Model)]
    assert list(a.elements) == list(b.elements) == ["body", "particle_body", "bushing", "beam", "rigid_cut",
                                                              "spring_damper", "actuator", "coupling",
                                                              "rotational_spring_damper", "motion_load", "shape"]
    for fam in a.elements:
        pairs += [(f"{fam}.{f.name}", getattr(a.elements[fam], f.name), getattr(b.elements[fam], f.name))
                  for f in dataclasses.fields(a.elements[fam])]
    arrays = [(n, va, vb) for n, va, vb in pairs if isinstance(va, np.ndarray)]
    assert len(arrays) > 40
    for name, va, vb in arrays:
        assert np.array_equal(va, vb) and not va.flags.writeable, name
    with pytest.raises(TypeError):
        a.elements["beam"] = None  # the mapping is read-only too
    assert a.loops == b.loops and a.joint_names == ("ja", "jab")
