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
  assembled element tangent does not have.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from flexmb.elements import loads as load_kernels
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.engine.kinematics import KinematicsBuffers
from flexmb.model import Model
from flexmb.solvers.statics_constraints import ROW_CUTOFF, StaticConstraints, _rows, _scales
from flexmb.state import State

__all__ = ["ConstraintMatrix", "FD_STEP", "constraint_force", "constraint_matrix", "geometric_stiffness"]

#: (MO3): the central-difference step of the geometric stiffness along the retraction [rad or m]: its
#: truncation error is of order FD_STEP² of the curvature terms, its round-off ε / FD_STEP of the forces
FD_STEP = 1e-6


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
