"""The builder's beams: single co-rotational beam elements between existing nodes and flexible
links (a beam of several elements with its own nodes) (part of
:class:`~flexmb.builder.model_builder.ModelBuilder`)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from flexmb.builder import arguments as args
from flexmb.builder.record_tables import RecordTables
from flexmb.builder.records import BeamSection, BeamSpec, check_beam, readonly
from flexmb.errors import ModelError

__all__ = ["FlexibleLinks"]


def _section_frame(axis: np.ndarray, z_hint: np.ndarray, who: str) -> np.ndarray:
    """Section frame E0 (columns e1 along ``axis``, e2 = z_hint x e1, e3 = e1 x e2)."""
    e1 = axis / np.linalg.norm(axis)
    e2 = np.cross(z_hint, e1)
    if np.linalg.norm(e2) < 1e-9:
        raise ModelError(f"{who}: z_hint {z_hint.tolist()} is parallel to the beam axis; give another direction.")
    e2 /= np.linalg.norm(e2)
    return np.stack([e1, e2, np.cross(e1, e2)], axis=1)


class FlexibleLinks(RecordTables):
    """``add_beam`` and ``add_flexible_link`` of the model builder."""

    def add_beam(
        self,
        name: str,
        node_a: str,
        node_b: str,
        section: BeamSection,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float | None = None,
    ) -> str:
        """One co-rotational beam element between two existing nodes (flexmb.elements.beam).

        The section's local axes: e1 from node_a to node_b, e2 = z_hint x e1 (normalised),
        e3 = e1 x e2; so with the default z_hint a beam in the x–y plane bends in that plane
        about e3 (using Iz). ``damping``: stiffness-proportional factor α [s] on the
        deformational velocities; None (the default): 0, except in a beam that closes a loop, where
        the compiler gives its axial mode the damping ratio 0.5 (flexmb.builder.cut_defaults, eq.
        (D4)); a value given, 0 included, is used as given."""
        return self._add_beam_element(name, node_a, node_b, section, z_hint, damping, name)

    def _add_beam_element(self, name: str, node_a: str, node_b: str, section: BeamSection, z_hint: Sequence[float],
                          damping: float | None, link: str) -> str:
        """add_beam for an element of flexible link ``link``."""
        who = f"add_beam: beam element {name!r}"
        self._check_new_name(name, self._beams, "beam element", "add_beam")
        self._node_index(node_a, who)
        self._node_index(node_b, who)
        if not isinstance(section, BeamSection):
            raise ModelError(f"{who}: section = {section!r} must be a flexmb.BeamSection.")
        xa, xb = self._nodes[node_a].position, self._nodes[node_b].position
        L0 = float(np.linalg.norm(xb - xa))
        if L0 < 1e-12:
            raise ModelError(f"{who}: nodes '{node_a}' and '{node_b}' coincide (zero length).")
        check_beam(section, L0, 1, who, f"the length between nodes '{node_a}' and '{node_b}'")
        damping = None if damping is None else args.number(damping, who, "damping", nonnegative=True)
        E0 = _section_frame(xb - xa, args.direction(z_hint, who, "z_hint"), who)
        self._beams[name] = BeamSpec(name, node_a, node_b, section, readonly(E0), L0, damping, link)
        return name

    def add_flexible_link(
        self,
        name: str,
        point_a: Sequence[float],
        point_b: Sequence[float],
        n_elements: int,
        section: BeamSection,
        node_a: str | None = None,
        node_b: str | None = None,
        z_hint: Sequence[float] = (0.0, 0.0, 1.0),
        damping: float | None = None,
    ) -> list[str]:
        """A beam of ``n_elements`` elements from ``point_a`` to ``point_b``. Its end nodes are
        new nodes ``name.0`` and ``name.<n>`` unless ``node_a``/``node_b`` name existing nodes to
        share (a body's node: the link is then fixed to that body); interior nodes are free.
        Join the ends to bodies or ground with any joint. Returns the node names, a to b.
        ``damping``: stiffness-proportional factor α [s] of its elements; None (the default): 0,
        or, where the link closes a loop (a cut), α = 2 ζ / ω_ax with ζ = 0.5 for its axial mode
        (flexmb.builder.cut_defaults, eq. (D4)); ``flexmb info`` lists it."""
        who = f"add_flexible_link: flexible link {name!r}"
        args.name(name, who)
        n_elements = args.integer(n_elements, who, "n_elements", low=1)
        pa = args.vector(point_a, 3, who, "point_a")
        pb = args.vector(point_b, 3, who, "point_b")
        length = float(np.linalg.norm(pb - pa))
        if length < 1e-12:
            raise ModelError(f"{who}: point_a and point_b coincide; a beam needs a length.")
        if not isinstance(section, BeamSection):
            raise ModelError(f"{who}: section = {section!r} must be a flexmb.BeamSection.")
        check_beam(section, length, n_elements, who, "the distance from point_a to point_b")
        damping = None if damping is None else args.number(damping, who, "damping", nonnegative=True)
        for nd, p, what in ((node_a, pa, "node_a"), (node_b, pb, "node_b")):
            if nd is not None:
                self._node_index(nd, f"{who} {what}")
                if np.linalg.norm(self._nodes[nd].position - p) > 1e-9 * max(1.0, np.linalg.norm(p)):
                    raise ModelError(f"{who}: node '{nd}' is not at the link's end point {p.tolist()}.")
        if node_a is not None and node_a == node_b:
            raise ModelError(f"{who}: node_a and node_b are the same node '{node_a}'.")
        E0 = _section_frame(pb - pa, args.direction(z_hint, who, "z_hint"), who)
        new = [f"{name}.{i}" for i in range(n_elements + 1)
               if not (i == 0 and node_a is not None) and not (i == n_elements and node_b is not None)]
        for nm in new:
            self._check_new_name(nm, self._nodes, "node", "add_flexible_link")
        for i in range(n_elements):
            self._check_new_name(f"{name}.e{i}", self._beams, "beam element", "add_flexible_link")
        names = []
        for i in range(n_elements + 1):
            if i == 0 and node_a is not None:
                names.append(node_a)
            elif i == n_elements and node_b is not None:
                names.append(node_b)
            else:
                names.append(self.add_node(f"{name}.{i}", pa + (pb - pa) * i / n_elements, E0))
        for i in range(n_elements):
            self._add_beam_element(f"{name}.e{i}", names[i], names[i + 1], section, z_hint, damping, name)
        return names
