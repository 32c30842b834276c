"""Bushing: a 6x6 linear spring–damper between two node frames (an elastic cut joint), the
``"bushing"`` element family.

The bushing frame (point P, axes E, given globally in the assembly configuration) is
attached to node a (offset s_a, axes E_a in a's axes) and to node b (s_b, E_b). In the current
configuration A = R_a E_a at p_a = x_a + R_a s_a and B = R_b E_b at p_b. Deformations:

    delta = A^T (p_b - p_a)                       translations, bushing axes           (1)
    phi   = log(A^T B)                            rotations, all three constrained      (2a)
    phi   = A^T (a_k x b_k)                       rotation about axis k free (revolute) (2b)
    phi   = 0                                     all rotations free (spherical)        (2c)

Potential V = 1/2 d^T K d with d = (delta, phi); dissipation force C d'. With G = dd/dX the
exact derivative with respect to the node motions X = (x_a, theta_a, x_b, theta_b) (global
virtual rotations), the node wrenches are -G^T (K d + C d') — conservative for any K — and
the tangent used in Newton is G^T K G, G^T C G (material part; the geometric part of a stiff
bushing is negligible and is dropped to keep the iteration matrix positive definite).

As an element family (flexmb.elements): two nodes per element (node a may be ground), a loop cut
(``cut``: left out of the rigid-equivalent model of flexmb.analysis.rigid), blocks
ck G^T K G + cc G^T C G over its two nodes, no mass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements.family import GROUND, ElementData, ElementFamily, FamilyEvaluation, NodeTable, frozen_arrays, listing
from flexmb.rotations import cross, jl_inv, logm, skew

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import BushingSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["BushingData", "BushingEvaluation", "Bushings", "FAMILY", "deformation", "forces"]

FULL, FREE_X, FREE_Y, FREE_Z, SPHERICAL = -1, 0, 1, 2, 3


def deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode):
    """Deformations d (n,6) by eq. (1)–(2) and their derivative G (n,6,12)."""
    n = xa.shape[0]
    A = Ra @ Ea
    B = Rb @ Eb
    ra = np.einsum("nij,nj->ni", Ra, sa)
    rb = np.einsum("nij,nj->ni", Rb, sb)
    r = xb + rb - xa - ra
    At = np.swapaxes(A, 1, 2)
    d = np.zeros((n, 6))
    d[:, :3] = np.einsum("nij,nj->ni", At, r)
    G = np.zeros((n, 6, 12))
    G[:, :3, 0:3] = -At
    G[:, :3, 3:6] = At @ skew(r + ra)
    G[:, :3, 6:9] = At
    G[:, :3, 9:12] = -At @ skew(rb)
    full = mode == FULL
    if np.any(full):
        rel = At[full] @ B[full]
        phi = logm(rel)
        J = jl_inv(phi) @ At[full]
        d[full, 3:] = phi
        G[full, 3:, 3:6] = -J
        G[full, 3:, 9:12] = J
    axis = (mode >= 0) & (mode <= 2)
    if np.any(axis):
        k = mode[axis]
        idx = np.arange(k.size)
        ak = A[axis][idx, :, k]
        bk = B[axis][idx, :, k]
        w = cross(ak, bk)
        At_ = At[axis]
        d[axis, 3:] = np.einsum("nij,nj->ni", At_, w)
        G[axis, 3:, 3:6] = At_ @ (skew(bk) @ skew(ak) + skew(w))
        G[axis, 3:, 9:12] = -At_ @ (skew(ak) @ skew(bk))
    return d, G


def forces(xa, Ra, xb, Rb, Va, Vb, sa, Ea, sb, Eb, mode, K, C):
    """Node wrenches on a and b (n,6 each), tangents G^T K G and G^T C G (n,12,12), strain
    energy (n,) and dissipated power (n,)."""
    d, G = deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode)
    V = np.concatenate([Va, Vb], axis=1)
    ddot = np.einsum("nij,nj->ni", G, V)
    fk = np.einsum("nij,nj->ni", K, d)
    fc = np.einsum("nij,nj->ni", C, ddot)
    gen = -np.einsum("nji,nj->ni", G, fk + fc)
    Gt = np.swapaxes(G, 1, 2)
    energy = 0.5 * np.einsum("ni,ni->n", d, fk)
    power = np.einsum("ni,ni->n", ddot, fc)
    return gen[:, :6], gen[:, 6:], Gt @ K @ G, Gt @ C @ G, energy, power


@dataclass(frozen=True, eq=False)
class BushingData(ElementData):
    """Compiled bushings (``Model.elements["bushing"]``)."""

    a: np.ndarray  # node index of end a, -1 = ground                                   (n_el)
    b: np.ndarray  # node index of end b                                                (n_el)
    sa: np.ndarray  # bushing point rel. to node a, node a axes (global for ground)    (n_el x 3)
    Ea: np.ndarray  # bushing axes (columns) in node a axes                             (n_el x 3 x 3)
    sb: np.ndarray  # bushing point rel. to node b, node b axes                         (n_el x 3)
    Eb: np.ndarray  # bushing axes (columns) in node b axes                             (n_el x 3 x 3)
    mode: np.ndarray  # free rotation: -1 none, 0/1/2 about bushing x/y/z, 3 all        (n_el)
    K: np.ndarray  # stiffness on (translations, rotations), bushing axes               (n_el x 6 x 6)
    C: np.ndarray  # damping on (translations, rotations), bushing axes                 (n_el x 6 x 6)


@dataclass
class BushingEvaluation(FamilyEvaluation):
    """The bushings at one state: tangents G^T K G and G^T C G (n_el, 12, 12) in node twists."""

    K: np.ndarray | None = None
    C: np.ndarray | None = None


class Bushings(ElementFamily):
    """The ``"bushing"`` family (module docstring)."""

    name = "bushing"
    label = "bushing"
    plural = "bushings"
    cut = True
    has_blocks = True
    cell_kind = "bushing"
    drawing_keys = ("bushing_a", "bushing_b")

    def records(self, builder: Any) -> Sequence[BushingSpec]:
        return list(builder.bushings.values())

    def compile(self, records: Sequence[BushingSpec], nodes: NodeTable) -> BushingData:
        """End nodes, attachment offsets and axes in the two node frames, stiffness and damping."""
        n = len(records)
        out = dict(
            names=tuple(s.name for s in records), a=np.zeros(n, int), b=np.zeros(n, int), sa=np.zeros((n, 3)),
            Ea=np.zeros((n, 3, 3)), sb=np.zeros((n, 3)), Eb=np.zeros((n, 3, 3)), mode=np.zeros(n, int),
            K=np.zeros((n, 6, 6)), C=np.zeros((n, 6, 6)),
        )
        for i, s in enumerate(records):
            who = f"bushing '{s.name}'"
            a = nodes.index(s.node_a, who, ground=True)
            b = nodes.index(s.node_b, who)
            P, E = s.point, s.axes
            Xa, Ra = nodes.frame(a)
            Xb, Rb = nodes.frame(b)
            out["a"][i], out["b"][i] = a, b
            out["sa"][i], out["Ea"][i] = Ra.T @ (P - Xa), Ra.T @ E
            out["sb"][i], out["Eb"][i] = Rb.T @ (P - Xb), Rb.T @ E
            out["mode"][i], out["K"][i], out["C"][i] = s.free_rotation, s.stiffness, s.damping
        return BushingData(**frozen_arrays(out))

    def loop_edges(self, data: BushingData) -> list[tuple[str, str, int, int]]:
        return [(n, f"bushing '{n}'", int(a), int(b)) for n, a, b in zip(data.names, data.a, data.b)]

    def element_nodes(self, data: BushingData) -> np.ndarray:
        return np.stack([data.a, data.b], axis=1).astype(np.int64)

    def prepare(self, model: Model, data: BushingData) -> tuple[np.ndarray, np.ndarray]:
        """End node indices with ground as node N (the extra row of the node arrays)."""
        N = model.n_nodes
        return np.where(data.a == GROUND, N, data.a).astype(int), np.asarray(data.b, dtype=int)

    def evaluate(self, model: Model, data: BushingData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> BushingEvaluation:
        """Bushing forces into the node wrenches (as applied forces), tangents and energies."""
        xe = np.concatenate([kin.x, np.zeros((1, 3))])
        Re = np.concatenate([kin.R, np.eye(3)[None]])
        Ve = np.concatenate([kin.V, np.zeros((1, 6))])
        ia, ib = prep
        fa, fb, K, C, energy, power = forces(xe[ia], Re[ia], xe[ib], Re[ib], Ve[ia], Ve[ib], data.sa, data.Ea, data.sb,
                                             data.Eb, data.mode, data.K, data.C)
        np.add.at(w, ia, -fa)
        np.add.at(w, ib, -fb)
        return BushingEvaluation(strain_energy=float(energy.sum()), dissipation=float(power.sum()), K=K, C=C)

    def blocks(self, model: Model, data: BushingData, prep: Any, fe: BushingEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """ck G^T K G + cc G^T C G (no mass; the geometric part is dropped, module docstring)."""
        return ck * fe.K + cc * fe.C

    # ------------------------------------------------------------------ presentation
    def drawing(self, model: Model, data: BushingData) -> dict[str, np.ndarray]:
        """Bushings between two nodes (those to ground are not drawn)."""
        both = data.a != GROUND
        return {"bushing_a": np.asarray(data.a, dtype=np.int64)[both], "bushing_b": np.asarray(data.b, dtype=np.int64)[both]}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        if d["bushing_a"].ndim != 1 or d["bushing_b"].shape != d["bushing_a"].shape:
            return f"drawing 'bushing_b' has shape {d['bushing_b'].shape}, expected ({d['bushing_a'].size},)"
        return ""

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """Node a -> node b of every bushing between two nodes."""
        return np.stack([d["bushing_a"], d["bushing_b"]], axis=1)

    def describe(self, model: Model, data: BushingData, limit: int) -> list[str]:
        return ["bushings:"] + listing([f"  {n}: {'ground' if a < 0 else model.node_names[int(a)]} - "
                                        f"{model.node_names[int(b)]}" for n, a, b in zip(data.names, data.a, data.b)], limit)


#: the registered instance (flexmb.elements.FAMILIES["bushing"])
FAMILY = Bushings()
