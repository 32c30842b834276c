"""Scalar time histories of a Result by name (docs/results_by_name.md): a coordinate's value,
rate and acceleration, a spring-damper's length, rate and tension, a loop cut's force and moment
components, a beam element's section forces.

The names (docs/results_by_name.md (N1)-(N3)):

* a coordinate name (``Result.coordinate_names``: ``"pin.q"``, ``"cyl.t0"``, ``"ball.wx"``) or
  the name of a one-coordinate joint (``"pin"`` for ``"pin.q"``): its value, a column of ``q``;
  with ``".u"`` appended its rate (a column of ``u``), with ``".udot"`` its acceleration (``udot``);
  for a ball joint's ``wx, wy, wz`` the value is the rotation vector's component and the rate the
  angular velocity's (not the rotation vector's time derivative);
* a spring-damper name with ``".length"``, ``".rate"`` or ``".force"`` (``Result.spring_dampers``), a
  rotational spring-damper's with ``".angle"``, ``".rate"`` or ``".torque"`` (the same field's columns);
  a loop cut's (bushing, rigid cut) with ``".fx"`` ... ``".mz"`` (``Result.cut_forces``: on its end b,
  cut axes); a beam element's with ``".N"``, ``".Vy"``, ``".Vz"``, ``".T"``, ``".My"``, ``".Mz"``
  (``Result.element_forces``); a coupling's with ``".gap"``, ``".rate"`` or ``".force"``
  (``Result.couplings``); a joint force of the motion's (its joint's name, or its coordinate's for a
  joint of several) with ``".force"`` or ``".sampled_at"`` (``Result.joint_forces``); a node load of the
  motion's with ``".fx"`` ... ``".mz"`` or ``".sampled_at"`` (``Result.motion_loads``).

A name that is a coordinate name as it stands is always read as that coordinate, before any
suffix is split off. An unknown name raises ModelError listing the closest known names.
"""

from __future__ import annotations

import difflib
from typing import Any

import numpy as np

from flexmb.errors import ModelError

Result = Any  # a flexmb.results.result.Result (not imported: that module imports this one)

__all__ = ["COORDINATE_SUFFIXES", "SPRING_DAMPER_SUFFIXES", "ROTATIONAL_SUFFIXES", "CUT_SUFFIXES", "BEAM_SUFFIXES",
           "COUPLING_SUFFIXES", "JOINT_FORCE_SUFFIXES", "MOTION_LOAD_SUFFIXES", "resolve",
           "history",
           "history_names", "unit_of"]

COORDINATE_SUFFIXES = {"": "q", ".u": "u", ".udot": "udot"}
"""Suffix of a coordinate name -> the Result field read: value, rate, acceleration (N1)."""

SPRING_DAMPER_SUFFIXES = {".length": 0, ".rate": 1, ".force": 2}
"""Suffix of a spring-damper name -> its column of ``Result.spring_dampers`` (N2)."""

ROTATIONAL_SUFFIXES = {".angle": 0, ".rate": 1, ".torque": 2}
"""Suffix of a rotational spring-damper's name -> its column of ``Result.spring_dampers`` (N2;
docs/rotational_spring_damper.md §8): the angle [rad], its rate [rad/s], the torque [N m]."""

CUT_SUFFIXES = {".fx": 0, ".fy": 1, ".fz": 2, ".mx": 3, ".my": 4, ".mz": 5}
"""Suffix of a loop cut's name -> its column of ``Result.cut_forces`` (cut axes) (N2)."""

BEAM_SUFFIXES = {".N": 0, ".Vy": 1, ".Vz": 2, ".T": 3, ".My": 4, ".Mz": 5}
"""Suffix of a beam element's name -> its column of ``Result.element_forces`` (N2)."""

COUPLING_SUFFIXES = {".gap": 0, ".rate": 1, ".force": 2}
"""Suffix of a coupling's name -> its column of ``Result.couplings`` (N2; docs/coupling.md (C1)-(C3))."""

MOTION_LOAD_SUFFIXES = {".fx": 0, ".fy": 1, ".fz": 2, ".mx": 3, ".my": 4, ".mz": 5, ".sampled_at": 6}
"""Suffix of a node load of the motion's name -> its column of ``Result.motion_loads`` (N2; docs/motion_forces.md
(M8), (M15)): force and moment, global axes, and when they were computed."""

JOINT_FORCE_SUFFIXES = {".force": 0, ".sampled_at": 1}
"""Suffix of a joint force of the motion's name -> its column of ``Result.joint_forces`` (N2;
docs/motion_forces.md (M14)): the force acting (a sampled force's held value) and when it was computed."""

_ELEMENT_TABLES = (("spring_dampers", "spring_damper_names", SPRING_DAMPER_SUFFIXES, "spring-damper"),
                   ("cut_forces", "cut_names", CUT_SUFFIXES, "loop cut"),
                   ("element_forces", "element_names", BEAM_SUFFIXES, "beam element"),
                   ("couplings", "coupling_names", COUPLING_SUFFIXES, "coupling"),
                   ("spring_dampers", "spring_damper_names", ROTATIONAL_SUFFIXES, "rotational spring-damper"),
                   ("joint_forces", "joint_force_names", JOINT_FORCE_SUFFIXES, "joint force of the motion"),
                   ("motion_loads", "motion_load_names", MOTION_LOAD_SUFFIXES, "load of the motion"))


def _coordinate_index(res: Result, base: str) -> int | None:
    """Index of the coordinate ``base`` names (a coordinate name or a one-coordinate joint), or None."""
    names = list(res.coordinate_names)
    if base in names:
        return names.index(base)
    if f"{base}.q" in names:  # a one-coordinate joint: its single coordinate is '<joint>.q'
        return names.index(f"{base}.q")
    return None


def resolve(res: Result, name: str) -> tuple[str, int, int | None]:
    """Where the history ``name`` lives: (Result field, index along its second axis, column along
    its third axis or None); ModelError for an unknown name, listing close matches (N3)."""
    if name in res.coordinate_names:
        return "q", list(res.coordinate_names).index(name), None
    for suffix in (".udot", ".u"):
        if name.endswith(suffix):
            k = _coordinate_index(res, name[: -len(suffix)])
            if k is not None:
                return COORDINATE_SUFFIXES[suffix], k, None
    k = _coordinate_index(res, name)
    if k is not None:
        return "q", k, None
    base, dot, tail = name.rpartition(".")
    for field, names_field, suffixes, _ in _ELEMENT_TABLES:
        known = list(getattr(res, names_field))
        if dot and base in known and f".{tail}" in suffixes:
            return field, known.index(base), suffixes[f".{tail}"]
    raise _unknown(res, name)


def _unknown(res: Result, name: str) -> ModelError:
    known = history_names(res)
    same = [k for k in known if k.lower() == name.lower()]  # a name that differs only in case comes first
    close = same + [c for c in difflib.get_close_matches(name, known, n=5, cutoff=0.6) if c not in same][: 5 - len(same)]
    bare = [(what, suffixes) for _, names_field, suffixes, what in _ELEMENT_TABLES if name in getattr(res, names_field)]
    if bare:
        what, suffixes = bare[0]
        hint = f"a {what}'s history needs a suffix: {', '.join(name + s for s in suffixes)}."
    elif close:
        hint = f"did you mean {', '.join(repr(c) for c in close)}?"
    else:
        hint = f"known names include {known[:12]}."
    return ModelError(f"unknown result quantity '{name}': not a coordinate (NAME, NAME.u, NAME.udot), a "
                      f"spring-damper's (NAME.length, .rate, .force), a rotational spring-damper's (NAME.angle, .rate, "
                      f".torque), a loop cut's (NAME.fx ... NAME.mz), a beam "
                      f"element's (NAME.N, .Vy, .Vz, .T, .My, .Mz), a coupling's (NAME.gap, .rate, .force), a joint force "
                      f"of the motion's (NAME.force, .sampled_at) or a load of the motion's (NAME.fx ... NAME.mz, "
                      f".sampled_at); {hint}")


def history(res: Result, name: str) -> np.ndarray:
    """The (nt,) time history called ``name`` (module docstring; docs/results_by_name.md (N1)-(N2))."""
    field, k, col = resolve(res, name)
    rows = getattr(res, field)[:, k]
    return rows if col is None else rows[:, col]


def history_names(res: Result) -> list[str]:
    """Every name :func:`history` reads from ``res``: each coordinate with its ``.u`` and ``.udot``
    forms (one-coordinate joints also by the joint's name), each spring-damper's three quantities,
    each loop cut's and beam element's six."""
    out: list[str] = []
    for c in res.coordinate_names:
        out += [c, f"{c}.u", f"{c}.udot"]
        if c.endswith(".q"):
            j = c[:-2]
            out += [j, f"{j}.u", f"{j}.udot"]
    for _, names_field, suffixes, _ in _ELEMENT_TABLES:
        for e in getattr(res, names_field):
            out += [e + suffix for suffix in suffixes]
    return out


def unit_of(res: Result, name: str) -> str:
    """A label of what ``name`` measures (for a plot axis): the coordinate's value, rate or
    acceleration (rad or m, per s, per s^2), a length [m], a rate [m/s], a force [N] or a moment [N m]."""
    field, _, col = resolve(res, name)
    if field == "spring_dampers" and name.rpartition(".")[2] in ("angle", "torque"):
        return ("angle [rad]", "", "torque [N m]")[col]
    if field == "spring_dampers":
        return ("length [m]", "length rate [m/s]", "force [N]")[col]
    if field == "joint_forces":
        return ("force [N or N m]", "sampled at [s]")[col]
    if field == "motion_loads":
        return "sampled at [s]" if col == 6 else ("force [N]" if col < 3 else "moment [N m]")
    if field == "couplings":
        return ("gap [rad or m]", "gap rate [rad/s or m/s]", "force [N m or N]")[col]
    if field in ("cut_forces", "element_forces"):
        return "force [N]" if col < 3 else "moment [N m]"
    return {"q": "coordinate [rad or m]", "u": "rate [rad/s or m/s]", "udot": "acceleration [rad/s² or m/s²]"}[field]
