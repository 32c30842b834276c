"""The builder's couplings between joint coordinates (gears, belts, rack and pinion, screws, URDF mimic
joints: flexmb.elements.coupling, docs/coupling.md), part of
:class:`~flexmb.builder.model_builder.ModelBuilder`.

A coordinate is named as in ``Result.coordinate``: ``"<joint>.q"`` for the one coordinate of a
revolute or prismatic joint (or just the joint's name), ``"<joint>.t<i>"`` / ``"<joint>.r<i>"`` for
coordinate i of a cylindrical, universal or free joint (``flexmb info`` lists them: a cylindrical
joint's are ``.t0`` and ``.r1``). Refused here: unknown joints and coordinates, ball rotations
(spherical and free joints: three coordinates on SO(3), no scalar angle to couple), a bare joint
name for a joint of several coordinates, a coordinate coupled to itself, a ratio of zero or not
finite, a stiffness that is not positive, damping on a rigid coupling. Refused when the model is
compiled (Couplings.prepare): both coordinates driven.
"""

from __future__ import annotations

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import JointSpec
from flexmb.elements.coupling import CouplingSpec
from flexmb.errors import ModelError

__all__ = ["CoordinateCouplings", "coordinate_names"]


def coordinate_names(jt: JointSpec) -> list[tuple[str, int | None, bool]]:
    """The coordinates of joint ``jt`` as (name, scalar dof or None for a ball's, is a translation),
    named as the compiler names them (flexmb.builder.compile: ``Model.coordinate_names``)."""
    out: list[tuple[str, int | None, bool]] = []
    ci = dof = 0
    for comp, _ in jt.kind.components:
        if comp == "B":
            out += [(f"{jt.name}.w{a}", None, False) for a in "xyz"]
            ci += 3
            continue
        out.append((f"{jt.name}.{comp.lower()}{ci}" if jt.kind.n_u > 1 else f"{jt.name}.q", dof, comp == "T"))
        ci += 1
        dof += 1
    return out


class CoordinateCouplings(RecordTables):
    """``add_coupling`` of the model builder."""

    def _coupled_coordinate(self, coordinate: str, who: str, end: str) -> tuple[JointSpec, int, str, bool]:
        """(joint, scalar dof, coordinate name, is a translation) of the coordinate named ``coordinate``."""
        if not isinstance(coordinate, str) or not coordinate:
            raise ModelError(f"{who}: {end} = {coordinate!r} must name a joint coordinate, e.g. 'gear1.q'.")
        if coordinate in self._joints:
            jt = self._joints[coordinate]
            coords = coordinate_names(jt)
            if not coords:
                raise ModelError(f"{who}: {end} = {coordinate!r} is a fixed joint: it has no coordinate to couple.")
            if len(coords) != 1:
                listed = ", ".join(repr(c[0]) for c in coords if c[1] is not None) or "none"
                raise ModelError(f"{who}: {end} = {coordinate!r} is a {jt.kind.name} joint with "
                                 f"{len(coords)} coordinates; name the one to couple (its scalar ones: {listed}).")
            return jt, 0, coords[0][0], coords[0][2]
        joint, _, _ = coordinate.rpartition(".")
        if joint not in self._joints:
            raise ModelError(f"{who}: {end} = {coordinate!r} names no joint or joint coordinate; give a joint name or "
                             f"'<joint>.q' (known joints: {list(self._joints)[:20]}).")
        jt = self._joints[joint]
        coords = coordinate_names(jt)
        for name, dof, trans in coords:
            if name == coordinate:
                if dof is None:
                    raise ModelError(f"{who}: {end} = {coordinate!r} is a ball rotation of {jt.kind.name} joint "
                                     f"'{joint}' (three coordinates on SO(3), no scalar angle): couplings hold scalar "
                                     "coordinates; use a revolute or universal joint for the coupled rotation.")
                return jt, dof, name, trans
        raise ModelError(f"{who}: {end} = {coordinate!r}: joint '{joint}' ({jt.kind.name}) has the coordinates "
                         f"{[c[0] for c in coords]}.")

    def add_coupling(self, name: str, a: str, b: str, ratio: float, offset: float = 0.0, stiffness: float | None = None,
                     damping: float | None = None) -> str:
        """Couple coordinate ``b`` to coordinate ``a``: q_b = ratio q_a + offset (docs/coupling.md (C1)):
        a gear pair (ratio -z_a/z_b for external gears), a belt (r_a/r_b), a rack and pinion (b the
        rack's prismatic coordinate, a the pinion's angle: ratio = pitch radius, in m/rad), a screw
        (p / 2π). ``a`` and ``b`` name coordinates as ``Result.coordinate`` does (module docstring):
        ``"gear1.q"`` or ``"gear1"`` for a one-coordinate joint, ``"slider.t0"``, ``"cardan.r1"`` for
        the coordinates of multi-coordinate joints.

        ``stiffness=None`` (default): rigid, held by an augmented Lagrangian like the rigid cut's
        (C11)-(C15): the gap g = q_b - ratio q_a - offset stays within 1e-10 (rad, or times the
        model's size for a translation b). Otherwise elastic: the mesh stiffness k = ``stiffness`` [N m/rad
        or N/m, per unit of q_b] and ``damping`` c give the force f = k g + c ġ (C3). Either way the
        coupling applies -f to q_b and ratio f to q_a, and f is recorded with g and ġ
        (``Result.coupling(name)``); an elastic coupling's ½ k g² is strain energy, c ġ² dissipated
        power. Both ends may be anywhere in the tree (different branches too: the model then takes a
        matrix factor instead of the tree's O(n) one). Returns ``name``."""
        who = f"add_coupling: coupling {name!r}"
        table = self._elements.setdefault("coupling", {})
        self._check_new_name(name, table, "coupling", "add_coupling")
        ja, dof_a, ca, _ = self._coupled_coordinate(a, who, "a")
        jb, dof_b, cb, trans_b = self._coupled_coordinate(b, who, "b")
        if ca == cb:
            raise ModelError(f"{who}: a and b are the same coordinate '{ca}'; a coupling joins two coordinates.")
        r = args.number(ratio, who, "ratio")
        if r == 0.0:
            raise ModelError(f"{who}: ratio = 0 would hold '{cb}' at the offset, not couple it to '{ca}'; fix it with a "
                             "drive (add_drive) or a fixed joint instead, or give a nonzero ratio.")
        c0 = args.number(offset, who, "offset")
        if stiffness is None:
            if damping is not None:
                raise ModelError(f"{who}: damping = {damping!r} needs a stiffness: a rigid coupling (stiffness=None) has "
                                 "no mesh compliance to damp; give stiffness= for an elastic coupling.")
            k, c = None, 0.0
        else:
            k = args.number(stiffness, who, "stiffness", positive=True)
            c = 0.0 if damping is None else args.number(damping, who, "damping", nonnegative=True)
        nodes = (ja.parent, ja.child, jb.parent, jb.child)
        table[name] = CouplingSpec(name, ja.name, dof_a, ca, jb.name, dof_b, cb, nodes, trans_b, r, c0, k, c)
        return name
