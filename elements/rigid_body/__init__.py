"""Rigid bodies on nodes: the one-node ``"body"`` element family (node masses), its 6x6
node-level mass matrix, gyroscopic and gravity forces.

A body with mass m, centre of mass c (node axes) and inertia J_c about its centre of mass
(node axes) on a node with rotation R has, with c_g = R c and J_g = R J_c R^T, the node-level
Newton–Euler inertia about the node origin (twist ordering (v, w)):

    M = [[m I,        -m [c_g]x              ],
         [m [c_g]x,    J_g - m [c_g]x [c_g]x ]]                                   (1)

and the velocity-dependent (gyroscopic) force

    g = ( m w x (w x c_g),  m c_g x (w x (w x c_g)) + w x J_g w ).                  (2)

Gravity acts at the centre of mass: f = (m g, c_g x m g); potential energy -m g . x_com.

As an element family (flexmb.elements) the bodies are the one-node variant: ``node_mass``, so
:meth:`RigidBodies.evaluate` adds (1) to the node mass blocks Mb and (2) minus the weight to the
node wrenches, and the assembly adds Mb ζ and takes M̄ from the composite-rigid-body pairs
(engine/iteration_matrix.py); they give no element blocks. Particles of particle bodies are
point-mass bodies of this family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numba import njit

from flexmb.elements.family import (
    ElementData,
    ElementFamily,
    FamilyEvaluation,
    NodeTable,
    frozen_arrays,
    listing,
    origin_potential,
)

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import BodySpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["BodyData", "RigidBodies", "FAMILY", "potential_energy", "accumulate"]


@dataclass(frozen=True, eq=False)
class BodyData(ElementData):
    """Compiled rigid bodies (``Model.elements["body"]``); particles are '<particle body>.p<k>'."""

    node: np.ndarray  # node index carrying the body                                       (n_el)
    mass: np.ndarray  # mass (a particle's may be negative)                                (n_el)
    com: np.ndarray  # centre of mass rel. to the node, node axes                          (n_el x 3)
    inertia: np.ndarray  # inertia tensor about the centre of mass, node axes              (n_el x 3 x 3)


class RigidBodies(ElementFamily):
    """The ``"body"`` family: rigid bodies (and particles) as node masses (module docstring)."""

    name = "body"
    label = "body"
    plural = "rigid bodies"
    node_mass = True
    cell_kind = "body"
    drawing_keys = ("body_node", "body_com")
    drawing_real_keys = ("body_com",)
    builder_table = "bodies"

    def compile(self, records: Sequence[BodySpec], nodes: NodeTable) -> BodyData:
        return BodyData(**frozen_arrays(dict(
            names=tuple(b.name for b in records),
            node=np.array([nodes.index(b.node, f"body '{b.name}'") for b in records], dtype=int),
            mass=np.array([b.mass for b in records], dtype=float),
            com=np.array([b.com for b in records]).reshape(-1, 3),
            inertia=np.array([b.inertia for b in records]).reshape(-1, 3, 3),
        )))

    def element_nodes(self, data: BodyData) -> np.ndarray:
        return np.asarray(data.node, dtype=np.int64)[:, None]

    def evaluate(self, model: Model, data: BodyData, prep: Any, state: State, kin: Kinematics, load_factor: float,
                 Mb: np.ndarray, w: np.ndarray) -> FamilyEvaluation:
        """Eq. (1) into Mb, eq. (2) minus ``load_factor`` times the weight into w (compiled)."""
        accumulate(data.node, kin.R, np.ascontiguousarray(kin.V[:, 3:]), data.mass, data.com, data.inertia,
                   model.gravity, float(load_factor), Mb, w)
        return FamilyEvaluation()

    def energies(self, model: Model, data: BodyData, fe: FamilyEvaluation, kin: Kinematics) -> tuple[float, float]:
        """No kinetic energy of its own (the node masses' is the assembly's); the weight's potential,
        of the global positions (the model frame's plus ``model.origin``)."""
        V = _potential_energy_at(kin.x, kin.R, data.node, data.mass, data.com, model.gravity)
        return 0.0, V + origin_potential(model, data.mass)

    # ------------------------------------------------------------------ presentation
    def drawing(self, model: Model, data: BodyData) -> dict[str, np.ndarray]:
        return {"body_node": np.asarray(data.node, dtype=np.int64),
                "body_com": np.asarray(data.com, dtype=np.float64).reshape(-1, 3)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        node, com = d["body_node"], d["body_com"]
        if node.ndim != 1:
            return f"drawing 'body_node' has shape {node.shape}, expected one index per body"
        if com.shape != (node.size, 3):
            return f"drawing 'body_com' has shape {com.shape}, expected ({node.size}, 3)"
        if not np.isfinite(com).all():
            return "drawing 'body_com' holds non-finite values"
        return ""

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """Node -> centre of mass of every body."""
        return np.stack([d["body_node"], first_point + np.arange(d["body_node"].size)], axis=1)

    def points(self, d: Mapping[str, np.ndarray], x: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The centres of mass, carried by the bodies' nodes."""
        bn = d["body_node"]
        return np.einsum("bij,bj->bi", R[bn], d["body_com"]) + x[bn], bn

    def describe(self, model: Model, data: BodyData, limit: int) -> list[str]:
        rows = [f"  {n}: on node {model.node_names[int(nd)]}, mass {ms:.4g}, centre of mass "
                f"({', '.join(f'{v:.4g}' for v in c)}) (node axes)"
                for n, nd, ms, c in zip(data.names, data.node, data.mass, data.com)]
        return ["rigid bodies:"] + listing(rows, limit)


def potential_energy(x: np.ndarray, R: np.ndarray, mass: np.ndarray, com: np.ndarray, g: np.ndarray) -> float:
    """Gravitational potential energy  -sum m g . x_com of bodies k on the rows k of x, R (one compiled pass,
    :func:`_potential_energy_at` with the k-th body on row k)."""
    mass = np.asarray(mass, dtype=float)
    return _potential_energy_at(np.ascontiguousarray(x, dtype=float), np.ascontiguousarray(R, dtype=float),
                                np.arange(mass.size, dtype=np.int64), mass, np.asarray(com, dtype=float),
                                np.asarray(g, dtype=float))


@njit(cache=True)
def _potential_energy_at(x, R, node, mass, com, g) -> float:
    """:func:`potential_energy` of the bodies on the nodes ``node`` of x (N,3), R (N,3,3): the same sum in the
    same order, read in place (an output row takes no copies of the bodies' node positions and rotations)."""
    V = 0.0
    for k in range(mass.size):
        i = node[k]
        gx = 0.0
        for r in range(3):
            gx += (x[i, r] + R[i, r, 0] * com[k, 0] + R[i, r, 1] * com[k, 1] + R[i, r, 2] * com[k, 2]) * g[r]
        V -= mass[k] * gx
    return V


@njit(cache=True)
def accumulate(node, R, w, mass, com, inertia, g, load_factor, Mb, bias):
    """Compiled pass over all bodies: adds eq. (1) to the node mass blocks Mb (N,6,6) and the
    gyroscopic force (2) minus load_factor times the weight to the node wrenches bias (N,6).
    R (N,3,3), w (N,3): rotations and angular velocities of the nodes."""
    cg = np.empty(3)
    Jg = np.empty((3, 3))
    T = np.empty((3, 3))
    wc = np.empty(3)
    wwc = np.empty(3)
    Jw = np.empty(3)
    for k in range(node.size):
        i = node[k]
        m = mass[k]
        for r in range(3):
            cg[r] = R[i, r, 0] * com[k, 0] + R[i, r, 1] * com[k, 1] + R[i, r, 2] * com[k, 2]
        for r in range(3):
            for c in range(3):
                T[r, c] = inertia[k, r, 0] * R[i, c, 0] + inertia[k, r, 1] * R[i, c, 1] + inertia[k, r, 2] * R[i, c, 2]
        for r in range(3):
            for c in range(3):
                Jg[r, c] = R[i, r, 0] * T[0, c] + R[i, r, 1] * T[1, c] + R[i, r, 2] * T[2, c]
        # mass blocks: [[m I, -m [c]x], [m [c]x, Jg - m [c]x [c]x]];  [c]x[c]x = c c^T - |c|^2 I
        c2 = cg[0] * cg[0] + cg[1] * cg[1] + cg[2] * cg[2]
        for r in range(3):
            Mb[i, r, r] += m
            for c in range(3):
                Mb[i, 3 + r, 3 + c] += Jg[r, c] - m * (cg[r] * cg[c] - (c2 if r == c else 0.0))
        for r in range(3):  # -m [c]x above, its transpose m [c]x below: row r holds c[r2] at r1, -c[r1] at r2
            r1, r2 = (r + 1) % 3, (r + 2) % 3
            Mb[i, r, 3 + r1] += m * cg[r2]
            Mb[i, r, 3 + r2] -= m * cg[r1]
            Mb[i, 3 + r1, r] += m * cg[r2]
            Mb[i, 3 + r2, r] -= m * cg[r1]
        # gyroscopic (2) and weight
        w0, w1, w2 = w[i, 0], w[i, 1], w[i, 2]
        wc[0], wc[1], wc[2] = w1 * cg[2] - w2 * cg[1], w2 * cg[0] - w0 * cg[2], w0 * cg[1] - w1 * cg[0]
        wwc[0], wwc[1], wwc[2] = w1 * wc[2] - w2 * wc[1], w2 * wc[0] - w0 * wc[2], w0 * wc[1] - w1 * wc[0]
        for r in range(3):
            Jw[r] = Jg[r, 0] * w0 + Jg[r, 1] * w1 + Jg[r, 2] * w2
        f0, f1, f2 = load_factor * m * g[0], load_factor * m * g[1], load_factor * m * g[2]
        bias[i, 0] += m * wwc[0] - f0
        bias[i, 1] += m * wwc[1] - f1
        bias[i, 2] += m * wwc[2] - f2
        bias[i, 3] += m * (cg[1] * wwc[2] - cg[2] * wwc[1]) + w1 * Jw[2] - w2 * Jw[1] - (cg[1] * f2 - cg[2] * f1)
        bias[i, 4] += m * (cg[2] * wwc[0] - cg[0] * wwc[2]) + w2 * Jw[0] - w0 * Jw[2] - (cg[2] * f0 - cg[0] * f2)
        bias[i, 5] += m * (cg[0] * wwc[1] - cg[1] * wwc[0]) + w0 * Jw[1] - w1 * Jw[0] - (cg[0] * f1 - cg[1] * f0)


#: the registered instance (flexmb.elements.FAMILIES["body"])
FAMILY = RigidBodies()
