"""Linearised analysis: natural frequencies and mode shapes about a state (an equilibrium, or
the current state of a run) from the generalized eigenproblem K̄ φ = ω² M̄ φ on the free
coordinates.

Without rigid constraints K̄ is the full derivative of the static residual (docs/modal.md §3, (MO9)-(MO12)):
the elements' stiffness, the joint springs, and the geometric stiffness of gravity, the loads and the
preloaded elements (the weight's moment turning with a pendulum, a preloaded bushing's), formed sparse by
grouped central differences; the eigenproblem dense for small models, by scipy eigsh (shift-invert about 0)
for large ones.

With rigid cuts, prescribed-length actuators or rigid couplings the constraints are held exactly
(docs/modal.md): the configuration is taken at rest, the multipliers are the constraint forces that
balance the generalized forces there (MO5), the stiffness is that of the static tangent plus the
constraint forces' geometric stiffness (MO3), (MO6), and the eigenproblem is solved on the null space
of the constraint rows (MO7)-(MO8).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse.linalg as spla

from flexmb.engine.assembly import Assembler
from flexmb.errors import SolverError
from flexmb.model import Model
from flexmb.solvers.constraint_stiffness import constraint_matrix, geometric_stiffness, static_tangent
from flexmb.solvers.statics import FD_TANGENT_LIMIT, _fd_tangent, _force_scale
from flexmb.solvers.statics_constraints import HELD, StaticConstraints
from flexmb.state import State

__all__ = ["DENSE_LIMIT", "ConstrainedModes", "constrained_modes", "elastic_modes", "natural_frequencies"]

#: (MO7): singular values of the row-normalized constraint matrix below this fraction of its largest count
#: as zero (a redundant row); a configuration within this of a singular one of its loops is refused
RANK_TOL = 1e-9
#: (MO12): models without rigid constraints of up to this many free coordinates are solved densely
DENSE_LIMIT = 200


def natural_frequencies(model: Model, state: State | None = None, n_modes: int = 6) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_modes`` lowest natural frequencies [Hz] and mode shapes (n_u, n_modes; rows of
    driven coordinates are zero, mass-normalized φᵀ M̄ φ = 1) about ``state`` at rest (default: the initial
    state; its velocities are set to zero). The stiffness is the full derivative of the static residual
    (docs/modal.md §3, (MO9)-(MO12)): the elements', the joint springs', and the geometric stiffness of gravity,
    the loads and the preloaded elements; pass ``static_equilibrium(model).state`` to linearise about the
    equilibrium under the loads. A model with rigid cuts, prescribed-length actuators or rigid couplings is
    linearised with its constraints held (:func:`constrained_modes`, docs/modal.md §2). A frequency is 0 where
    ω² ≤ 0 (an unstable equilibrium). Raises SolverError when more modes are asked than the model has
    degrees of freedom (free coordinates, less the independent constraint rows)."""
    asm = Assembler(model, exact_tangent=True)
    if _held(asm):
        res = constrained_modes(model, state, n_modes)
        return res.frequencies, res.shapes
    w2, shapes = elastic_modes(model, asm, state, n_modes)
    return np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi), shapes


def elastic_modes(model: Model, asm: Assembler, state: State | None, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
    """(MO12): the ``n_modes`` lowest eigenvalues ω² [1/s²] and mass-normalized shapes (n_u, n_modes) of a model
    without rigid constraints about ``state`` at rest: K of :func:`static_tangent` (MO9)-(MO11), M̄ the
    generalized mass; dense (scipy.linalg.eigh) up to DENSE_LIMIT free coordinates, sparse above (eigsh,
    shift-invert about a small negative shift)."""
    st = model.initial_state() if state is None else state.copy()
    st.u[:] = 0.0
    st.udot[:] = 0.0
    free = model.free_u
    if n_modes > free.size or n_modes < 1:
        raise SolverError(f"natural_frequencies: asked for {n_modes} modes of a model with {free.size} free "
                          "coordinates (ask for 1 to that many).")
    K = static_tangent(model, asm, st, free).K
    K = (0.5 * (K + K.T)).tocsc()
    M = asm.mbar(asm.evaluate(st), free)
    M = (0.5 * (M + M.T)).tocsc()
    if free.size <= DENSE_LIMIT or n_modes >= free.size - 1:
        w2, phi = _dense_modes(K.toarray(), M.toarray(), n_modes)
    else:
        sigma = -1e-6 * float(np.abs(K.diagonal()).max(initial=0.0))
        w2, phi = spla.eigsh(K, k=n_modes, M=M, sigma=sigma, which="LM")
    order = np.argsort(w2)
    shapes = np.zeros((model.n_u, n_modes))
    shapes[free] = phi[:, order]
    return w2[order], shapes


def _dense_modes(K: np.ndarray, M: np.ndarray, n_modes: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``n_modes`` lowest of K φ = ω² M φ (symmetric): eigh where M is positive definite; otherwise (a
    coordinate without mass) the finite eigenvalues of the general problem, shapes normalized to φᵀ M φ = 1.
    All eigenvalues are computed (LAPACK's divide and conquer): asking eigh for a subset takes another driver,
    which lost 4e-8 of the swing's ω² of a pendulum of beam elements (its ω² spanning 1e9)."""
    try:
        w2, phi = sla.eigh(K, M)
        return w2[:n_modes], phi[:, :n_modes]
    except sla.LinAlgError:
        w2, phi = sla.eig(K, M)
    ok = np.flatnonzero(np.isfinite(w2))
    if ok.size < n_modes:
        raise SolverError(f"natural_frequencies: the model has {ok.size} coordinates with mass (finite modes), fewer "
                          f"than the {n_modes} modes asked for.")
    ok = ok[np.argsort(w2[ok].real)][:n_modes]
    phi = phi[:, ok].real
    phi /= np.sqrt(np.abs(np.einsum("ik,ij,jk->k", phi, M, phi)))
    return w2[ok].real, phi


@dataclass
class ConstrainedModes:
    """The linearised modes of a constrained model (:func:`constrained_modes`, docs/modal.md).

    ``frequencies`` [Hz] (n_modes; 0 where ω² ≤ 0: an unstable or neutral mode), ``omega2`` the eigenvalues
    ω² [1/s²] as solved (negative: the equilibrium is unstable in that mode), ``shapes`` (n_u, n_modes) the
    mode shapes on all coordinates (driven ones zero), mass-normalized (φᵀ M̄ φ = 1); ``dof`` the degrees of
    freedom left by the constraints (MO7); ``constraint_rows`` the independent rows held; ``multipliers`` the
    constraint forces by family (MO5), arrays as the families' force arrays (a rigid cut's (n_el, 6) in its
    axes' rows, an actuator's tension, a coupling's f); ``imbalance`` the generalized force those forces leave
    unbalanced, over the force scale (MO5): about 0 at a static equilibrium, larger about a state that is not
    one; ``tangent``: "differences" (column by column) or "grouped" (MO6), (MO10)."""

    frequencies: np.ndarray
    omega2: np.ndarray
    shapes: np.ndarray
    dof: int
    constraint_rows: int
    multipliers: dict[str, np.ndarray]
    imbalance: float
    tangent: str


def constrained_modes(model: Model, state: State | None = None, n_modes: int = 6) -> ConstrainedModes:
    """The ``n_modes`` lowest modes of ``model`` (with rigid cuts, prescribed-length actuators or rigid
    couplings; any other model too: then G is empty and N the identity) about ``state`` at rest (default:
    the initial state; velocities are set to zero), its constraints held exactly (docs/modal.md §2): the
    multipliers λ that balance the generalized forces in the least-squares sense (MO5), the stiffness
    K = ∂r₀/∂q + K_geo(λ) (MO6), r₀ the static residual without the constraints. ∂r₀/∂q is formed by central
    differences (the joint springs, the elements' stiffness, gravity's, the loads' and the preloaded elements'
    geometric stiffness), column by column up to FD_TANGENT_LIMIT free coordinates, above it grouped over
    columns whose rows do not overlap (:func:`static_tangent`, (MO9)-(MO11)). K is reduced to the
    null space N of the constraint rows G (MO7) and solved densely, Nᵀ K N φ = ω² Nᵀ M̄ N φ (MO8).

    Raises SolverError when the constraints leave no degree of freedom (a pendulum held by an actuator:
    its rows fix every free coordinate) or fewer than ``n_modes``."""
    asm = Assembler(model, exact_tangent=True)
    cons = StaticConstraints(model, asm)
    st = model.initial_state() if state is None else state.copy()
    st.u[:] = 0.0
    st.udot[:] = 0.0
    free = model.free_u
    off = cons.switched_off(st)
    ev0 = asm.evaluate(off)
    r0 = ev0.residual(off.udot)[free]
    cm = constraint_matrix(cons, ev0, free)
    G = cm.G
    # (MO5): the constraint forces balancing r0 (least squares; the minimum-norm ones over redundant rows)
    lam = np.linalg.lstsq(G.T, -r0, rcond=None)[0] if G.shape[0] else np.zeros(0)
    scale = max(_force_scale(ev0), float(np.abs(G.T @ lam).max(initial=0.0)), 1e-300)
    imbalance = float(np.abs(r0 + G.T @ lam).max(initial=0.0)) / scale
    # (MO7): the null space of the rows, each scaled to unit length (translations and rotations alike)
    norms = np.linalg.norm(G, axis=1)
    Gn = G / norms[:, None] if G.shape[0] else G
    N = sla.null_space(Gn, rcond=RANK_TOL) if G.shape[0] else np.eye(free.size)
    dof = N.shape[1]
    rank = free.size - dof
    names = [f"{f.label} '{d.names[0]}'" + (" ..." if d.n > 1 else "") for f, d, _ in cons.families]
    if dof == 0:
        raise SolverError(f"natural_frequencies: the constraints ({', '.join(names)}) hold all {free.size} free "
                          "coordinates of the model: it has no degree of freedom and no modes. Make a constraint "
                          "elastic (a spring-damper for an actuator, a bushing for a rigid cut, a coupling's "
                          "stiffness) to see its stiffness's mode.")
    if n_modes > dof:
        raise SolverError(f"natural_frequencies: asked for {n_modes} modes of a model with {dof} degrees of freedom "
                          f"({free.size} free coordinates, {rank} independent constraint rows of {', '.join(names)}).")
    forces = cm.forces(lam)
    # (MO6): the static tangent without the constraints (all of it, gravity's, the loads' and the preloaded
    # elements' stiffness included), and the constraint forces' geometric stiffness (MO3)
    grouped = free.size > FD_TANGENT_LIMIT
    if grouped:  # central differences grouped over columns (MO9)-(MO11)
        K0 = static_tangent(model, asm, off, free).K.toarray()
    else:  # central differences column by column
        K0 = _fd_tangent(model, asm, off, 1.0, free)
    K = K0 + geometric_stiffness(model, asm, cons, off, forces, free)
    tangent = "grouped" if grouped else "differences"
    M = asm.mbar(ev0, free).toarray()
    # (MO8): the reduced eigenproblem (symmetric parts: K is symmetric at an equilibrium, up to differences)
    Kn, Mn = N.T @ K @ N, N.T @ M @ N
    w2, phi = sla.eigh(0.5 * (Kn + Kn.T), 0.5 * (Mn + Mn.T), subset_by_index=[0, n_modes - 1])
    shapes = np.zeros((model.n_u, n_modes))
    shapes[free] = N @ phi
    mult = {f.name: fr for (f, _, _), fr in zip(cons.families, forces)}
    return ConstrainedModes(np.sqrt(np.clip(w2, 0, None)) / (2 * np.pi), w2, shapes, dof, rank, mult, imbalance,
                            tangent)


def _held(asm: Assembler) -> bool:
    """Whether the model has rigid cuts, prescribed-length actuators or rigid couplings (without refusing
    other families with an internal state, as StaticConstraints does)."""
    return any(f.name in HELD and d.n and (f.name != "coupling" or bool(np.any(d.rigid))) for f, d, _ in asm.families)
