"""The builder's loop cuts: bushings (elastic cut joints, 6x6 spring–dampers) and rigid cuts
(joints held by an augmented Lagrangian), with the checks of their frame that both share (part
of :class:`~flexmb.builder.model_builder.ModelBuilder`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder import planar
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import BushingSpec, RigidCutSpec, readonly
from flexmb.elements.cut_family import held_directions
from flexmb.errors import ModelError

__all__ = ["LoopCuts"]


def _matrix6(value: Any, who: str, what: str) -> np.ndarray:
    """6 diagonal values or a symmetric positive semi-definite 6x6 matrix."""
    arr = args.array(value, ((6,), (6, 6)), who, what, "6 diagonal values or a 6x6 matrix")
    if arr.shape == (6,):
        arr = np.diag(arr)
    scale = max(1.0, float(np.abs(arr).max()))
    if np.abs(arr - arr.T).max() > 1e-12 * scale:
        raise ModelError(f"{who}: {what}: the matrix is not symmetric; a spring–damper needs a symmetric matrix.")
    ev = np.linalg.eigvalsh(arr / scale) * scale
    if ev.min() < -1e-12 * scale:
        raise ModelError(f"{who}: {what}: the matrix is indefinite (eigenvalue {ev.min():.3g}); "
                         "it must be positive semi-definite.")
    return arr


class LoopCuts(RecordTables):
    """``add_bushing`` and ``add_rigid_cut`` of the model builder."""

    def add_bushing(
        self,
        name: str,
        node_a: str,
        node_b: str,
        stiffness: Any,
        damping: Any = None,
        point: Sequence[float] | None = None,
        axes: Any = None,
        free_rotation: str | None = None,
        plane: Any = None,
    ) -> str:
        """Elastic link (6x6 spring–damper, elements/bushing.py) between the frames of ``node_a``
        (or ``"ground"``) and ``node_b``: an elastic cut joint; bushings may close loops.

        ``point``: where the bushing acts, global, in the assembly configuration. It is required
        unless the two ends coincide (node_a's and node_b's positions are equal; ground counts as
        the origin), and then defaults to that common position. Give the point of the joint the
        bushing replaces: a bushing elsewhere builds another mechanism. The point is carried by
        both node frames: p_a by node_a, p_b by node_b (equal at assembly).

        ``axes``: the bushing axes x, y, z as the columns of a rotation matrix, global, in the
        assembly configuration (default: the global axes); carried by both node frames,
        A = R_a E_a and B = R_b E_b.

        ``stiffness`` / ``damping``: 6 diagonal values or a symmetric positive semi-definite 6x6
        matrix on d = (dx, dy, dz, rx, ry, rz) in bushing axes: first the three translations of
        p_b relative to p_a along A's x, y, z (d = A^T (p_b - p_a), N/m), then the three rotations
        of B relative to A about x, y, z (the rotation vector log(A^T B), N m/rad). A zero entry
        leaves that direction free (a rotation only for small angles: use ``free_rotation``).

        ``damping=None`` (the default): for a bushing that closes a loop (a cut), chosen by the
        compiler so that every local mode of the cut has the damping ratio 0.5, from its stiffness
        and the inertia it couples at the start (0 for a bushing on no loop)
        (flexmb.builder.cut_defaults, eq. (D1)-(D8)); ``flexmb info`` lists it. Any value given
        (6 diagonal values or a 6x6 matrix; ``damping=0``: undamped) is used as given (an undamped
        cut rings: its forces then depend on the step).

        ``free_rotation``: None holds all three rotations (log(A^T B)); ``"x"``, ``"y"`` or ``"z"``
        frees the rotation about that bushing axis for any angle (a revolute bushing): the
        rotational deformation becomes the rotation vector that tilts axis k of A onto axis k of B
        (elements/bushing.py eq. (2b)), which only keeps the two axes aligned, so the entry of that
        axis is unused and the two others resist its tilt; ``"all"`` frees all rotations (a
        spherical bushing: only the translations act).

        ``plane``: a planar bushing (docs/planar.md (P3)): ``"xy"``, ``"yz"``, ``"zx"`` or a normal
        vector (global), along one of the bushing axes; its stiffness and damping are kept on the
        two translations across that axis and the rotation about it, zero on the three others
        (out of the plane). None (the default): the model's plane in a planar model
        (``ModelBuilder(planar=...)``), else spatial; ``"spatial"``: all six directions as given.

        The cut force (what the bushing exerts on node_b at the point, in bushing axes and
        globally) is recorded in every result: ``Result.cut_force(name)``."""
        who = f"add_bushing: bushing {name!r}"
        K = _matrix6(stiffness, who, "stiffness")
        if damping is not None and np.ndim(damping) == 0 and not isinstance(damping, (str, bytes)) and damping == 0:
            damping = np.zeros(6)  # damping=0: undamped, said in one number
        C = None if damping is None else readonly(_matrix6(damping, who, "damping"))
        P, E, mode = self._cut_frame(name, node_a, node_b, point, axes, free_rotation, who, "add_bushing")
        k = self._cut_plane(plane, E, who)
        held = held_directions(k)
        keep = np.outer(held, held)  # (P3): no stiffness or damping out of the plane
        K = np.where(keep, K, 0.0)
        C = None if C is None else readonly(np.where(keep, C, 0.0))
        self._bushings[name] = BushingSpec(name, node_a, node_b, readonly(P), readonly(E), readonly(K), C, mode, k)
        return name

    def add_rigid_cut(
        self,
        name: str,
        node_a: str,
        node_b: str,
        point: Sequence[float] | None = None,
        axes: Any = None,
        free_rotation: str | None = None,
        tolerance: float | None = None,
        penalty: float | None = None,
        plane: Any = None,
    ) -> str:
        """A rigid-limit loop cut (flexmb.elements.rigid_cut): the joint between ``node_a`` (or
        ``"ground"``) and ``node_b`` held exactly, by an augmented Lagrangian (index 3, Bayo &
        Ledesma 1996, with mass-orthogonal projections of the velocities and accelerations,
        elements/rigid_cut.py, docs/rigid_cut.md) instead
        of a stiff spring. Use it where the loop is to be rigid; use :meth:`add_bushing` where the
        link is physically elastic, or where a drive moves the loop through a singular
        configuration (a rigid loop cannot follow that: its cut forces grow without bound, and the
        run stops with a message saying so).

        ``point``, ``axes``, ``free_rotation``: the cut frame and the rotation it leaves free, as
        for :meth:`add_bushing` (``free_rotation="z"``: a revolute pin about the cut's z axis;
        ``"all"``: a spherical joint; None: a weld). The closure Φ(q) (the bushing deformation of
        its held directions) is kept below ``tolerance`` [m for translations, rad for rotations]
        at every step, or the step fails saying so; None (the default): 1e-10 times the model's size
        (the extent of its nodes) for the translations, 1e-10 rad for the rotations, so the same
        mechanism at another size or place is held alike. ``penalty``: α [N/m; N m/rad for rotations] of
        the augmented Lagrangian; None (the default) chooses α = 1e4 m_eff / β' per step (m_eff the
        cut's largest effective mass at the start, β' = β h² (1-αf)/(1-αm); docs/rigid_cut.md
        (AL7)), raised tenfold within a step that converges slowly (AL11). Redundant cuts (an
        overconstrained loop such as Bricard's) are allowed.

        ``plane``: a planar cut (docs/planar.md (P3)), as for :meth:`add_bushing`: it holds only the
        two translations across its axis along the plane normal and the rotation about that axis
        (less its free rotation), and has no closure, penalty or multiplier in the three others.

        The cut force (the multipliers, what the cut exerts on node_b at the point) is recorded in
        every result like a bushing's: ``Result.cut_force(name)``."""
        who = f"add_rigid_cut: rigid cut {name!r}"
        P, E, mode = self._cut_frame(name, node_a, node_b, point, axes, free_rotation, who, "add_rigid_cut")
        tol = None if tolerance is None else args.number(tolerance, who, "tolerance", positive=True)
        alpha = None if penalty is None else args.number(penalty, who, "penalty", positive=True)
        k = self._cut_plane(plane, E, who)
        self._rigid_cuts[name] = RigidCutSpec(name, node_a, node_b, readonly(P), readonly(E), mode, tol, alpha, k)
        return name

    def _cut_plane(self, plane: Any, E: np.ndarray, who: str) -> int:
        """The cut axis along the normal of the cut's plane (docs/planar.md (P3)), -1 for a spatial cut:
        ``plane`` None takes the model's (``ModelBuilder(planar=...)``), ``"spatial"`` none."""
        if isinstance(plane, str) and plane == planar.SPATIAL:
            return -1
        n = self.planar if plane is None else planar.plane_normal(plane, who, "plane")
        return -1 if n is None else planar.cut_plane_axis(n, E, who)

    def _cut_frame(self, name: str, node_a: str, node_b: str, point: Any, axes: Any, free_rotation: Any, who: str,
                   call: str) -> tuple[np.ndarray, np.ndarray, int]:
        """Checked name, ends, point, axes and free-rotation mode of a cut (bushing or rigid cut)."""
        self._check_new_name(name, self._bushings, "bushing", call)
        self._check_new_name(name, self._rigid_cuts, "rigid cut", call)
        self._check_new_name(name, self._joints, "joint or cut", call)
        self._check_new_name(name, self._spring_dampers, "spring-damper or cut", call)
        self._check_new_name(name, self._actuators, "actuator or cut", call)
        args.node_name(node_a, who, "node_a")
        if node_a != "ground":
            self._node_index(node_a, who)
        self._node_index(node_b, who)
        if node_a == node_b:
            raise ModelError(f"{who}: both ends are node '{node_b}'.")
        modes = {None: -1, "x": 0, "y": 1, "z": 2, "all": 3}
        if not (free_rotation is None or isinstance(free_rotation, str)) or free_rotation not in modes:
            raise ModelError(f"{who}: free_rotation {free_rotation!r} must be one of {list(modes)}.")
        xa = np.zeros(3) if node_a == "ground" else self._nodes[node_a].position
        xb = self._nodes[node_b].position
        if point is not None:
            P = args.vector(point, 3, who, "point")
        elif np.linalg.norm(xb - xa) <= 1e-12 * max(1.0, float(np.abs(xb).max()), float(np.abs(xa).max())):
            P = xb.copy()  # the ends coincide: their common position
        else:
            where = "ground's origin (0, 0, 0)" if node_a == "ground" else f"node '{node_a}' at {xa.tolist()}"
            raise ModelError(f"{who}: give point, where the cut acts (the point of the joint it replaces): "
                             f"node '{node_b}' at {xb.tolist()} and {where} do not coincide, so no default is "
                             f"safe; point={tuple(xb.tolist())} would put it at node '{node_b}'.")
        E = np.eye(3) if axes is None else args.rotation(axes, who, "axes")
        return P, E, modes[free_rotation]
