"""Particle bodies (Attia 2005 §2–3): the ``"particle_body"`` element family, data only.

A particle body is built by flexmb.builder.particle_bodies as point-mass bodies (the ``"body"``
family) on nodes that move with it, so it adds no forces of its own: this family keeps which
particles make which body (for the compile-time checks of builder/checks.py, ``flexmb info``
and the drawing, lines from the first particle node to each other one). The mass systems and
the distribution of forces over the particles are in :mod:`flexmb.elements.particles`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from flexmb.elements.family import ElementData, ElementFamily, NodeTable, frozen_arrays, listing

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import ParticleBodySpec
    from flexmb.model import Model

__all__ = ["ParticleBodyData", "ParticleBodies", "FAMILY"]


@dataclass(frozen=True, eq=False)
class ParticleBodyData(ElementData):
    """Compiled particle bodies (``Model.elements["particle_body"]``); each particle is also a
    point-mass body of the ``"body"`` family."""

    nodes: tuple[tuple[int, ...], ...]  # node index of each particle, primaries first     (n_el x n_particles)
    masses: tuple[tuple[float, ...], ...]  # mass of each particle (may be negative)       (n_el x n_particles)
    reference: np.ndarray  # reference node index                                         (n_el)
    kinds: tuple[str, ...]  # 'planar', 'rod', 'spatial' or 'general'                      (n_el)
    planar: np.ndarray  # planar conditions only (planar, rod, general with plane normal)   (n_el)


class ParticleBodies(ElementFamily):
    """The ``"particle_body"`` family (module docstring): no forces, drawn and described."""

    name = "particle_body"
    label = "particle body"
    plural = "particle bodies"
    forces = False
    cell_kind = "particle"
    drawing_keys = ("particle_nodes", "particle_counts")
    builder_table = "particle_bodies"

    def compile(self, records: Sequence[ParticleBodySpec], nodes: NodeTable) -> ParticleBodyData:
        who = "particle body '{}'"
        return ParticleBodyData(**frozen_arrays(dict(
            names=tuple(s.name for s in records),
            nodes=tuple(tuple(nodes.index(n, who.format(s.name)) for n in s.nodes) for s in records),
            masses=tuple(s.masses for s in records),
            reference=np.array([nodes.index(s.reference, who.format(s.name)) for s in records], dtype=int),
            kinds=tuple(s.kind for s in records),
            planar=np.array([s.planar for s in records], dtype=bool),
        )))

    def node_roles(self, model: Model, data: ParticleBodyData) -> dict[int, list[str]]:
        out: dict[int, list[str]] = {}
        for name, nodes in zip(data.names, data.nodes):
            for i in nodes:
                out.setdefault(int(i), []).append(name)
        return out

    # ------------------------------------------------------------------ presentation
    def drawing(self, model: Model, data: ParticleBodyData) -> dict[str, np.ndarray]:
        return {"particle_nodes": np.array([n for nodes in data.nodes for n in nodes], dtype=np.int64),
                "particle_counts": np.array([len(nodes) for nodes in data.nodes], dtype=np.int64)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        counts, pn = d["particle_counts"], d["particle_nodes"]
        if counts.ndim != 1:
            return f"drawing 'particle_counts' has shape {counts.shape}, expected one count per particle body"
        if counts.size and counts.min() < 0:
            return "drawing 'particle_counts' holds a negative count"
        if pn.shape != (int(counts.sum()),):
            return f"drawing 'particle_nodes' has shape {pn.shape}, expected ({int(counts.sum())},)"
        return ""

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """First particle node -> each further particle node of every particle body."""
        counts, pn = d["particle_counts"], d["particle_nodes"]
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        first = np.repeat(pn[starts] if pn.size else np.zeros(0, np.int64), np.maximum(counts - 1, 0))
        rest = np.concatenate([pn[s + 1:s + c] for s, c in zip(starts, counts)]) if counts.size else np.zeros(0, np.int64)
        return np.stack([first, rest.astype(np.int64)], axis=1)

    def describe(self, model: Model, data: ParticleBodyData, limit: int) -> list[str]:
        return ["particle bodies:"] + listing(
            [f"  {n}: particles on nodes {[model.node_names[i] for i in nodes]}" for n, nodes in zip(data.names, data.nodes)],
            limit)


#: the registered instance (flexmb.elements.FAMILIES["particle_body"])
FAMILY = ParticleBodies()
