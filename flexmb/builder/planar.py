"""Planar models and planar loop cuts (docs/planar.md).

``ModelBuilder(planar="xy")`` declares a model that moves in the plane normal to n (eq. (P1)); a cut
given ``plane=`` (or every cut of a planar model, by default) holds only the three in-plane
directions of its frame: the translations along its two axes in the plane and the rotation about
its axis along n (eq. (P3)). :func:`check_planar_model` refuses, at compile, what would move a
planar model out of its plane (eq. (P4)-(P6)).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.elements.cut_family import DIRECTIONS, constrained_mask, held_directions
from flexmb.errors import ModelError

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from flexmb.builder.records import JointSpec
    from flexmb.model import Model

__all__ = ["PLANES", "ANGLE_TOLERANCE", "SPATIAL", "plane_normal", "plane_name", "cut_plane_axis", "held_text",
           "planar_rows", "check_planar_model"]

#: the named planes and their unit normals (eq. (P1))
PLANES = {"xy": (0.0, 0.0, 1.0), "yz": (1.0, 0.0, 0.0), "zx": (0.0, 1.0, 0.0)}
#: a direction is along (or across) the normal when its angle to it (or to the plane) is below this [rad] (eq. (P2))
ANGLE_TOLERANCE = 1e-9
#: ``plane=SPATIAL`` on a cut of a planar model: the cut holds all its directions (a spatial cut)
SPATIAL = "spatial"


def plane_normal(value: Any, who: str, what: str) -> np.ndarray | None:
    """The unit normal (3,) of ``value`` (eq. (P1)): ``"xy"``, ``"yz"``, ``"zx"`` (the letters in
    either order) or a normal vector (3 numbers, not of zero length); None stays None (no plane)."""
    if value is None:
        return None
    names = list(PLANES) + ([SPATIAL] if what == "plane" else [])
    if isinstance(value, str):
        name = value if value in PLANES else value[::-1]  # "yx", "zy", "xz": the same planes
        if name not in PLANES:
            raise ModelError(f"{who}: {what} {value!r} is not a plane: give one of {names} or a normal vector "
                             "(3 numbers).")
        return np.array(PLANES[name])
    if isinstance(value, (bool, np.bool_)) or np.ndim(value) == 0:
        raise ModelError(f"{who}: {what} = {value!r} is not a plane: give one of {names} or a normal vector "
                         "(3 numbers).")
    return args.unit(value, who, what)


def plane_name(n: np.ndarray) -> str:
    """``"xy"``, ``"yz"`` or ``"zx"`` when the unit normal ``n`` is (±) a global axis, else its components."""
    for name, axis in PLANES.items():
        if abs(abs(float(np.dot(n, axis))) - 1.0) <= ANGLE_TOLERANCE**2:
            return name
    return "normal (" + ", ".join(f"{v:.4g}" for v in n) + ")"


def _angle(a: np.ndarray, n: np.ndarray) -> float:
    """The angle [rad] between the unit vectors ``a`` and ±``n`` (eq. (P2))."""
    return float(np.arctan2(np.linalg.norm(np.cross(a, n)), abs(float(np.dot(a, n)))))


def cut_plane_axis(n: np.ndarray, axes: np.ndarray, who: str) -> int:
    """The cut axis k (0, 1, 2: a column of ``axes``, global at assembly) along the plane normal
    ``n`` (eq. (P3)); refused when no cut axis is (within ANGLE_TOLERANCE)."""
    angles = [_angle(axes[:, k], n) for k in range(3)]
    k = int(np.argmin(angles))
    if angles[k] > ANGLE_TOLERANCE:
        raise ModelError(f"{who}: plane: no axis of the cut is normal to its plane (normal {np.round(n, 12).tolist()}; "
                         f"the cut axes are the columns of {np.round(axes, 12).tolist()}, the nearest, {'xyz'[k]}, is "
                         f"{angles[k]:.3g} rad off). A planar cut holds the rotation about one of its axes: give axes "
                         "with one column along the normal (e.g. the default, the global axes, for a plane 'xy', 'yz' "
                         "or 'zx').")
    return k


def planar_rows(model: Model) -> tuple[int, int]:
    """(P7): the cut rows (held directions) of the model's bushings and rigid cuts, and the rows the
    same cuts hold as spatial cuts (a rigid cut's six less its free rotation; a planar bushing's
    rows out of the plane counted as held)."""
    held = spatial = 0
    bu = model.elements["bushing"]
    if bu.n:
        stiff = np.diagonal(bu.K, axis1=1, axis2=2) > 0
        held += int(constrained_mask(bu.mode, stiff).sum())
        out = np.array([~held_directions(int(k)) for k in bu.plane], dtype=bool).reshape(-1, 6)
        spatial += int(constrained_mask(bu.mode, stiff | out).sum())
    rc = model.elements.get("rigid_cut")
    if rc is not None and rc.n:
        held += int(rc.mask.sum())
        spatial += int(constrained_mask(rc.mode, np.ones((rc.n, 6), bool)).sum())
    return held, spatial


def held_text(k: int) -> str:
    """The held directions of a cut with plane axis ``k`` as text, for ``flexmb info``."""
    return ", ".join(DIRECTIONS[i] for i in np.flatnonzero(held_directions(k)))


# ------------------------------------------------------------------------------------------ model checks
def check_planar_model(n: np.ndarray | None, joints: Iterable[JointSpec], gravity: Sequence[float],
                       model: Model) -> None:
    """Refuse what moves a planar model of unit normal ``n`` (None: not planar) out of its plane
    (docs/planar.md §3): one of the builder's ``joints`` whose axis turns or slides out of it (P4), a
    node with no joint path to ground (a free joint), ``gravity`` (P5) or a nodal load (P6, at the
    times LOAD_TIMES) with a part along the normal or a moment across it."""
    if n is None:
        return
    where = f"the model is planar ({plane_name(n)}, ModelBuilder(planar=...))"
    for jt in joints:
        _check_joint(jt, n, where)
    if model.auto_free_nodes:
        node = model.auto_free_nodes[0]
        raise ModelError(f"compile: node '{node}' has no joint path to ground, so it gets a free joint, which moves out of "
                         f"the plane: {where}. Attach it by revolute joints about the normal and prismatic joints in the "
                         "plane (a body free in the plane: two prismatic joints across the normal and a revolute about it).")
    g = np.asarray(gravity, float)
    if abs(float(g @ n)) > ANGLE_TOLERANCE * float(np.linalg.norm(g)):
        raise ModelError(f"ModelBuilder: gravity {g.tolist()} has the part {float(g @ n):.6g} m/s² along the normal "
                         f"{np.round(n, 12).tolist()}: {where}, and its cuts carry no force across the plane. Give gravity "
                         f"in the plane ({(g - (g @ n) * n).round(12).tolist()} for the same motion).")
    for ld in model.loads:
        _check_load(model, ld, n, where)


def _check_joint(jt: Any, n: np.ndarray, where: str) -> None:
    """(P4): revolute about the normal, prismatic across it, fixed; every other kind refused."""
    who = f"compile: joint '{jt.name}'"
    kind = jt.kind.name
    if kind == "fixed":
        return
    if kind == "revolute":
        off = _angle(jt.axes[0], n)
        if off > ANGLE_TOLERANCE:
            raise ModelError(f"{who}: its revolute axis {np.round(jt.axes[0], 12).tolist()} is {off:.3g} rad off the plane "
                             f"normal {np.round(n, 12).tolist()}, so it turns out of the plane: {where}. Give axis along the "
                             "normal.")
        return
    if kind == "prismatic":
        off = abs(float(np.arcsin(np.clip(np.dot(jt.axes[0], n), -1.0, 1.0))))
        if off > ANGLE_TOLERANCE:
            raise ModelError(f"{who}: its prismatic axis {np.round(jt.axes[0], 12).tolist()} leaves the plane by {off:.3g} "
                             f"rad (normal {np.round(n, 12).tolist()}), so it slides out of the plane: {where}. Give an "
                             "axis in the plane.")
        return
    raise ModelError(f"{who}: a {kind} joint moves out of the plane: {where}, whose joints are revolute about the normal, "
                     "prismatic in the plane or fixed. Use those (a cut that closes a loop holds only in-plane "
                     "directions, so no joint needs to be spherical or universal to avoid a redundant closure).")


#: the times [s] at which a planar model's loads are checked (P6): t = 0, then a few later ones, so a
#: load such as sin(t) n that vanishes at the start is seen
LOAD_TIMES = (0.0, 1e-3, 0.1, 0.5, 1.0)


def _check_load(model: Model, ld: Any, n: np.ndarray, where: str) -> None:
    """(P6): at the times LOAD_TIMES the force has no part along the normal, the moment none across
    it (a load function that fails, or returns no 3-vector, is left to the run, which reports it)."""
    R = np.eye(3)
    if ld.follower:
        R = model.R0[ld.node if ld.axes_node < 0 else ld.axes_node]
    for t in LOAD_TIMES:
        try:
            with np.errstate(all="ignore"):
                F = R @ np.asarray(ld.force(t), float).reshape(3)
                M = R @ np.asarray(ld.moment(t), float).reshape(3)
        except Exception:  # noqa: BLE001 — a load function that fails or returns no 3-vector: the run names it
            continue
        _check_load_at(model, ld, n, where, t, F, M)


def _check_load_at(model: Model, ld: Any, n: np.ndarray, where: str, t: float, F: np.ndarray, M: np.ndarray) -> None:
    """(P6) for the force F and moment M (global) of load ``ld`` at time t."""
    scale = max(float(np.linalg.norm(F)), 1e-300)
    if abs(float(F @ n)) > ANGLE_TOLERANCE * scale:
        raise ModelError(f"compile: load '{ld.name}' on node '{model.node_names[ld.node]}': its force {F.tolist()} N at "
                         f"t = {t:g} s has the part {float(F @ n):.6g} N along the normal {np.round(n, 12).tolist()}: "
                         f"{where}. Give a force in the plane.")
    Mt = M - (M @ n) * n
    if np.linalg.norm(Mt) > ANGLE_TOLERANCE * max(float(np.linalg.norm(M)), 1e-300):
        raise ModelError(f"compile: load '{ld.name}' on node '{model.node_names[ld.node]}': its moment {M.tolist()} N m at "
                         f"t = {t:g} s turns about an axis in the plane (part {Mt.round(12).tolist()}): {where}. Give a "
                         "moment about the normal.")
