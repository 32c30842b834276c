"""Property-based fuzzing of the build end (issue 11, "What must be shown"; issue 33): random
builder programs — nodes, bodies, joints, beams, flexible links and their sections, bushings,
rigid cuts, loops whose joints are all fixed or driven closed by a bushing or a rigid cut,
drives, joint springs and forces (of time and of the motion, sampled or not), friction, loads (of time
and of the motion), spring-dampers and force laws, rotational spring-dampers, actuators, particle bodies
and their loads, couplings between coordinates (ModelBuilder.add_coupling), extreme gravity, planar
models (``ModelBuilder(planar=...)``) and planar cuts (``plane=``) — with bad values mixed in, then
compile() and a few time steps; every ``add_*`` of the builder is called by some program.

The properties:
* the only exceptions that escape are flexmb's own (FlexmbError subclasses);
* a call that refuses its input names the call (``add_beam``, ``BeamSection``, ...), the item
  it adds or refers to (its name, when that is a valid name) and the offender (an argument's
  name or value);
* a compile() error names an item of the model (or gravity);
* a simulate() error names an item of the model (a coordinate, joint, node or element);
* a run that ends "finished" has only finite numbers in its arrays.

Hypothesis runs derandomized (the same examples on every run, no example database), so a
failure is reproducible; the failing program is printed step by step.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import flexmb as fm

NODES = ("a", "b", "c", "d", "e")
EXAMPLES = int(os.environ.get("FLEXMB_FUZZ_EXAMPLES", "400"))

# ----------------------------------------------------------------------------- values, good and bad
BAD_NUMBERS = [math.nan, math.inf, -math.inf, -1.0, 0.0, True, False, "1.5", None, 1j, 10**400, [1.0], {"x": 1.0},
               1e308, -1e308, 1e-300, object()]
BAD_VECTORS = [("1", "2", "3"), (1.0, 2.0), (math.nan, 0.0, 0.0), (True, False, True), 5.0, None, (10**400, 0, 0),
               (1e308, 1e308, 0.0), {"x": 1.0}, "abc", [[1.0, 2.0, 3.0]], (1.0, "x", 2.0), (0.0, 0.0, 0.0),
               (1e200, -1e200, 1e200)]
BAD_NAMES = [["a"], "", "ground", 3, None, ("a",), b"a"]
#: finite gravities whose weights or their moments overflow, or make the first step's motion overflow
EXTREME_GRAVITY = [(-1e308, 1e308, 0.0), (1e308, 0.0, 0.0), (0.0, -1e200, 0.0), (1e150, 0.0, -1e150), (0.0, 0.0, 1e300)]
#: planes of a planar model or a planar cut (docs/planar.md (P1)), good and bad
PLANES = ["xy", "xy", "yz", "zx", (0.0, 0.0, 2.0), (0.0, 1.0, 1.0)]
BAD_PLANES = ["ab", "", 1.0, True, (0.0, 0.0, 0.0), (math.nan, 0.0, 1.0), (1.0, 2.0), ["xy"]]


def _choice(draw, good, bad, p_bad: float = 0.15):
    """A good value drawn from the strategy ``good`` or, with probability ~p_bad, a bad one."""
    if draw(st.integers(0, 99)) < 100 * p_bad:
        return draw(st.sampled_from(bad))
    return draw(good)


FLOAT = st.floats(-2.0, 2.0, allow_nan=False)
POSITIVE = st.floats(0.05, 5.0)
VEC = st.tuples(FLOAT, FLOAT, FLOAT)


def number(draw, good=POSITIVE):
    return _choice(draw, good, BAD_NUMBERS)


def vector(draw, good=VEC):
    return _choice(draw, good, BAD_VECTORS)


def node(draw, allow_ground=False):
    good = st.sampled_from(NODES + (("ground",) if allow_ground else ()))
    return _choice(draw, good, BAD_NAMES + ["nowhere"], 0.08)


def inertia(draw):
    good = st.builds(lambda a, b, c: np.diag([a + b, b + c, a + c]), POSITIVE, POSITIVE, POSITIVE)
    bad = [np.zeros((3, 3)), np.diag([1.0, 1.0, 3.0]), np.diag([-1.0, 1.0, 1.0]), np.ones((2, 2)), "eye",
           [[1, 0, 0], [0, 1, 0], [0, 0, math.nan]], np.eye(3) * 1e300, None]
    return _choice(draw, good, bad, 0.2)


def time_function(draw, shape):
    """Functions of time returning ``shape``, good or bad (wrong shape, failing, NaN, huge)."""
    n = 1 if shape == () else shape[0]
    amp = draw(FLOAT)
    good = [lambda t, a=amp: a * math.sin(t) if n == 1 else np.full(n, a * math.sin(t))]
    bad = [lambda t: np.array([t, t, t, t]), lambda t: 1 / 0, lambda t: math.nan * (1 + t),
           lambda t: "x", lambda t: None, lambda t: {"t": t}, 0.5 if n == 1 else (0.5, 0.5, 0.5),
           lambda t: 1e300 * (1 + t) if n == 1 else np.full(n, 1e300 * (1 + t))]
    return _choice(draw, st.sampled_from(good), bad, 0.25)


def section(draw):
    """The arguments of a BeamSection (a call of its own in the program: run_steps makes it)."""
    E = number(draw, st.floats(1e9, 2e11))
    Iz = _choice(draw, st.just(1e-8), [math.nan, -1e-8, 0.0, 1e308, "1e-8"], 0.05)
    ky = draw(st.sampled_from([None, None, 0.85]))
    kz = draw(st.sampled_from([None, 0.85])) if ky is not None else draw(st.sampled_from([None, None, None, 0.85]))
    return Section(dict(E=E, G=8e10, A=1e-4, Iy=1e-8, Iz=Iz, J=2e-8, rho=7800.0, ky=ky, kz=kz))


@dataclasses.dataclass(frozen=True)
class Section:
    """A BeamSection's arguments in a program step (made by run_steps, its refusal checked there)."""

    kwargs: dict


# ----------------------------------------------------------------------------- operations
def op_node(draw, i):
    name = draw(st.sampled_from(NODES)) if draw(st.integers(0, 9)) else draw(st.sampled_from(BAD_NAMES))
    rot = None if draw(st.integers(0, 5)) else draw(st.sampled_from([np.eye(3), np.ones((3, 3)), "I", np.diag([1, 1, -1])]))
    return "add_node", (name,), dict(position=vector(draw), rotation=rot)


def op_limb(draw, i):
    """A node with a body and a joint to ground or an earlier node (mostly good values): the
    programs then often compile and run."""
    name = draw(st.sampled_from(NODES))
    kind = draw(st.sampled_from(["revolute", "revolute", "spherical", "prismatic", "free", "universal"]))
    parent = draw(st.sampled_from(("ground",) + NODES))
    joint = dict(axis=(0.0, 0.0, 1.0)) if kind in ("revolute", "prismatic") else (
        dict(axes=[(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]) if kind == "universal" else {})
    return "limb", (name, f"body{i}", f"j{i}", kind, parent), dict(
        position=vector(draw), mass=number(draw), com=vector(draw, st.just((0.2, 0.0, 0.0))), inertia=inertia(draw),
        joint=joint)


def op_planar_limb(draw, i):
    """Limb i of a chain in the x-y plane: node NODES[i] on a revolute joint about z to ground or to
    the node before it (a planar model's tree)."""
    step = op_limb(draw, i)
    parent = draw(st.sampled_from(("ground",) + NODES[max(i - 1, 0):i]))
    return "limb", (NODES[i % len(NODES)], f"body{i}", f"j{i}", "revolute", parent), dict(step[2], joint=dict(
        axis=(0.0, 0.0, 1.0)))


def op_body(draw, i):
    return "add_body", (f"body{i}", node(draw)), dict(mass=number(draw), com=vector(draw), inertia=inertia(draw))


def op_joint(draw, i):
    kind = _choice(draw, st.sampled_from(["revolute", "prismatic", "spherical", "universal", "cylindrical", "fixed",
                                          "free"]), ["hinge", ["revolute"], None, 1], 0.1)
    kw = dict(parent=node(draw, allow_ground=True), child=node(draw))
    if kind in ("revolute", "prismatic", "cylindrical"):
        kw["axis"] = vector(draw)
    elif kind == "universal":
        kw["axes"] = [vector(draw), vector(draw)]
    if draw(st.booleans()):
        kw["point"] = vector(draw)
    if draw(st.integers(0, 3)) == 0:
        kw["q0"] = number(draw, FLOAT)
    return "add_joint", (f"j{i}", kind), kw


def op_beam(draw, i):
    return "add_beam", (f"beam{i}", node(draw), node(draw), section(draw)), dict(
        z_hint=vector(draw, st.sampled_from([(0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 1.0, 1.0)])),
        damping=number(draw, st.sampled_from([0.0, 1e-4])))


def op_link(draw, i):
    n = _choice(draw, st.integers(1, 3), [0, -1, True, 2.5, "2", None], 0.2)
    kw = dict(z_hint=vector(draw, st.just((0.0, 0.0, 1.0))))
    return "add_flexible_link", (f"link{i}", vector(draw), vector(draw), n, section(draw)), kw


def plane(draw, kw: dict) -> None:
    """One cut in four given ``plane=`` (a plane, the spatial opt-out, or a bad value)."""
    if draw(st.integers(0, 3)) == 0:
        kw["plane"] = _choice(draw, st.sampled_from(PLANES + ["spatial"]), BAD_PLANES, 0.3)


def op_rigid_cut(draw, i):
    kw = dict(free_rotation=_choice(draw, st.sampled_from([None, "x", "y", "z", "all"]), ["w", ["x"], 1], 0.1))
    plane(draw, kw)
    if draw(st.integers(0, 3)):
        kw["point"] = vector(draw)
    if draw(st.integers(0, 5)) == 0:
        kw["tolerance"] = number(draw, st.sampled_from([1e-10, 1e-8]))
    if draw(st.integers(0, 5)) == 0:
        kw["penalty"] = number(draw, st.floats(1e3, 1e9))
    return "add_rigid_cut", (f"cut{i}", node(draw, allow_ground=True), node(draw)), kw


def _end_points(draw) -> dict:
    """The keyword arguments of a two-point element's ends: each of point_a and point_b given three times in four."""
    kw = {}
    if draw(st.integers(0, 3)):
        kw["point_a"] = vector(draw)
    if draw(st.integers(0, 3)):
        kw["point_b"] = vector(draw)
    return kw


def op_actuator(draw, i):
    """add_actuator: a prescribed length (a number or L(t) near the points' distance), a force law, or
    bad combinations and values."""
    kw = _end_points(draw)
    amp = draw(FLOAT)
    lengths = [1.0, lambda t, a=amp: 1.0 + 0.1 * a * math.sin(t)]
    bad_lengths = [-1.0, 0.0, math.nan, "1", lambda t: math.nan * (1 + t), lambda t: 1 / 0, lambda t: "x", 1e300]
    forces = [lambda t, l, v, a=amp: 10.0 * a * (l - 1.0) + v]
    bad_forces = [3.0, lambda t, l, v: math.nan, lambda t, l, v: "x", lambda t: 0.0]
    kind = draw(st.sampled_from(["length", "length", "force", "both", "neither", "velocity"]))
    if kind in ("length", "both", "velocity"):
        kw["length"] = _choice(draw, st.sampled_from(lengths), bad_lengths, 0.2)
    if kind in ("force", "both"):
        kw["force"] = _choice(draw, st.sampled_from(forces), bad_forces, 0.2)
    if kind == "velocity":
        kw["velocity"] = time_function(draw, ())
    return "add_actuator", (f"act{i}", node(draw, allow_ground=True), node(draw)), kw


def op_spring_damper(draw, i):
    """add_spring_damper: linear (stiffness, damping, rest length, preload) or a force law F(l, l', t) with or
    without its tangent, and bad values and combinations (a law beside stiffness, a tangent without a law)."""
    kw = _end_points(draw)
    amp = draw(FLOAT)
    laws = [lambda l, v, t, a=amp: 50.0 * a * (l - 1.0) + v, lambda l, v, t: min(20.0 * l, 5.0) + 0.1 * v]
    bad_laws = [3.0, lambda l, v, t: math.nan, lambda l, v, t: "x", lambda l: 0.0, lambda l, v, t: 1 / 0]
    if draw(st.booleans()):
        kw["force_law"] = _choice(draw, st.sampled_from(laws), bad_laws, 0.2)
        if draw(st.integers(0, 2)) == 0:
            kw["force_law_tangent"] = draw(st.sampled_from([lambda l, v, t: (50.0, 1.0), "dFdl", None]))
        if draw(st.integers(0, 5)) == 0:
            kw["stiffness"] = 1.0  # refused beside a law
    else:
        kw.update(stiffness=number(draw, st.floats(0.0, 1e4)), damping=number(draw, st.floats(0.0, 10.0)),
                  preload=number(draw, FLOAT))
        if draw(st.booleans()):
            kw["rest_length"] = number(draw, st.floats(0.0, 2.0))
        if draw(st.integers(0, 9)) == 0:
            kw["force_law_tangent"] = lambda l, v, t: (1.0, 0.0)  # refused without a law
    return "add_spring_damper", (f"sd{i}", node(draw, allow_ground=True), node(draw)), kw


def op_rotational_spring_damper(draw, i):
    """add_rotational_spring_damper: about an axis (stiffness, damping, rest, preload, or a torque law) or
    isotropic, with bad values and combinations (rest or a law without an axis, a zero axis)."""
    kw = dict(axis=_choice(draw, st.sampled_from([None, (0.0, 0.0, 1.0), (1.0, 2.0, 0.5)]), BAD_VECTORS, 0.15))
    if draw(st.integers(0, 3)) == 0:
        kw["law"] = _choice(draw, st.sampled_from([lambda p, w, t: -3.0 * p - 0.2 * w]),
                            [2.0, lambda p, w, t: math.nan, lambda p: 0.0], 0.3)
    else:
        kw.update(stiffness=number(draw, st.floats(0.0, 1e3)), damping=number(draw, st.floats(0.0, 5.0)))
        if draw(st.booleans()):
            kw["rest"] = number(draw, FLOAT)
        if draw(st.booleans()):
            kw["preload"] = number(draw, FLOAT)
    return "add_rotational_spring_damper", (f"rsd{i}", node(draw, allow_ground=True), node(draw)), kw


def op_prescribed_loop(draw, i):
    """A body on a fixed, or a driven revolute or prismatic, joint to ground or an earlier node (of
    the limbs, or of an earlier prescribed loop), closed by a bushing or a rigid cut at the joint's
    point to the same parent: a loop with no free coordinate. The
    drive keeps the cut closed (a turn about the revolute's axis, a pin cut free about it) or opens
    it (a slide, a weld)."""
    kind = draw(st.sampled_from(["fixed", "revolute", "prismatic"]))
    cut = draw(st.sampled_from(["add_bushing", "add_rigid_cut"]))
    parent = draw(st.sampled_from(("ground",) + NODES + tuple(f"p{k}" for k in range(i))))
    return "prescribed_loop", (f"p{i}", f"body{i}", f"j{i}", kind, parent, cut, f"cut{i}"), dict(
        position=_choice(draw, VEC, BAD_VECTORS, 0.05), speed=draw(st.sampled_from([0.0, 0.0, 2.0])),
        free_rotation=draw(st.sampled_from([None, "z", "all"])), stiffness=draw(st.sampled_from([1e4, 1e8])))


def op_bushing(draw, i):
    k = _choice(draw, st.builds(lambda v: [v] * 6, st.floats(1e3, 1e7)),
                [[1.0] * 5, ["1"] * 6, [1, 1, 1, -1, 1, 1], np.ones((6, 6)) * np.nan, 1e6, None])
    kw = dict(stiffness=k, damping=_choice(draw, st.just(None), [[-1.0] * 6, "c"], 0.1),
              free_rotation=_choice(draw, st.sampled_from([None, "x", "y", "z", "all"]), ["w", ["x"], 1], 0.1))
    plane(draw, kw)
    if draw(st.integers(0, 3)):
        kw["point"] = vector(draw)
    return "add_bushing", (f"bush{i}", node(draw, allow_ground=True), node(draw)), kw


def joint_ref(draw, i):
    return _choice(draw, st.sampled_from([f"j{k}" for k in range(max(i, 1))]), [["j0"], None, "nope", 0], 0.1)


def dof(draw):
    return _choice(draw, st.just(0), [1, 2, 0.5, True, "0", -1, None], 0.15)


def op_drive(draw, i):
    return "add_drive", (joint_ref(draw, i), time_function(draw, ())), dict(dof=dof(draw))


def op_spring(draw, i):
    return "add_joint_spring", (joint_ref(draw, i), number(draw, st.floats(0.0, 1e4))), dict(
        damping=number(draw, st.floats(0.0, 10.0)), rest=number(draw, FLOAT), dof=dof(draw))


def _pd(t, q, u):
    return -3.0 * q - 0.1 * u


def _pd_tangent(t, q, u):
    return -3.0, -0.1


def op_joint_force(draw, i):
    """A number, a function of time, or a force of the motion f(t, q, u) (docs/motion_forces.md) with
    or without its tangent and a sampling period, and bad forms of each."""
    motion = [_pd, lambda t, q, u: -q * abs(u), lambda t, q: 0.0, lambda t, q, u: float("nan")]
    kw = dict(dof=dof(draw))
    force = _choice(draw, FLOAT, BAD_NUMBERS + [time_function(draw, ())] + motion)
    if any(force is f for f in motion) and draw(st.integers(0, 2)) == 0:
        kw["tangent"] = draw(st.sampled_from([_pd_tangent, None, "dfdq"]))
    if any(force is f for f in motion) and draw(st.integers(0, 2)) == 0:
        kw["period"] = draw(st.sampled_from([0.01, 0.05, 0.0, -1.0, "0.1"]))
    return "add_joint_force", (joint_ref(draw, i), force), kw


def op_friction(draw, i):
    return "add_joint_friction", (joint_ref(draw, i), number(draw, st.floats(0.0, 0.5)), number(draw, st.floats(1e-3, 0.05))), {}


def _drag(t, x, R, v, w):
    return -2.0 * v


def _spring_and_twist(t, x, R, v, w):
    return np.concatenate([-5.0 * x - 0.5 * v, -0.3 * w])


def op_load(draw, i):
    """A constant or time-dependent load, or one in three a load of the motion f(t, x, R, v, w)
    (docs/motion_forces.md §7) with or without its tangent and a sampling period, and bad forms of each."""
    if draw(st.integers(0, 2)) == 0:
        motion = [_drag, _spring_and_twist]
        bad = [lambda t, x, R, v, w: np.full(3, math.nan), lambda t, x, R, v, w: np.zeros(4),
               lambda t, x, R, v, w: "x", lambda t, x, R, v: np.zeros(3)]
        kw = dict(force=_choice(draw, st.sampled_from(motion), bad, 0.2))
        if draw(st.integers(0, 2)) == 0:
            kw["tangent"] = draw(st.sampled_from([lambda t, x, R, v, w: np.zeros((3, 12)), "dfdx", None]))
        if draw(st.integers(0, 2)) == 0:
            kw["period"] = draw(st.sampled_from([0.01, 0.002, 0.0, -1.0, "0.1"]))
        if draw(st.integers(0, 9)) == 0:
            kw["follower"] = True  # refused for a load of the motion
        return "add_load", (f"load{i}", node(draw)), kw
    force = time_function(draw, (3,)) if draw(st.booleans()) else vector(draw)
    return "add_load", (f"load{i}", node(draw)), dict(force=force, moment=vector(draw, st.just((0.0, 0.0, 0.0))),
                                                     follower=_choice(draw, st.booleans(), ["yes", 1, None], 0.1))


def op_particle_body(draw, i):
    kind = _choice(draw, st.sampled_from(["planar", "rod", "spatial"]), ["cube", None, ["rod"]], 0.1)
    n = {"planar": 3, "rod": 2, "spatial": 4}.get(kind, 3) if isinstance(kind, str) else 3
    pts = [vector(draw) for _ in range(n)]
    J = inertia(draw) if kind == "spatial" else number(draw, st.floats(0.01, 1.0))
    return "add_particle_body", (f"pb{i}", node(draw), number(draw)), dict(
        com=vector(draw, st.just((0.0, 0.0, 0.0))), inertia=J, particle_nodes=pts, kind=kind)


def op_particle_load(draw, i):
    body = _choice(draw, st.sampled_from([f"pb{k}" for k in range(max(i, 1))]), ["nope", None, ["pb0"]], 0.1)
    return "add_particle_load", (f"pload{i}", body), dict(force=vector(draw), couple=vector(draw, st.just((0.0, 0.0, 0.1))),
                                                         follower=draw(st.booleans()))


def coordinate_ref(draw, i):
    """A joint (its one coordinate) or a coordinate name '<joint>.q' / '.t0' / '.r1' / '.wx', or a bad one."""
    j = "j0" if draw(st.booleans()) else joint_ref(draw, i)  # j0: the first limb's, always there
    if not isinstance(j, str) or draw(st.booleans()):
        return j
    return j + draw(st.sampled_from([".q", ".q", ".t0", ".r1", ".wx", ".x"]))


def op_coupling(draw, i):
    stiffness = _choice(draw, st.one_of(st.none(), st.floats(1.0, 1e5)), BAD_NUMBERS, 0.1)
    damping = None if stiffness is None and draw(st.integers(0, 9)) else number(draw, st.floats(0.0, 10.0))
    return "add_coupling", (f"cpl{i}", coordinate_ref(draw, i), coordinate_ref(draw, i)), dict(
        ratio=number(draw, st.floats(-3.0, 3.0)), offset=number(draw, FLOAT), stiffness=stiffness, damping=damping)


def op_gear_pair(draw, i):
    """Two wheels (nodes with bodies, mostly good values) on joints to ground or to an earlier node,
    then a coupling between their coordinates (add_coupling: mixed good and bad values); run as steps."""
    steps, ends = [], []
    valid = {"revolute": ("", ".q"), "prismatic": ("", ".q"), "cylindrical": (".t0", ".r1"), "universal": (".r0", ".r1"),
             "spherical": (".wx", "")}  # a spherical joint's: refused
    for w in ("a", "b"):
        name, joint = f"gear{i}{w}", f"g{i}{w}"
        kind = draw(st.sampled_from(["revolute", "revolute", "prismatic", "cylindrical", "universal", "spherical"]))
        kw = dict(axis=draw(st.sampled_from([(0.0, 0.0, 1.0), (1.0, 0.0, 0.0), (0.0, 0.6, 0.8)]))) if kind in (
            "revolute", "prismatic", "cylindrical") else (dict(axes=[(1.0, 0.0, 0.0), (0.0, 1.0, 0.0)]) if kind == "universal"
                                                          else {})
        steps += [("add_node", (name,), dict(position=draw(VEC))),
                  ("add_body", (f"{name}body", name), dict(mass=draw(POSITIVE), inertia=np.eye(3) * draw(POSITIVE))),
                  ("add_joint", (joint, kind, "ground" if w == "a" or draw(st.booleans()) else f"gear{i}a", name), kw)]
        ends.append(_choice(draw, st.sampled_from([joint + s for s in valid[kind]]), [joint + ".x", ["x"], None, "nope.q"], 0.1))
    name, args, kw = op_coupling(draw, i)
    return "steps", ([*steps, (name, (args[0], *ends), kw)],), {}


OPS = (op_limb,) * 8 + (op_node,) + (op_body,) * 2 + (op_joint,) * 3 + (
    op_beam, op_link, op_bushing, op_rigid_cut, op_actuator, op_spring_damper, op_rotational_spring_damper,
    op_prescribed_loop, op_drive, op_spring, op_joint_force, op_friction, op_load,
    op_particle_body, op_particle_load, op_coupling, op_gear_pair, op_gear_pair)


@st.composite
def programs(draw):
    """(gravity, planar, [(method, args, kwargs), ...]): mostly a limb then random operations; one in
    eight a short program of prescribed loops, loads and limbs (mostly good values: an inverse-
    dynamics model, with no free coordinate at all unless it has a limb). One model in five is
    planar (``planar``: a plane, or a bad value; else None): its limbs about z stay in the x-y plane,
    its other joints, loads and gravity may leave it."""
    gravity = _choice(draw, st.just((0.0, -9.81, 0.0)), BAD_VECTORS, 0.03)
    gravity = _choice(draw, st.just(gravity), EXTREME_GRAVITY, 0.05)
    planar = _choice(draw, st.sampled_from(PLANES), BAD_PLANES, 0.1) if draw(st.integers(0, 3)) == 0 else None
    if planar is not None and draw(st.booleans()):  # limbs in the plane closed by cuts: planar models that run
        n = draw(st.integers(1, 4))
        cuts = [draw(st.sampled_from((op_bushing, op_rigid_cut, op_load)))(draw, n + i) for i in range(draw(st.integers(1, 3)))]
        return gravity, planar, [op_planar_limb(draw, i) for i in range(n)] + cuts
    if draw(st.integers(0, 7)) == 0:
        n = draw(st.integers(1, 3))
        rest = (op_prescribed_loop,) * 3 + (op_load, op_limb)
        return gravity, planar, [op_prescribed_loop(draw, 0)] + [draw(st.sampled_from(rest))(draw, i) for i in range(1, n)]
    n = draw(st.integers(2, 14))
    return gravity, planar, [op_limb(draw, 0)] + [draw(st.sampled_from(OPS))(draw, i) for i in range(1, n)]


# ----------------------------------------------------------------------------- the properties
def _names_the_offender(msg: str, method: str, args: tuple, kwargs: dict) -> bool:
    """The message names the call, the item (the call's first argument, the name of what it adds
    or of the joint or body it refers to, when that is a valid name) and the offender: one of the
    call's parameters by name, or a string argument by its value."""
    if method not in msg:
        return False
    if args and isinstance(args[0], str) and args[0] and args[0] != "ground" and repr(args[0]) not in msg:
        return False
    call = fm.BeamSection if method == "BeamSection" else getattr(fm.ModelBuilder, method)
    params = set(inspect.signature(call).parameters) - {"self"}
    values = {repr(a) for a in args if isinstance(a, str)} | {repr(v) for v in kwargs.values() if isinstance(v, str)}
    return any(w in msg for w in params | values)


def _names_an_item(msg: str, items) -> bool:
    """The message names one of ``items`` (quoted, as flexmb's messages quote names)."""
    return any(f"'{n}" in msg for n in items)


def _non_finite_arrays(res) -> list[str]:
    """The arrays of ``res`` holding NaN or inf; the step history's ``error`` of a failed attempt
    (status 2: Newton failed, no estimate) is nan by design and left out."""
    bad = []
    for f in dataclasses.fields(res):
        v = getattr(res, f.name)
        items = v.items() if isinstance(v, dict) else [(f.name, v)]
        for k, a in items:
            if f.name == "steps" and k == "error":
                a = a[np.asarray(v["status"]) != 2]
            if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
                bad.append(k)
    return bad


_REFUSED = object()


def _call(method: str, fn, args: tuple, kwargs: dict):
    """``fn(*args, **kwargs)``; a refusal must be a FlexmbError naming the call ``method``, the item
    and the offender. Returns what fn returns, or _REFUSED."""
    try:
        return fn(*args, **kwargs)
    except fm.FlexmbError as exc:
        assert _names_the_offender(str(exc), method, args, kwargs), f"{method}{args} {kwargs}: {exc}"
        return _REFUSED


def run_steps(mb: fm.ModelBuilder, steps) -> None:
    """Call the add_* methods (and BeamSection before add_beam and add_flexible_link, a call of
    its own as in a user's program: a refused section is no beam)."""
    for method, args, kwargs in steps:
        k = {"add_beam": 3, "add_flexible_link": 4}.get(method)
        if k is not None:
            sec = _call("BeamSection", fm.BeamSection, (), args[k].kwargs)
            if sec is _REFUSED:
                continue
            args = args[:k] + (sec,) + args[k + 1:]
        _call(method, getattr(mb, method), args, kwargs)


def prescribed_loop_steps(args: tuple, kwargs: dict) -> list:
    """The builder calls of op_prescribed_loop."""
    name, body, joint, kind, parent, cut, cut_name = args
    x = kwargs["position"]
    steps = [("add_node", (name,), dict(position=x)),
             ("add_body", (body, name), dict(mass=1.0, com=(0.2, 0.0, 0.0), inertia=np.diag([0.1, 0.2, 0.25]))),
             ("add_joint", (joint, kind, parent, name), {} if kind == "fixed" else dict(axis=(0.0, 0.0, 1.0), point=x))]
    if kind != "fixed":
        v = kwargs["speed"]
        steps.append(("add_drive", (joint, lambda t, v=v: v * t), dict(velocity=lambda t, v=v: v + 0.0 * t,
                                                                        acceleration=lambda t: 0.0 * t)))
    cut_kw = dict(point=x, free_rotation=kwargs["free_rotation"])
    if cut == "add_bushing":
        cut_kw["stiffness"] = [kwargs["stiffness"]] * 6
    steps.append((cut, (cut_name, parent, name), cut_kw))
    return steps


def check_program(gravity, program, planar=None) -> str:
    """Build, compile and step the program, asserting the properties above; returns how it ended."""
    try:
        mb = fm.ModelBuilder(gravity=gravity, planar=planar)
    except fm.FlexmbError as exc:
        assert "gravity" in str(exc) or "planar" in str(exc)
        return "gravity refused" if "gravity" in str(exc) else "planar refused"
    for method, args, kwargs in program:
        if method == "limb":
            name, body, joint, kind, parent = args
            program_limb = [("add_node", (name,), dict(position=kwargs["position"])),
                            ("add_body", (body, name), dict(mass=kwargs["mass"], com=kwargs["com"], inertia=kwargs["inertia"])),
                            ("add_joint", (joint, kind, parent, name), kwargs["joint"])]
            run_steps(mb, program_limb)
            continue
        if method == "prescribed_loop":
            run_steps(mb, prescribed_loop_steps(args, kwargs))
            continue
        if method == "steps":
            run_steps(mb, args[0])
            continue
        run_steps(mb, [(method, args, kwargs)])
    items = [*mb.nodes, *mb.joints, *mb.bodies, *mb.beams, *mb.bushings, *mb.rigid_cuts, *mb.particle_bodies,
             *mb.actuators, *mb.spring_dampers,
             *{s.link for s in mb.beams.values()}, *(n for family in mb.elements.values() for n in family)]
    try:
        model = mb.compile()
    except fm.FlexmbError as exc:
        msg = str(exc)
        assert _names_an_item(msg, items) or "gravity" in msg or "no nodes" in msg, f"compile: {exc}"
        return "compile refused"
    try:
        res = fm.simulate(model, t_end=0.003, dt=1e-3)
    except fm.FlexmbError as exc:
        assert _names_an_item(str(exc), [*items, *model.coordinate_names, *model.joint_names]), f"simulate: {exc}"
        return "simulate raised"
    if res.status == "finished":
        bad = _non_finite_arrays(res)
        assert not bad, f"'finished' with non-finite {bad}"
    return res.status.split(":")[0]


@pytest.mark.filterwarnings("ignore")
@settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None, print_blob=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
@given(programs())
def test_random_builder_programs_fail_only_with_flexmb_errors_that_name_the_offender(prog):
    gravity, planar, program = prog
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with np.errstate(all="ignore"):
            outcome = check_program(gravity, program, planar)
    event(outcome)
    if planar is not None:
        event(f"planar model: {outcome}")
    if any(step[0] == "prescribed_loop" for step in program):
        event(f"with a prescribed loop: {outcome}")
    if gravity in EXTREME_GRAVITY:
        event(f"extreme gravity: {outcome}")
    assert outcome in ("gravity refused", "planar refused", "compile refused", "simulate raised", "finished", "failed", "stopped")


#: builder calls the programs leave out, each with the reason
NOT_FUZZED = {"add_element": "the element-family extension point (tests/test_element_extension.py), not a user's call"}


def test_the_programs_call_every_add_method_of_the_builder():
    """Every ``add_*`` of ModelBuilder is called by an operation of the programs (its name returned by an op or
    called by check_program): a builder call added without an operation here fails this test."""
    ops = set(OPS) | {op_planar_limb}
    source = "".join(inspect.getsource(f) for f in (*ops, check_program, prescribed_loop_steps))
    calls = {m for m in dir(fm.ModelBuilder) if m.startswith("add_")}
    missing = sorted(m for m in calls - set(NOT_FUZZED) if f'"{m}"' not in source)
    assert not missing, f"builder calls no program makes: {missing}"
