"""The couplings' begin and end of a step, compiled, for the compiled run (issue 38: closed loops at tree
speed; flexmb/solvers/element_run.py), after the rigid cuts' (flexmb/solvers/cut_projection.py) and the
actuators' (flexmb/solvers/actuator_projection.py), in the assembler's family order.

A step of a model with couplings (elements/coupling.py; docs/coupling.md) starts with the rigid couplings'
penalty factor for the step size and the first-iterate phase, the elastic ones' accepted phase
(Couplings.begin_step, (C13)); it ends, where the model has rigid couplings, with their forces stored as
multipliers, then the velocities and the accelerations projected onto Φ_q u = 0 and Φ_q u̇ = 0 (Φ is
linear in the coordinates) in the metric of the Newton factor or of M̄ + β'K̄_c, the multipliers taking
the acceleration projection's impulse (C15), up to three passes each (Couplings.end_step).
:func:`begin_couplings` and :func:`end_couplings` do that arithmetic in the same operations and order:
the rates Φ_q v and the products Φ_q,fᵀ f of elements/coupling_kernels.py (coupling_rates,
rows_transpose_times: the Python family's too) and the solves of cut_projection.projection_solve. Then
the couplings are evaluated at the projected state (Couplings.evaluate at newton_loop.accept's ``ev1``):
their dissipated power c ġ² for the step's power, and the kinematics at the projected velocities again
for the families evaluated after them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.coupling import CouplingData
from flexmb.elements.coupling_kernels import LAM, N_STATE, coupling_forces, coupling_rates, rows_transpose_times
from flexmb.elements.rigid_cut_kernels import ESCALATION, KAPPA, PHASE, PREV, SMAX, S
from flexmb.engine.kinematics import _forward
from flexmb.model import Model
from flexmb.solvers.cut_projection import projection_solve
from flexmb.solvers.tree_step import _absmax

__all__ = ["CouplingWork", "coupling_work", "begin_couplings", "end_couplings"]


class CouplingWork(NamedTuple):
    """Arrays of the couplings' begin and end of step in one compiled call: the state after the last step
    taken and at the current step's end (n, N_STATE), the rigid couplings' indices (n_rigid,), each
    coordinate's position among the free ones or -1 (n_u,), the weights β'α, rates and forces of the rigid
    ones (n_rigid,), node wrenches (N+1, 6) for the evaluation at the projected state; ``elastic``: whether
    they project with the projection factor (coupling._elastic)."""

    accepted: np.ndarray
    state: np.ndarray
    rig: np.ndarray
    pos: np.ndarray
    weights: np.ndarray
    rates: np.ndarray
    forces: np.ndarray
    wrenches: np.ndarray
    elastic: bool


def coupling_work(model: Model, data: CouplingData, free: np.ndarray, elastic: bool, accepted: np.ndarray) -> CouplingWork:
    """New CouplingWork for a call: the couplings' state ``accepted`` at its start, the free coordinates ``free``."""
    pos = np.full(model.n_u, -1, dtype=np.int64)
    pos[free] = np.arange(free.size)
    rig = np.flatnonzero(np.asarray(data.rigid, dtype=bool)).astype(np.int64)
    return CouplingWork(np.array(accepted, dtype=float).reshape(data.n, N_STATE), np.empty((data.n, N_STATE)), rig, pos,
                        np.empty(rig.size), np.empty(rig.size), np.empty(rig.size), np.zeros((model.n_nodes + 1, 6)),
                        bool(elastic))


@njit(cache=True)
def begin_couplings(work, rigid, bp, cst) -> None:
    """Couplings.begin_step into ``cst``: the state of the last step taken with the rigid couplings' penalty
    factor S = κ / β' (0 for the elastic ones), SMAX = ESCALATION S, no previous gap, the rigid ones' first-iterate
    phase and the elastic ones' accepted phase (C13)."""
    for e in range(cst.shape[0]):
        for j in range(cst.shape[1]):
            cst[e, j] = work.accepted[e, j]
        s = KAPPA / bp if rigid[e] else 0.0
        cst[e, S] = s
        cst[e, SMAX] = ESCALATION * s
        cst[e, PREV] = np.inf
        cst[e, PHASE] = 0.0 if rigid[e] else -1.0


@njit(cache=True)
def _project(cp, work, cwork, free, v, gp, bp, matrix, with_lam) -> bool:
    """Up to three passes of v_f ← v_f - S⁻¹ Φ_q,fᵀ (β'α Φ_q v) (C15); with ``with_lam`` the multipliers of the
    rigid couplings in work.state take each pass's impulse (AL9). False where a factorization failed."""
    ua, ub, ratio = cp[2], cp[3], cp[4]
    rig, c, f, w = work.rig, work.rates, work.forces, work.weights
    for _ in range(3):
        coupling_rates(v, ua, ub, ratio, rig, c)
        if _absmax(c) <= 1e-14 * (_absmax(v) + 1.0):
            break
        for i in range(rig.size):
            f[i] = w[i] * c[i]
        rows_transpose_times(ua, ub, ratio, rig, work.pos, f, cwork.rhs)
        if not projection_solve(cwork, gp, bp, matrix, work.elastic):
            return False
        for j in range(free.size):
            v[free[j]] = v[free[j]] - cwork.rhs[j]
        if with_lam:
            coupling_rates(v, ua, ub, ratio, rig, c)
            for i in range(rig.size):
                work.state[rig[i], LAM] = work.state[rig[i], LAM] + w[i] * c[i]
    return True


@njit(cache=True)
def end_couplings(tree, cp, cout, work, cwork, free, state, gp, bp, matrix, threads) -> bool:
    """Couplings.end_step at the converged iterate (the couplings' outputs ``cout`` of element_newton_step;
    ``cp`` their arrays, element_families.coupling_arrays) of ``state`` = (q, balls, u, u̇), after the rigid cuts'
    and actuators' (their buffers ``cwork`` serve here too): work.state = the iterate's next state, and with rigid
    couplings their multipliers the forces, every coupling's phase the accepted one, u and u̇ projected (C15) in
    place, the kinematics at the projected u into cwork.kin; then the couplings evaluated at the projected state
    into ``cout`` (their dissipated power for the step's). ``matrix`` as end_cuts takes it. False where a
    factorization failed."""
    st = work.state
    n = st.shape[0]
    if n == 0:
        return True
    q, balls, u, udot = state
    force, nxt, alpha_mat = cout[3], cout[9], cout[11]
    for e in range(n):
        for j in range(N_STATE):
            st[e, j] = nxt[e, j]
    rig = work.rig
    if rig.size:
        rigid = cp[8]
        for e in range(n):
            st[e, LAM] = force[e] if rigid[e] else 0.0
            st[e, PHASE] = -1.0
        for i in range(rig.size):
            work.weights[i] = bp * alpha_mat[rig[i]]  # the step's last factor's penalties
        if not _project(cp, work, cwork, free, u, gp, bp, matrix, False):
            return False
        if not _project(cp, work, cwork, free, udot, gp, bp, matrix, True):
            return False
        k2 = cwork.kin  # forward_kinematics at the projected velocities (the evaluation ev1 after the step)
        k2[5][:] = 0.0
        _forward(tree, q, balls, u, k2, threads[1])
    qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes = cp[:10]
    lever = cp[18]
    w = work.wrenches
    w[:] = 0.0
    G, g, gdot, f, lam, alpha, energy, power, ell = cout[0], cout[1], cout[2], cout[3], cout[4], cout[5], cout[6], cout[7], \
        cout[12]
    coupling_forces(q, u, (qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes, lever), st, G, w,
                    (g, gdot, f, lam, alpha, energy, power, ell))
    return True
