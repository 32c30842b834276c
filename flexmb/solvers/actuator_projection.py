"""The prescribed-length actuators' begin and end of a step, compiled, for the compiled run (issue 38:
closed loops at tree speed; flexmb/solvers/element_run.py), beside the rigid cuts'
(flexmb/solvers/cut_projection.py).

A step of a model with actuators (elements/actuator.py; docs/actuator.md) starts with their penalty
factor for the step size (Actuators.begin_step, (A6) with (AL7), (AL11) of docs/rigid_cut.md) and the
prescribed lengths (L, L', L'') at the step's end (what ElementStep.begin sets per step:
actuator_step.set_targets); it ends, after Newton and after the rigid cuts' end of step (the
assembler's family order), with the actuator forces stored as multipliers (AL8), the velocities
projected mass-orthogonally onto G V = L' and the accelerations onto G a + Ġ V = L'' with the
multipliers' update (A8), (AL9), up to three passes each (Actuators.end_step), the kinematics taken
again at the projected velocities in between. :func:`begin_actuators` and :func:`end_actuators` do
that arithmetic in the same operations and order: the length rates (actuator_kernels.length_rates),
Gᵀ f added element by element as ``np.add.at`` adds it (first every end a, then every end b), the
node twists and the projection of wrenches onto the coordinates (engine/kinematics.py), the
velocity product Ġ V (actuator_kernels.velocity_product) and the solves of cut_projection.projection_solve
(the Newton factor, or the factor of M̄ + β' K̄_c where the iteration matrix has other stiffness:
rigid_cut._elastic). The actuators' drive power -F l' (their share of the drive work) is taken at
the projected state, as the Python step's evaluation there (newton_loop.accept's ``ev1``) gives it.

The prescribed lengths are user functions of time: :func:`call_targets` evaluates them in Python for
every step of a call before it (at the step ends for the iterates, at the states' times for the
projections, as the Python step evaluates them), and stops the call before a step whose lengths are
not finite (the Python step then raises the SolverError that names the actuator).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.actuator import FAMILY, ActuatorData
from flexmb.elements.actuator_kernels import N_STATE, actuator_forces, length_rates, velocity_product
from flexmb.elements.rigid_cut_kernels import ESCALATION, KAPPA, PHASE, PREV, SMAX, S
from flexmb.engine.kinematics import _forward, _node_twists, _project_node
from flexmb.errors import SolverError
from flexmb.solvers.cut_projection import projection_solve
from flexmb.solvers.tree_step import _absmax

__all__ = ["ActuatorWork", "actuator_work", "call_targets", "begin_actuators", "end_actuators", "drive_power_at"]


class ActuatorWork(NamedTuple):
    """Arrays of the actuators' begin and end of step in one compiled call: the prescribed (L, L', L'') of
    every step (K, n, 3) at its end time and at the time of the state after it, the state after the last
    step taken and at the current step's end (n, N_STATE), the weights β'α (n,), the closure rates and
    forces (n,), Ġ V (n,), the drive power at the projected state (1,), and for the evaluation there the
    geometry (G (n, 12), nv, ra, rb (n, 3), l, l' (n,)), (phi, alpha, lam, force (n, 6), ell (n,)) and node
    wrenches (N+1, 6); ``elastic``: whether they project with the projection factor (rigid_cut._elastic)."""

    targets: np.ndarray
    at_state: np.ndarray
    accepted: np.ndarray
    state: np.ndarray
    weights: np.ndarray
    rates: np.ndarray
    forces: np.ndarray
    gdv: np.ndarray
    power: np.ndarray
    geometry: tuple
    evaluated: tuple
    wrenches: np.ndarray
    elastic: bool


def call_targets(data: ActuatorData, steps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(L, L', L'') of every actuator at the end times ``steps[:, 1]`` and at the states' times ``steps[:, 2]``
    (K', n, 3) each, for the first K' steps whose values are all finite (Actuators.targets; the Python step
    raises the SolverError of the first that is not)."""
    ends, states = [], []
    for t1, t2 in steps[:, 1:3]:
        try:
            end = FAMILY.targets(data, float(t1))
            state = end if t2 == t1 else FAMILY.targets(data, float(t2))
        except SolverError:
            break
        ends.append(end)
        states.append(state)
    shape = (len(ends), data.n, 3)
    return np.array(ends, dtype=float).reshape(shape), np.array(states, dtype=float).reshape(shape)


def actuator_work(data: ActuatorData, n_nodes: int, elastic: bool, accepted: np.ndarray, targets: np.ndarray,
                  at_state: np.ndarray) -> ActuatorWork:
    """New ActuatorWork for a call: the actuators' state ``accepted`` at its start, the prescribed values of
    its steps (:func:`call_targets`)."""
    n = data.n
    e6 = (n, 6)
    geometry = (np.empty((n, 12)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty(n), np.empty(n))
    evaluated = (np.empty(e6), np.empty(e6), np.empty(e6), np.empty(e6), np.empty(n))
    return ActuatorWork(np.ascontiguousarray(targets, dtype=float), np.ascontiguousarray(at_state, dtype=float),
                        np.array(accepted, dtype=float).reshape(n, N_STATE), np.empty((n, N_STATE)), np.empty(n),
                        np.empty(n), np.empty(n), np.empty(n), np.zeros(1), geometry, evaluated,
                        np.zeros((n_nodes + 1, 6)), bool(elastic))


@njit(cache=True)
def begin_actuators(k, work, act, bp, cst) -> None:
    """Actuators.begin_step for step k into ``cst``: the state of the last step taken with the step's penalty
    factor S = κ / β', SMAX = ESCALATION S, the first iterate's phase and no previous closure; and the step's
    prescribed lengths into ``act`` (ActuatorArrays' ``target`` and ``length``: actuator_step.set_targets)."""
    tg = work.targets
    for e in range(cst.shape[0]):
        for j in range(3):
            act.target[e, j] = tg[k, e, j]
        act.length[e] = tg[k, e, 0]
        for j in range(cst.shape[1]):
            cst[e, j] = work.accepted[e, j]
        s = KAPPA / bp
        cst[e, S] = s
        cst[e, SMAX] = ESCALATION * s
        cst[e, PHASE] = 0.0
        cst[e, PREV] = np.inf


@njit(cache=True)
def _push(tree, kin, act, G, work, cwork, free, v, gp, bp, matrix) -> bool:
    """v_f ← v_f - S⁻¹ [Bᵀ Gᵀ (β'α c)]_f for the closure rates c in work.rates (A8): Line.wrenches (np.add.at's
    order), ``ctx.project``, the solve of cut_projection.projection_solve."""
    f, c, w = work.forces, work.rates, cwork.wrenches
    for e in range(c.size):
        f[e] = work.weights[e] * c[e]
    w[:] = 0.0
    for e in range(c.size):
        for j in range(6):
            w[act.ia[e], j] += G[e, j] * f[e]
    for e in range(c.size):
        for j in range(6):
            w[act.ib[e], j] += G[e, 6 + j] * f[e]
    N = kin[0].shape[0]
    _project_node(tree[0], tree[1], tree[13], tree[14], kin[4], w[:N], kin[0], cwork.origin, cwork.gen)
    for j in range(free.size):
        cwork.rhs[j] = cwork.gen[free[j]]
    if not projection_solve(cwork, gp, bp, matrix, work.elastic):
        return False
    for j in range(free.size):
        v[free[j]] = v[free[j]] - cwork.rhs[j]
    return True


@njit(cache=True)
def _acceleration_rates(tree, kin, act, G, work, cwork, udot, target) -> None:
    """work.rates = G (B u̇ + ζ) + Ġ V - L'': the lengths' second derivatives less the prescribed (A8), ζ at the
    projected velocities (cwork.kin)."""
    tw, zeta, c = cwork.twists, cwork.kin[8], work.rates
    _node_twists(tree[0], tree[1], tree[13], tree[14], kin[4], udot, kin[0], tw)
    for i in range(tw.shape[0]):
        for j in range(6):
            tw[i, j] = tw[i, j] + zeta[i, j]
    length_rates(G, tw, act.ia, act.ib, c)
    for e in range(c.size):
        c[e] = c[e] + work.gdv[e] - target[e, 2]


@njit(cache=True)
def end_actuators(k, tree, kin, act, aout, work, cwork, free, state, coefficients, matrix, threads) -> bool:
    """Actuators.end_step of step k at the converged iterate (its kinematics ``kin``, the actuators' outputs
    ``aout`` of element_newton_step: actuator_step.ActuatorOutputs) of ``state`` = (q, balls, u, u̇), after the
    rigid cuts' (cut_projection.end_cuts, whose buffers ``cwork`` serve here too), ``coefficients`` = (γ', β') of the
    step: work.state = the iterate's
    next state with the multipliers the forces (AL8) and the accepted phase; ``u`` projected onto G V = L',
    the kinematics at it into cwork.kin, ``udot`` projected onto G a + Ġ V = L'' with the multipliers updated
    (A8), (AL9), each up to three passes, in place (:func:`drive_power_at` then takes their drive power at the
    projected state, after the couplings' projections). ``matrix`` as end_cuts takes it. False where a
    factorization failed (the step is then left to the Python path)."""
    st = work.state
    n = st.shape[0]
    if n == 0:
        return True
    q, balls, u, udot = state
    gp, bp = coefficients
    G, c, target = aout.G, work.rates, work.at_state[k]
    for e in range(n):
        for j in range(N_STATE):
            st[e, j] = aout.nxt[e, j]
        st[e, 0] = aout.force[e, 0]  # (AL8)
        st[e, PHASE] = -1.0
        work.weights[e] = bp * aout.alpha_mat[e, 0]  # fe.matrix_penalties(): the last matrix's penalties
    rate_max, acc_max = 0.0, 0.0
    for e in range(n):
        rate_max = max(rate_max, abs(target[e, 1]))
        acc_max = max(acc_max, abs(target[e, 2]))
    for _ in range(3):  # (A8) with L'
        _node_twists(tree[0], tree[1], tree[13], tree[14], kin[4], u, kin[0], cwork.twists)
        length_rates(G, cwork.twists, act.ia, act.ib, c)
        for e in range(n):
            c[e] = c[e] - target[e, 1]
        if _absmax(c) <= 1e-14 * (_absmax(u) + rate_max + 1.0):
            break
        if not _push(tree, kin, act, G, work, cwork, free, u, gp, bp, matrix):
            return False
    k2 = cwork.kin  # forward_kinematics at the projected velocities (ctx.kinematics)
    k2[5][:] = 0.0
    _forward(tree, q, balls, u, k2, threads[1])
    velocity_product(k2[7], act.ia, act.ib, aout.nv, aout.ra, aout.rb, aout.l, work.gdv)
    for _ in range(3):  # (A8) with L'', (AL9)
        _acceleration_rates(tree, kin, act, G, work, cwork, udot, target)
        if _absmax(c) <= 1e-14 * (_absmax(udot) + acc_max + 1.0):
            break
        if not _push(tree, kin, act, G, work, cwork, free, udot, gp, bp, matrix):
            return False
        _acceleration_rates(tree, kin, act, G, work, cwork, udot, target)
        for e in range(n):
            st[e, 0] = st[e, 0] + work.weights[e] * c[e]
    return True


@njit(cache=True)
def drive_power_at(k, k2, act, work) -> bool:
    """Actuators.evaluate at the projected state of step k (positions and twists ``k2``, the kinematics after every
    family's projections: newton_loop.accept's ``ev1``; the accepted state work.state: the force is λ) and their
    drive power ordered_sum(-F l') into work.power[0]; False where one is shorter than its l_min there."""
    if work.state.shape[0] == 0:
        return True
    target = work.at_state[k]
    w = work.wrenches
    w[:] = 0.0
    force, ldot = work.evaluated[3], work.geometry[5]
    short, _, _ = actuator_forces(k2[0], k2[1], k2[7], (act.ia, act.ib, act.sa, act.sb), target[:, 0], act.l_min,
                                  work.state, w, work.geometry, work.evaluated)
    s = 0.0
    for e in range(ldot.size):
        s += -force[e, 0] * ldot[e]
    work.power[0] = s
    return short < 0
