"""Many fixed steps of a rigid tree in one compiled call (issue 14: small models as fast as the peer).

:func:`flexmb.solvers.tree_step.tree_newton_step` runs one generalized-α step of a plain rigid
tree in one compiled call; what is left per step in Python (the call's unboxing of some eighty
arrays, the step's wrapper, the error estimate, the work integrals, the step history) costs
more than the step. :func:`tree_run` runs the steps between two output rows of a fixed-step
run (flexmb.solvers.simulate) in one call: per step the same Newton loop, the same finiteness
test as ``check_finite``, the same error estimate (step_control eq. E3, recorded in the step
history), and the same powers and trapezoidal work integrals as the recorder
(flexmb.solvers.recorder.step_powers), in the same order, so a run gives the same numbers bit
for bit with or without it (tests/test_tree_run.py). The drives, applied joint forces and nodal
loads (functions of time) are evaluated in Python for every step of the call first
(:meth:`TreeRun.run`).

The call stops at the first step that does not converge, meets a non-finite value or a pivot
that is not positive, or whose powers are not finite, and returns how many steps it took: the
Python step then repeats that step, halving it or raising the SolverError that names where
(same arithmetic, so the same failure).

Follower loads (docs/motion_forces.md (M19)) take the call too: their force and moment, functions of time, are
evaluated in Python at every step's end first (:func:`follower_values`, as motion_load_step.step_node_loads sets
them for one step) and set per step in the call, before its iterates turn them by their nodes' rotations.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.family import ordered_sum
from flexmb.engine.assembly import Evaluation
from flexmb.engine.tree_data import DriveValues, KinematicsArrays, StepInputs, StepState, TreeOutputs
from flexmb.model import Model
from flexmb.solvers.integrator_protocol import Integrator
from flexmb.solvers.nonfinite import all_finite
from flexmb.solvers.recorder import Recorder, step_powers
from flexmb.solvers.step_control import ErrorEstimate, _error_size, _twist_size
from flexmb.solvers.tree_step import OK, newton_step
from flexmb.state import State

__all__ = ["ErrorInputs", "PowerInputs", "RunInputs", "TreeRun", "Taken", "book_steps", "follower_values", "tree_run",
           "run_steps", "step_measures", "step_taken"]

MAX_STEPS = 1000
"""Steps of one call at most (Ctrl-C and the progress report are seen between calls)."""
MAX_COORDINATE_STEPS = 50_000
"""Steps x coordinates of one call at most: a call of a large tree stays short too (a 1000-link
chain: 50 steps, about 0.2 s)."""
MAX_LOAD_VALUES = 2**20
"""Nodal-load values (steps x nodes x 6) evaluated ahead at most."""


class ErrorInputs(NamedTuple):
    """What the error estimate of a compiled run reads (ErrorEstimate: eq. (E2)-(E3) of
    flexmb/solvers/step_control.py)."""

    c: float  # C of (E2)
    ell: float  # the length scale ℓ [m]
    v_scale: np.ndarray  # [V], the velocity scale so far, updated by step_taken                (1)
    driven: np.ndarray  # the driven coordinates (int64)                                        (n_d)


class PowerInputs(NamedTuple):
    """What the powers at a step's new state read (Recorder.power, recorder.step_powers)."""

    damper_c: np.ndarray  # the joint dampers' c                                                 (n_s)
    damper_u: np.ndarray  # their coordinates                                                   (n_s)
    u: np.ndarray  # the new state's velocities                                                 (n_u)
    loads: np.ndarray  # the nodal loads (no rows: none, no load power)                         (N x 6 or 0 x 6)
    jforce: np.ndarray  # the applied joint forces at the state's time                          (n_jf)
    jforce_u: np.ndarray  # their coordinates                                                   (n_jf)
    dissipation: float  # the elements' dissipated power, added to the dissipation where ...
    with_dissipation: bool  # ... this is set


class RunInputs(NamedTuple):
    """What depends on time only, for every step k of a compiled run (CompiledStep.inputs)."""

    jforce: np.ndarray  # the applied joint forces at the steps' ends                           (K x n_jf)
    jforce_power: np.ndarray  # at the times of the states after them (for the power)           (K x n_jf)
    loads: np.ndarray  # the nodal loads (one row for all steps if K is not its length)         (K x N x 6 or 1 x N x 6)
    with_loads: bool  # whether the model has loads (without: zeros and no load power)
    drives: tuple  # the drives' (q, q̇, q̈), (K x n_d) each
    followers: np.ndarray  # the follower loads' values at the steps' ends (follower_values)  (K x n_l x 6 or 1 x 0 x 6)


def follower_values(model: Model, times: np.ndarray) -> np.ndarray:
    """The values (force, moment) of every nodal load of ``model`` at the step end times ``times`` (K,), in the loads'
    order: (K, n_loads, 6), what motion_load_step.step_node_loads sets for a step ending at each time (the same
    calls, the same numbers); the compiled runs set them per step into the follower loads' inputs (M19)."""
    out = np.empty((times.size, len(model.loads), 6))
    for k in range(times.size):
        t1 = float(times[k])
        for i, ld in enumerate(model.loads):
            out[k, i, :3] = np.asarray(ld.force(t1), dtype=float)
            out[k, i, 3:] = np.asarray(ld.moment(t1), dtype=float)
    return out


@njit(cache=True)
def step_measures(tree, kin, a, a1, h, rfull, est, powers, out):
    """The error estimate (ErrorEstimate.__call__: eq. (E2)-(E3) of flexmb/solvers/step_control.py) and the
    powers at the new state (Recorder.power) of a converged step of size h, as the compiled runs
    take them: the JointTree ``tree``, the new state's KinematicsArrays ``kin``, the pseudo-accelerations
    ``a`` and ``a1`` before and after the step, eq. (1) at the new state ``rfull``, the ErrorInputs
    ``est``, the PowerInputs ``powers``; ``out`` = (drive, pw) filled: the drive forces and the
    powers (3,). Returns (error, motion size, all powers and drive forces finite)."""
    driven = est.driven
    drive, pw = out
    eps = _error_size(tree.parent, tree.child, tree.coord_start, tree.coord_count, kin.S, kin.x, a, a1, driven,
                      est.c * h * h, est.ell)
    motion = _twist_size(kin.V, est.ell)
    err = eps / (h * max(est.v_scale[0], motion))
    for j in range(driven.size):
        drive[j] = rfull[driven[j]]
    step_powers(powers.damper_c, powers.damper_u, powers.u, drive, driven, powers.loads, kin.V, powers.jforce,
                powers.jforce_u, pw)
    if powers.with_dissipation:
        pw[0] = pw[0] + powers.dissipation
    finite = math.isfinite(pw[0]) and math.isfinite(pw[1]) and math.isfinite(pw[2])
    for j in range(driven.size):
        finite = finite and math.isfinite(drive[j])
    return err, motion, finite


@njit(cache=True)
def step_taken(k, t, motion, err, pw, v_scale, prev, work, state, new_state, info, log) -> None:
    """Book the accepted step k ending at the time t (Recorder.step): the error scale V, the work
    integrals by the trapezoidal rule over [prev[0], t], the state (q, balls, u, u̇, a) replaced by
    ``new_state``, ``log[k]`` = (iterations, factorizations, residual of ``info``, error)."""
    v_scale[0] = max(v_scale[0], motion)
    if prev[0] == prev[0]:  # a previous state (NaN: none)
        dt = t - prev[0]
        for j in range(3):
            work[j] += 0.5 * dt * (pw[j] + prev[1 + j])
    prev[0] = t
    for j in range(3):
        prev[1 + j] = pw[j]
    q, balls, u, udot, a = state
    q1, balls1, u1, udot1, a1 = new_state
    q[:] = q1
    balls[:] = balls1
    u[:] = u1
    udot[:] = udot1
    a[:] = a1
    log[k, 0] = info[0]
    log[k, 1] = info[1]
    log[k, 2] = info[2]
    log[k, 3] = err


@njit(cache=True)
def tree_run(args, inputs, params, steps, state, kin, ev, est, power, log) -> int:
    """:func:`run_steps` as Python calls it (TreeRun.run): the same arguments, but the RunInputs ``inputs``, the
    StepState ``state``, the KinematicsArrays ``kin``, the TreeOutputs ``ev`` and the ErrorInputs ``est`` as plain
    tuples of their fields, named here: numba types a plain tuple of arrays in C, a named tuple field by field
    in Python (with one call per output row, more than the step's arithmetic on a small tree; docs/architecture.md
    P6). Returns the number of steps taken."""
    return run_steps(args, RunInputs(*inputs), params, steps, StepState(*state), KinematicsArrays(*kin), TreeOutputs(*ev),
                     ErrorInputs(*est), power, log)


@njit(cache=True)
def run_steps(args, inputs, params, steps, state, kin, ev, est, power, log) -> int:
    """Take the steps ``steps`` (K, 3) = (step size, end time of the step, time of the state after it)
    of the model whose (StepModel, TreeSolverArrays) ``args`` holds (a StepArgs of flexmb/solvers/step_args.py,
    TreeStep.args: one pointer unboxed per call) with ``params`` (tree_newton_step's,
    h aside) from the StepState ``state`` (q, balls, u, u̇ and the pseudo-acceleration a, all updated
    in place to the last step taken); per step k the RunInputs ``inputs``: the drives (q, q̇, q̈) (K,
    n_driven) each, the applied joint forces ``jforce[k]`` (their values for the power:
    ``jforce_power[k]``, at the state's time) and the nodal loads ``loads[k]`` (or ``loads[0]`` for
    all if it has one row; without ``with_loads`` zeros, and no load power, as in the recorder), the follower
    loads' values ``followers[k]`` (none: no follower loads).
    The KinematicsArrays ``kin`` and the TreeOutputs ``ev`` hold the last step's evaluation
    (tree_newton_step). ``est``: the ErrorInputs of the error estimate, V updated; ``power`` = ([t,
    p_diss, p_drive, p_load] of the last state, work (3,)) updated; ``log`` (K, 4) = (iterations,
    factorizations, residual, error) per step. Returns the number of steps taken (module docstring)."""
    am, af, g, b, _, rtol, atol_udot, eps_pos, length_scale, max_iter, position_tangent = params
    driven_q, driven_u, driven_a = inputs.drives
    step_model, solver = args.step
    springs, jforce_u, driven = step_model.springs, step_model.jforce_u, est.driven
    prev, work = power
    q, balls, n_u = state.q, state.balls, state.u.size
    end = StepState(np.empty_like(q), np.empty_like(balls), np.empty(n_u), np.empty(n_u), np.empty(n_u))
    info = np.zeros(5)
    out = (np.empty(driven.size), np.empty(3))
    loads_all = inputs.loads
    one_load = loads_all.shape[0] == 1
    power_sd = solver.pairs[2][8]  # the spring-dampers' dissipated powers (S6) of the step's iterate (engine/tree_pairs.py)
    with_sd = solver.pairs[0][0].size > 0
    no_loads = np.zeros((0, 6))
    followers, follower = inputs.followers, springs[6][2]
    for k in range(steps.shape[0]):
        h = steps[k, 0]
        if followers.shape[1]:  # the follower loads' values at the step's end (motion_load_step.step_node_loads)
            follower[:, :] = followers[k]
        p = (am, af, g, b, h, rtol, atol_udot, eps_pos, length_scale, max_iter, position_tangent)
        loads = loads_all[0] if one_load else loads_all[k]
        drives = DriveValues(driven, driven_q[k], driven_u[k], driven_a[k])
        newton_step(args, StepInputs(inputs.jforce[k], loads, drives), p, state, end, kin, ev, info)
        if int(info[3]) != OK or not all_finite(end.q, end.u, end.udot, end.balls):
            return k
        powers = PowerInputs(springs[4], springs[0], end.u, loads if inputs.with_loads else no_loads, inputs.jforce_power[k],
                             jforce_u, ordered_sum(power_sd) if with_sd else 0.0, with_sd)
        err, motion, finite = step_measures(step_model.tree, kin, state.a, end.a, h, ev.rfull, est, powers, out)
        if not finite:
            return k
        step_taken(k, steps[k, 2], motion, err, out[1], est.v_scale, prev, work, state, end, info, log)
    return steps.shape[0]


@dataclass(frozen=True)
class Taken:
    """The steps one call took, per step: the time after it, its size, Newton iterations, factorizations."""

    t: np.ndarray
    h: np.ndarray
    iterations: np.ndarray
    factorizations: np.ndarray

    def __len__(self) -> int:
        return self.t.size


def book_steps(rec: Recorder, est: ErrorEstimate, v_scale: float, work: tuple[np.ndarray, np.ndarray], steps: np.ndarray,
               log: np.ndarray) -> Taken:
    """After a compiled run took ``steps`` (k, 3) with ``log`` (k, 4) (:func:`tree_run`): the error
    estimate's scale, the recorder's work integrals ``work`` = (prev, work) and its step history
    updated; returns the steps taken."""
    est.set_scale(v_scale)
    rec.set_work(*work)
    taken = Taken(steps[:, 2].copy(), steps[:, 0].copy(), log[:, 0].astype(np.int64), log[:, 1].astype(np.int64))
    rec.log.add_accepted(steps[:, 1], taken.h, taken.iterations, log[:, 3])
    return taken


class TreeRun:
    """The fixed steps of a rigid tree between output rows in one compiled call (module docstring),
    for one run: the integrator ``integ`` (its ``tree_step`` set), the recorder and the error
    estimate of the run. ``applies(integ, callback)``: whether a run can use it."""

    @staticmethod
    def applies(integ: Integrator, callback) -> bool:
        """A compiled tree step, no callback (it sees every step's state in Python) and no joint forces of the
        motion (their work and samples are taken in Python after each step: docs/motion_forces.md (M6), (M7)).
        Follower loads take it (:func:`follower_values`)."""
        return integ.tree_step is not None and callback is None and not integ.model.mforce_u.size

    def __init__(self, integ: Integrator, rec: Recorder, est: ErrorEstimate) -> None:
        self.integ, self.rec, self.est = integ, rec, est
        ts = integ.tree_step
        self.ts = ts
        m = integ.model
        self.model = m
        N = m.n_nodes
        self.max_steps = max(1, min(MAX_STEPS, MAX_COORDINATE_STEPS // max(m.n_u, 1)))
        if m.loads:
            self.max_steps = max(1, min(self.max_steps, MAX_LOAD_VALUES // (6 * N)))

    def run(self, st: State, a: np.ndarray, dt: float, n: int) -> tuple[State, np.ndarray, Evaluation | None, Taken]:
        """Up to ``n`` steps of ``dt`` from (st, a), as GeneralizedAlpha.advance takes them when no
        step fails (the same step sizes and times); returns the state and pseudo-acceleration
        after the last step taken, its evaluation (None unless all n were taken) and the steps taken
        (:class:`Taken`) for the caller's counters and progress. The step
        history, the error scale and the recorder's work integrals are updated."""
        integ, rec, est, ts, m = self.integ, self.rec, self.est, self.ts, self.model
        n = min(n, self.max_steps)
        # advance(): t_try = t + dt (a sequential sum, as cumsum's), h = min(dt, t_try - t), the step ends at t + h,
        # the state after it is at t_try
        times = np.cumsum(np.concatenate(([st.t], np.full(n, dt))))
        h = np.minimum(dt, times[1:] - times[:-1])
        steps = np.column_stack((h, times[:-1] + h, times[1:]))
        drives, jf, loads_all = ts.inputs(steps[:, 1])
        jf_p = ts.joint_forces(steps[:, 2])  # the recorder's power takes them at the state's time
        followers = follower_values(m, steps[:, 1]) if any(ld.follower for ld in m.loads) else np.zeros((1, 0, 6))
        q, balls, u, udot, a1 = st.q.copy(), st.balls.copy(), st.u.copy(), st.udot.copy(), a.copy()
        kin, Mb, wfull, tau, rfull = ts.buffers()
        v_scale = np.array([est.v])
        prev, work = rec.work_arrays()
        log = np.empty((n, 4))
        t0 = time.perf_counter()
        # plain tuples at the call (tree_run names them: RunInputs, StepState, KinematicsArrays, TreeOutputs, ErrorInputs)
        done = tree_run(ts.args, (jf, jf_p, loads_all, bool(m.loads), drives, followers), integ.tree_params(dt), steps,
                        (q, balls, u, udot, a1), tuple(kin), (Mb, wfull, tau, rfull), (est.c, est.ell, v_scale, ts.driven),
                        (prev, work), log)
        integ.timings["compiled_step"] += time.perf_counter() - t0
        if not done:
            return st, a, None, Taken(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        taken = book_steps(rec, est, float(v_scale[0]), (prev, work), steps[:done], log[:done])
        integ.note_tree_steps(taken.h, taken.factorizations)
        last = done - 1
        st1 = State(float(steps[last, 2]), q, balls, u, udot, {k: v.copy() for k, v in st.elements.items()})
        if done < n:  # the state after the last step taken; its evaluation is not kept (the caller steps on in Python)
            return st1, a1, None, taken
        ev = ts.evaluation(st1, kin, Mb, wfull, tau, rfull, loads_all[last] if m.loads else loads_all[0])
        rec.set_drive(rfull[ts.driven].copy() if ts.driven.size else np.zeros(0))
        return st1, a1, ev, taken

