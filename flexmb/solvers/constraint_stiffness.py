"""The constraint rows of rigid cuts, prescribed-length actuators and rigid couplings as a matrix, their
forces' generalized force and its geometric stiffness (docs/modal.md §1, eqs. (MO1)-(MO4)): what the
linearised (modal) analysis of a constrained mechanism and the static Newton tangent of a large
constrained model need beyond the assembled element stiffness.

* :func:`constraint_matrix`: G (n_c, n_f), the held rows Φ_q over the free coordinates (MO1), rows that no
  free coordinate moves left out (as (ST6): the out-of-plane rows of a planar loop);
* :func:`constraint_force`: g(q) = Σ Bᵀ G_eᵀ f, the generalized force of constraint forces f held fixed (MO2);
* :func:`geometric_stiffness`: K_geo = ∂g/∂q at fixed f (MO3), central differences along the Lie-group
  retraction, each needing only the kinematics and the constrained families' rows (no element forces);
  optionally with the stiffness of the rigid bodies' weights and the nodal loads (MO4), which the
  assembled element tangent does not have;
* :func:`static_tangent`: the full derivative ∂r₀/∂q of the static residual without the constraints (MO9),
  sparse, by central differences grouped over columns whose rows do not overlap (MO10), checked along one
  direction (MO11), the beams' consistent tangent assembled and their elastic wrenches held in the
  differences: the stiffness of the elements, the joint springs, and the geometric stiffness of the
  weights, the loads and the preloaded elements, which the assembled tangent leaves out.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import scipy.sparse as sp

from flexmb.elements import loads as load_kernels
from flexmb.engine.assembly import Assembler, Evaluation, _add_blocks, _BlockWeights
from flexmb.engine.kinematics import KinematicsBuffers
from flexmb.model import Model
from flexmb.solvers.statics_constraints import ROW_CUTOFF, StaticConstraints, _rows, _scales
from flexmb.state import State

__all__ = ["ASSEMBLED", "CHECK_TOL", "ConstraintMatrix", "FD_STEP", "StaticTangent", "constraint_force", "constraint_matrix",
           "geometric_stiffness", "static_tangent"]

#: (MO3): the central-difference step of the geometric stiffness along the retraction [rad or m]: its
#: truncation error is of order FD_STEP² of the curvature terms, its round-off ε / FD_STEP of the forces
FD_STEP = 1e-6
#: (MO10): element families whose consistent tangent (their ``exact_tangent`` blocks) is the whole derivative of
#: their node wrenches: assembled, their wrenches held fixed in the differences (a fine beam mesh's axial
#: stiffness would bury the prestress's in the differences' truncation error, of order (h / element length)²)
ASSEMBLED = ("beam",)
#: (MO11): the directional check of the grouped tangent: a difference above this fraction of |K| |v| means an
#: entry outside the assumed pattern, and the tangent is formed again column by column
CHECK_TOL = 1e-6


@dataclass
class ConstraintMatrix:
    """The held constraint rows over the free coordinates (MO1): ``G`` (n_c, n_f); ``index`` (n_c, 2): each
    row's family number (in ``StaticConstraints.families`` order) and flat position in that family's force
    array (n_el × r); ``shapes``: each family's force array shape (n_el, r)."""

    G: np.ndarray
    index: np.ndarray
    shapes: tuple[tuple[int, int], ...]

    def forces(self, lam: np.ndarray) -> list[np.ndarray]:
        """The family force arrays (n_el, r) of the row multipliers ``lam`` (n_c), zero on rows left out."""
        out = [np.zeros(s) for s in self.shapes]
        for (fam, pos), v in zip(self.index, lam):
            out[fam].reshape(-1)[pos] = v
        return out

    def multipliers(self, forces: list[np.ndarray]) -> np.ndarray:
        """The row multipliers (n_c) read from family force arrays (the inverse of :meth:`forces`)."""
        return np.array([forces[fam].reshape(-1)[pos] for fam, pos in self.index], dtype=float)


def constraint_matrix(cons: StaticConstraints, ev: Evaluation, free: np.ndarray) -> ConstraintMatrix:
    """(MO1): the rows Φ_q over the coordinates ``free`` of every held row of ``cons``' families at ``ev``,
    a row kept where its squared gradient, weighted by its family's row scale, is above ROW_CUTOFF of its
    element's largest (the rule of (ST6))."""
    rows, index, shapes = [], [], []
    for fam, ((f, d, prep), c) in enumerate(zip(cons.families, cons.jacobian(ev, free))):
        held = _rows(f.name, cons.model, d, prep, ev.elements[f.name]).held
        weight = np.where(held, np.einsum("erj,erj->er", c, c) * _scales(f.name, d), 0.0)
        ok = weight > ROW_CUTOFF * weight.max(axis=1, initial=0.0)[:, None]
        shapes.append(held.shape)
        for e, r in zip(*np.nonzero(ok)):
            rows.append(c[e, r])
            index.append((fam, e * held.shape[1] + r))
    G = np.array(rows, dtype=float).reshape(len(rows), free.size)
    return ConstraintMatrix(G, np.array(index, dtype=int).reshape(-1, 2), tuple(shapes))


def constraint_force(model: Model, asm: Assembler, cons: StaticConstraints, st: State, forces: list[np.ndarray],
                     buffers: KinematicsBuffers | None = None, load_factor: float | None = None) -> np.ndarray:
    """(MO2): g(q) = Σ_e B(q)ᵀ G_e(q)ᵀ f_e (n_u) at ``st`` for the family force arrays ``forces`` (n_el, r)
    held fixed: the kinematics of ``st`` and the constrained families' rows only. With ``load_factor``, plus
    the generalized force of the rigid bodies' and particles' weights (their node-mass families) and of the
    nodal loads at that factor, Bᵀ (w_g − f_ext) (MO4), at rest (u = 0)."""
    kin = (buffers or KinematicsBuffers(model, asm.pattern)).forward(st)
    N = model.n_nodes
    w = np.zeros((N + 1, 6))
    Mb = np.zeros((N, 6, 6))
    scratch = np.zeros((N + 1, 6))
    if load_factor is not None:
        for f, d, prep in asm.node_mass:
            f.evaluate(model, d, prep, st, kin, load_factor, Mb, w)
        if model.loads:
            w[:N] -= load_factor * load_kernels.nodal_wrenches(model.loads, st.t, kin.R, N)
    for (f, d, prep), fr in zip(cons.families, forces):
        fe = f.evaluate(model, d, prep, st, kin, 1.0, Mb, scratch)
        rows = _rows(f.name, model, d, prep, fe)
        wn = np.einsum("erk,er->ek", rows.G, np.where(rows.held, fr, 0.0))  # (n_el, 6m)
        m = rows.nodes.shape[1]
        np.add.at(w, rows.nodes.reshape(-1), wn.reshape(-1, m, 6).reshape(-1, 6))
    return kin.pattern.project(kin.S, w[:N], kin.x)


def geometric_stiffness(model: Model, asm: Assembler, cons: StaticConstraints, st: State, forces: list[np.ndarray],
                        free: np.ndarray, step: float = FD_STEP, load_factor: float | None = None) -> np.ndarray:
    """(MO3): K_geo = ∂g/∂q (n_f, n_f) on the coordinates ``free`` at ``st`` for the forces ``forces`` held
    fixed, by central differences along the retraction (2 n_f evaluations of (MO2)); columns of coordinates
    that move no constrained node are zero without being computed. With ``load_factor``: plus the stiffness
    of the weights of the rigid bodies and particles and of the nodal loads (MO4), every column computed."""
    buffers = KinematicsBuffers(model, asm.pattern)
    loaded = load_factor is not None and (bool(asm.node_mass) or bool(model.loads))
    K = np.zeros((free.size, free.size))
    if not (cons.families or loaded):
        return K
    moving = np.ones(free.size, dtype=bool) if loaded else _moving(model, asm, cons, st, free)
    dq = np.zeros(model.n_u)
    for j in np.nonzero(moving)[0]:
        dq[free[j]] = step
        gp = constraint_force(model, asm, cons, st.retract(model, dq), forces, buffers, load_factor)[free]
        dq[free[j]] = -step
        gm = constraint_force(model, asm, cons, st.retract(model, dq), forces, buffers, load_factor)[free]
        dq[free[j]] = 0.0
        K[:, j] = (gp - gm) / (2.0 * step)
    return K


def _moving(model: Model, asm: Assembler, cons: StaticConstraints, st: State, free: np.ndarray) -> np.ndarray:
    """Which coordinates of ``free`` move a node of a constrained element (its twist nonzero there)."""
    ev = asm.evaluate(st)
    nodes = np.unique(np.concatenate([
        _rows(f.name, model, d, prep, ev.elements[f.name]).nodes.reshape(-1) for f, d, prep in cons.families]))
    nodes = nodes[nodes < model.n_nodes]
    out = np.zeros(free.size, dtype=bool)
    u = np.zeros(model.n_u)
    for j, k in enumerate(free):
        u[k] = 1.0
        out[j] = bool(np.any(ev.twists(u)[nodes] != 0.0))
        u[k] = 0.0
    return out


@dataclass
class StaticTangent:
    """The static tangent of :func:`static_tangent`: ``K`` (n_f, n_f) sparse, ∂r₀/∂q on the free coordinates
    (MO9); ``groups`` the column groups differenced together (MO10), two residual evaluations each;
    ``check`` the relative difference of the directional check (MO11); ``dense``: whether the check failed
    and every column was differenced alone over all rows."""

    K: sp.csc_matrix
    groups: int
    check: float
    dense: bool


def static_tangent(model: Model, asm: Assembler, st: State, free: np.ndarray, load_factor: float = 1.0,
                   step: float = FD_STEP) -> StaticTangent:
    """(MO9)-(MO11): K = ∂r₀/∂q (n_f, n_f) on the coordinates ``free`` at ``st`` (taken as it is: pass a state at
    rest), r₀ = eq. (1) of flexmb/engine/assembly.py at u̇ = 0 with gravity and the loads at ``load_factor``:
    every force the residual has (elements, joint springs, weights, nodal loads) with all its stiffness.
    The families of ASSEMBLED add their consistent tangent Bᵀ K_e B; the rest by central differences along the
    retraction of r₀ with those families' wrenches held fixed (their turning with the tree stays in it), the
    step ``step`` rad for a rotation and ``step`` × the model's size for a translation (MO10), grouped over
    the columns of the iteration matrix's structural pattern whose rows do not overlap; one directional
    difference checks the result (MO11), and where it differs by more than CHECK_TOL the tangent is formed
    column by column over all rows instead."""
    P = sp.csc_matrix(asm.structural_pattern(free), dtype=bool)
    P.sort_indices()
    h = np.where(model.rotation_u[free], step, step * model.size)
    held = _Held(model, asm, st, load_factor)
    groups = _column_groups(P)
    n_groups = int(groups.max(initial=-1)) + 1
    data = np.zeros(P.nnz)
    col = np.repeat(np.arange(free.size), np.diff(P.indptr))
    for g in range(n_groups):
        cols = np.flatnonzero(groups == g)
        D = _difference(model, held, st, free, cols, h[cols])
        pos = np.flatnonzero(groups[col] == g)
        data[pos] = D[P.indices[pos]] / h[col[pos]]
    K = sp.csc_matrix((data, P.indices, P.indptr), shape=P.shape) + held.assembled(free)
    check = _check(model, held, st, free, K, h, step)
    if check <= CHECK_TOL:
        return StaticTangent(K, n_groups, check, False)
    full = np.column_stack([_difference(model, held, st, free, np.array([j]), h[j:j + 1]) / h[j]
                            for j in range(free.size)]) if free.size else np.zeros((0, 0))
    K = sp.csc_matrix(full) + held.assembled(free)
    return StaticTangent(K, free.size, _check(model, held, st, free, K, h, step), True)


class _Held:
    """r₀ with the wrenches of the families of ASSEMBLED held at those of ``st`` (MO10), and their assembled
    consistent tangent."""

    def __init__(self, model: Model, asm: Assembler, st: State, load_factor: float) -> None:
        self.model, self.asm, self.load_factor = model, asm, load_factor
        self.families = tuple(a for a in asm.with_blocks if a[0].name in ASSEMBLED)
        self.ev = asm.evaluate(st, load_factor=load_factor)
        self.w0 = self.wrenches(st, self.ev.kin)

    def wrenches(self, st: State, kin) -> np.ndarray:
        """The node wrenches (N, 6) of the families of ASSEMBLED at ``st`` (kinematics ``kin``) without their
        loads (at the load factor 0: a beam's distributed weight, whose stiffness its tangent does not have,
        stays in the differences)."""
        N = self.model.n_nodes
        w = np.zeros((N + 1, 6))
        for f, d, prep in self.families:
            f.evaluate(self.model, d, prep, st, kin, 0.0, np.zeros((N, 6, 6)), w)
        return w[:N]

    def residual(self, st: State, free: np.ndarray) -> np.ndarray:
        """r₀ on ``free`` at ``st``, the families of ASSEMBLED with their wrenches of the base state."""
        ev = self.asm.evaluate(st, load_factor=self.load_factor)
        r = ev.residual(st.udot)
        if self.families:
            r = r - ev.project(self.wrenches(st, ev.kin) - self.w0)
        return r[free]

    def assembled(self, free: np.ndarray) -> sp.csc_matrix:
        """Bᵀ K_e B on ``free`` of the families of ASSEMBLED (their consistent tangent; zero without them)."""
        adders = [partial(_add_blocks, f, self.model, d, prep, self.ev.elements[f.name],
                           _BlockWeights(1.0, 0.0, 0.0, False, True))
                  if (f, d, prep) in self.families else None for f, d, prep in self.asm.with_blocks]
        if not self.families:
            return sp.csc_matrix((free.size, free.size))
        return sp.csc_matrix(self.asm.matrices.get(np.asarray(free)).assemble(
            self.asm.matrices.pairs, self.ev.Mb, self.ev.kin, adders, np.zeros(free.size), False))


def _difference(model: Model, held: _Held, st: State, free: np.ndarray, cols: np.ndarray, h: np.ndarray) -> np.ndarray:
    """(MO10): [r₀(q ⊕ d) − r₀(q ⊕ −d)] / 2, d = Σ h_j e_j over the free coordinates ``cols`` (the families of
    ASSEMBLED held)."""
    dq = np.zeros(model.n_u)
    dq[free[cols]] = h
    return 0.5 * (held.residual(st.retract(model, dq), free) - held.residual(st.retract(model, -dq), free))


def _check(model: Model, held: _Held, st: State, free: np.ndarray, K: sp.csc_matrix, h: np.ndarray,
           step: float) -> float:
    """(MO11): |K_d v − ∂r₀/∂q v| / (|K_d| |v|) along v = ±h / step (a fixed sign pattern), K_d the differenced
    part of ``K`` (without the assembled families' tangent), the derivative by one central difference of step
    ``step``; 0 for a tangent without entries."""
    if not free.size:
        return 0.0
    Kd = K - held.assembled(free)
    v = np.where(np.random.default_rng(0).random(free.size) < 0.5, -1.0, 1.0) * h / step
    d = _difference(model, held, st, free, np.arange(free.size), step * v) / step
    scale = float(np.max(abs(Kd) @ np.abs(v), initial=0.0))
    return float(np.abs(Kd @ v - d).max() / scale) if scale > 0.0 else float(np.abs(d).max() > 0.0)


def _column_groups(P: sp.csc_matrix) -> np.ndarray:
    """(MO10): a group number per column of the pattern ``P`` (greedy, in column order) such that no two
    columns of a group have a row in common."""
    C = sp.csc_matrix((P.T.astype(np.int64) @ P.astype(np.int64)) != 0)
    out = np.full(P.shape[1], -1)
    for j in range(P.shape[1]):
        nb = out[C.indices[C.indptr[j]:C.indptr[j + 1]]]
        used = np.zeros(P.shape[1] + 1, dtype=bool)
        used[nb[nb >= 0]] = True
        out[j] = int(np.argmin(used))
    return out
