"""Many fixed steps of a model of bodies, beams, bushings and spring-dampers in one compiled call (issue 38: closed
loops at tree speed).

:func:`flexmb.solvers.element_kernels.newton_loop` runs the whole Newton loop of one
generalized-α step on the dense or band factor in one compiled call; what is left per step in
Python (the step's wrapper, new arrays for its state and evaluation, the error estimate, the work
integrals, the step history) costs about as much as the step on a loop of ten windows.
:func:`element_run` runs the steps between two output rows of a fixed-step run
(flexmb.solvers.simulate) in one call, as :mod:`flexmb.solvers.tree_run` does for rigid trees:
per step the same Newton loop, the same finiteness test as ``check_finite``, the same error
estimate (step_control eq. E3, recorded in the step history), the same powers (the joint dampers',
the drives', the loads' and the elements' dissipation, summed in the order of
``Evaluation.element_dissipation``, less the bearing friction's power) and the same trapezoidal work integrals as the recorder
(flexmb.solvers.recorder), in the same order, so a run gives the same numbers bit for bit with or
without it (tests/test_element_run.py). The drives, applied joint forces and nodal loads
(functions of time) are evaluated in Python for every step of the call first (:meth:`ElementRun.run`).

The call stops at the first step that does not converge, meets a non-finite value or a pivot
that is not positive, or whose powers are not finite, and returns how many steps it took: the
Python step then repeats that step, halving it or raising the SolverError that names where
(same arithmetic, so the same failure). Rigid cuts begin and end every step in the call too
(flexmb/solvers/cut_projection.py: their penalties (AL7), multipliers (AL8) and projections (AL5),
(AL6), (AL9) of docs/rigid_cut.md), then the prescribed-length actuators (flexmb/solvers/actuator_projection.py:
(A6), (A8) of docs/actuator.md, their prescribed values evaluated in Python for the call's steps before it), then
the error estimate and powers at the projected state.
"""

from __future__ import annotations

import math
import time

import numpy as np
from numba import njit

from flexmb.elements import FAMILIES
from flexmb.elements.coupling import _elastic as coupling_projects_own
from flexmb.elements.rigid_cut import _elastic
from flexmb.elements.rotational_spring_damper_kernels import AXIS, rotational_forces
from flexmb.engine.assembly import Evaluation, LazyEvaluation
from flexmb.solvers.actuator_projection import actuator_work, begin_actuators, call_targets, drive_power_at, end_actuators
from flexmb.solvers.coupling_projection import begin_couplings, coupling_work, end_couplings
from flexmb.solvers.cut_projection import (
    beams_at,
    begin_cuts,
    bushings_at,
    cut_arrays,
    end_cuts,
    factor_key,
    held_cuts,
    springs_at,
)
from flexmb.solvers.element_families import (
    BUSHING_POWER,
    COUPLING_CST,
    COUPLING_POWER,
    CUT_CST,
    CUT_FLAGS,
    ROT_POWER,
    _torque_laws,
)
from flexmb.solvers.element_kernels import LAZY, NewtonSettings, StepStart, newton_loop
from flexmb.solvers.family_tuples import IA
from flexmb.solvers.integrator_protocol import Integrator
from flexmb.solvers.law_step import SPRING_POWER
from flexmb.solvers.nonfinite import all_finite
from flexmb.solvers.recorder import Recorder
from flexmb.solvers.step_args import new_step_args, step_args
from flexmb.solvers.step_control import ErrorEstimate
from flexmb.solvers.tree_run import (
    MAX_COORDINATE_STEPS,
    MAX_LOAD_VALUES,
    MAX_STEPS,
    ErrorInputs,
    PowerInputs,
    Taken,
    follower_values,
    step_measures,
    step_taken,
)
from flexmb.solvers.tree_step import OK
from flexmb.state import State

__all__ = ["ElementRun", "element_run"]

BEAM, BUSHING, RIGID_CUT, SPRING_DAMPER, ROTATIONAL, ACTUATOR, COUPLING = 0, 1, 2, 3, 4, 5, 6
DISSIPATION_CODES = {"beam": BEAM, "bushing": BUSHING, "rigid_cut": RIGID_CUT, "spring_damper": SPRING_DAMPER,
                     "rotational_spring_damper": ROTATIONAL, "actuator": ACTUATOR, "coupling": COUPLING}
"""Codes of the families whose dissipation a step's power sums (``dissipation`` of :func:`element_run`)."""
PROJECTED_IN_THE_CALL = ("rigid_cut", "rotational_spring_damper", "actuator", "coupling")
"""The families with element state whose begin and end of step the call takes (rotational spring-dampers: their
reference angles (R3a), _rotational_end)."""


@njit(cache=True)
def _dissipation(order, outs) -> float:
    """Evaluation.element_dissipation of the iterate in ``outs`` (a family_tuples.FamilyOutputs): 0.0 plus each
    family's ordered sum (elements/family.py ordered_sum), in the order of ``order`` (the assembler's families)."""
    total = 0.0
    for code in order:
        s = 0.0
        if code == BEAM:
            en = outs.beam.energies
            for e in range(en.shape[0]):
                s += en[e, 1]
        elif code == BUSHING:
            pw = outs.bushing[BUSHING_POWER]
            for e in range(pw.size):
                s += pw[e]
        elif code == SPRING_DAMPER:  # c l'² (docs/spring_damper.md (S6)), a force law's F l' (S12)
            pw = outs.spring_damper[SPRING_POWER]
            for e in range(pw.size):
                s += pw[e]
        elif code == ROTATIONAL:  # c φ'² or c |ω_b - ω_a|² (docs/rotational_spring_damper.md (R11))
            pw = outs.rotational[ROT_POWER]
            for e in range(pw.size):
                s += pw[e]
        elif code == COUPLING:  # c ġ² (docs/coupling.md), at the projected state (end_couplings)
            pw = outs.coupling[COUPLING_POWER]
            for e in range(pw.size):
                s += pw[e]
        total += s  # rigid cuts, actuators: no dissipation (FamilyEvaluation.dissipation 0.0)
    return total


@njit(cache=True)
def _rotational_end(rot, ro, R, V, w, ref_prev) -> bool:
    """newton_loop.accept of the rotational spring-dampers (RotationalSpringDampers.end_step, (R3a) of
    docs/rotational_spring_damper.md): the accepted angles ``ro[1]`` of the AXIS elements become their reference
    angles ``rot[11]`` (the old ones kept in ``ref_prev``), then the elements evaluated again at the accepted state
    (R, V) with them, as the accept's evaluation ev1 (their angles, torques and dissipated powers into ``ro``; their
    moments into the scratch ``w``, not the step's). False where a torque law's value is not finite there (R15)."""
    mode, ref = rot[2], rot[11]
    ref_prev[:] = ref
    for e in range(ref.size):
        if mode[e] == AXIS:
            ref[e] = ro[1][e]
    w[:] = 0.0
    bad = rotational_forces(R, V, rot[:12], w, (ro[0], ro[1], ro[2], ro[3], ro[4], ro[5]))
    ro[6][0], ro[6][1] = float(bad), 0.0
    return bad < 0 and _torque_laws(rot, ro, w)


@njit(cache=True)
def element_run(args, bufs, inputs, alpha, newton, steps, state, est, power, log, info, cuts) -> int:
    """Take the steps ``steps`` (K, 3) = (step size, end time of the step, time of the state after
    it) from ``state`` = (q, balls, u, u̇, a) (updated in place to the last step taken); returns how many.

    ``args``, ``bufs``: element_newton_step's model arrays (element_kernels.StepModel) and the step's buffers
    (element_kernels.StepBuffers), each in a flexmb.solvers.step_args.StepArgs (one pointer to unbox per call);
    ``inputs`` = (joint forces (K, n) at the step ends, the same at the states' times for the power,
    nodal loads (K or 1, N, 6), with loads, (driven, q, q̇, q̈ (K, n_driven) each), the follower loads' values
    (K, n_loads, 6) at the step ends (tree_run.follower_values; (1, 0, 6) without), turned per iterate
    (docs/motion_forces.md (M19))); ``alpha`` = (αm, αf, γ, β); ``newton`` = (rtol, atol_u̇, eps_pos, length
    scale, max_iter, lazy, with node masses, lever, c_diag, k_diag); ``est`` = (C of E2, ℓ, [V]): the error
    estimate, V updated; ``power`` = ([t, p_diss, p_drive, p_load] of the last state, work (3,), joint dampers'
    c and u, family codes of the dissipation in the assembler's order, the rotational spring-dampers' scratch
    (N+1, 6), (n_rot,) of _rotational_end, which sets their reference angles to each step's ((R3a)) and takes their
    dissipation there) updated; ``log`` (K, 4) = (iterations, factorizations, residual, error) per step; ``info``
    (5,) element_newton_step's of the last step tried; ``cuts`` = (CutModel, CutWork of
    flexmb/solvers/cut_projection.py, ActuatorWork of flexmb/solvers/actuator_projection.py, CouplingWork of
    flexmb/solvers/coupling_projection.py) with rigid cuts, actuators or couplings, None
    without (numba prunes their branches: their 105 arrays are not passed per call):
    :func:`_begin_step` and :func:`_end_rigid_cuts` (module docstring)."""
    model, maps, factor = args.step
    tree, bodies, gravity, springs, jforce_u, coords, fams, threads = model
    buffers = bufs.step
    out_state, kin, Mb, wfull, tau, outs, rfull, r, work = buffers
    jf_all, jf_power, loads_all, with_loads, drives_all, followers = inputs
    driven, driven_q, driven_u, driven_a = drives_all
    am, af, g, b = alpha
    rtol, atol_udot, eps_pos, length_scale, max_iter, lazy, with_mass, lever, c_diag, k_diag = newton
    c_err, ell, v_scale = est
    prev, wrk, spring_c, spring_u, order, rot_w, ref_prev = power
    rot = fams.rotational
    follower = springs[6][2]  # the follower loads' values of the step (motion_load_step.follower_inputs)
    q, balls, u, udot, a = state
    q1, balls1, u1, udot1, a1 = out_state
    c_a = (1 - af) / (1 - am)
    diag = np.empty(c_diag.size)
    drive, pw = np.empty(driven.size), np.empty(3)
    one_load, no_loads = loads_all.shape[0] == 1, np.zeros((0, 6))
    matrix = (new_step_args((tree, fams, maps, outs, diag, with_mass, kin, Mb, factor, threads)), factor)  # projection_solve's
    if cuts is not None:
        held = held_cuts(cuts)  # the projection families held as one reference (held_cuts)
    for k in range(steps.shape[0]):
        h = steps[k, 0]
        gp, bp = _begin_step(k, steps, (g, b, c_a), (c_diag, k_diag, diag), cuts,
                             (outs.rigid_cut[CUT_CST], fams.actuator, outs.actuator.cst, fams.coupling[8],
                              outs.coupling[COUPLING_CST]), springs[5][4], follower, followers)
        loads = loads_all[0] if one_load else loads_all[k]
        start = StepStart(jf_all[k], loads, (driven, driven_q[k], driven_u[k], driven_a[k]), (am, af, g, b, h), q, balls,
                          u, udot, a)
        newton_loop(model, maps, factor, buffers, start, diag, NewtonSettings(gp, bp, rtol, atol_udot, eps_pos, length_scale,
                                                                              max_iter, lazy, with_mass, lever), info)
        status = int(info[3])
        if (status != OK and status != LAZY) or not all_finite(q1, u1, udot1, balls1):
            return k
        kin_end = kin
        if cuts is not None:  # newton_loop.accept: the factor key, RigidCuts.end_step, a1, the state
            if not _end_rigid_cuts(k, held, matrix, info, coords[3], out_state, (udot, a), (gp, bp, af, am), gravity):
                return k
            kin_end = held[1].kin  # the evaluation at the projected state (ev1 of _accept)
        # (R3a) and the rotational spring-dampers' dissipation at the projected state (positions as the iterate's)
        if rot[IA].size and not _rotational_end(rot, outs.rotational, kin_end.R, kin_end.V, rot_w, ref_prev):
            rot[11][:] = ref_prev  # the step is not taken: the references of its start again
            return k
        # a lazy step (the last evaluated iterate's kinematics) is taken only where no element dissipates
        powers = PowerInputs(spring_c, spring_u, u1, loads if with_loads else no_loads, jf_power[k], jforce_u,
                             _dissipation(order, outs) if status == OK else 0.0, status == OK)
        err, motion, finite = step_measures(tree, kin_end, a, a1, h, rfull, ErrorInputs(c_err, ell, v_scale, driven), powers,
                                            (drive, pw))
        if work[8][0].size:  # Recorder.power: the bearing friction dissipates -Σ τ u (its torques at the last iterate)
            finite = _with_friction_power(work[8], u1, pw) and finite
        if cuts is not None:  # Recorder.power: the actuators' drive power (ev1's)
            finite = _with_drive_power(held[2], pw) and finite
        if not finite:
            if rot[IA].size:
                rot[11][:] = ref_prev
            return k
        step_taken(k, steps[k, 2], motion, err, pw, v_scale, prev, wrk, state, out_state, info, log)
        if cuts is not None:
            _accept_states(held)
    return steps.shape[0]


@njit(cache=True)
def _begin_step(k, steps, coefficients, diagonals, cuts, csts, law_time, follower, followers) -> tuple[float, float]:
    """The start of step k of :func:`element_run`: γ' and β' of its size (GeneralizedAlpha.step; ``coefficients``
    = (γ, β, (1 - αf) / (1 - αm))) and the iteration matrix's joint diagonal from them (``diagonals`` = (c, k,
    out)); the rigid cuts', actuators' and couplings' penalties (Assembler.begin_step, (AL7), (A6), (C13);
    ``csts`` = (the cuts' state, the ActuatorArrays, the actuators' state, which couplings are rigid, the
    couplings' state)) and the actuators' prescribed lengths; the step's end time for
    the spring-dampers' force laws (``law_time``, flexmb/solvers/law_step.py); the follower loads' values at the
    step's end (motion_load_step.step_node_loads). Returns (γ', β')."""
    h = steps[k, 0]
    g, b, c_a = coefficients
    gp = g * h * c_a
    bp = b * h * h * c_a
    c_diag, k_diag, diag = diagonals
    for j in range(diag.size):
        diag[j] = gp * c_diag[j] + bp * k_diag[j]
    if cuts is not None:
        begin_cuts(cuts[1].accepted, cuts[0].scaled, bp, csts[0])
        begin_actuators(k, cuts[2], csts[1], bp, csts[2])
        begin_couplings(cuts[3], csts[3], bp, csts[4])
    law_time[0] = steps[k, 1]
    if followers.shape[1]:
        follower[:, :] = followers[k]
    return gp, bp


@njit(cache=True)
def _end_rigid_cuts(k, cuts, matrix, info, free, out_state, start, weights, gravity) -> bool:
    """The end of step k of :func:`element_run` with rigid cuts, actuators or couplings (newton_loop.accept): the factor key
    of CompiledElementNewton (the step's factor valid unless the accepted iterate raised the penalties), the cuts'
    projections and multipliers (end_cuts: (AL5), (AL6), (AL8), (AL9)), then the actuators' (end_actuators: (AL8),
    (A8), (AL9) of docs/actuator.md; their drive power at the projected state), then the couplings' (end_couplings:
    (C15) of docs/coupling.md; their dissipation at the projected state), the pseudo-acceleration a1 from the
    projected u̇ (``start`` = (u̇, a) of the step's start, ``weights`` = (γ', β', αf, αm)), and where the cuts
    project with their own factor the bushings', beams' and spring-dampers' dissipation at the projected state.
    ``matrix`` as end_cuts takes it, ``free`` the free coordinates, ``out_state`` (q, balls, u, u̇, a) after the
    step. False where the step is not taken (a projection failed, or a value is not finite)."""
    cut_model, cut_work, act_work, coupling_work_ = cuts
    tree, fams, _, outs, _, _, kin, _, _, threads = matrix[0].step
    q1, balls1, u1, udot1, a1 = out_state
    udot, a = start
    gp, bp, af, am = weights
    key = cut_work.key
    if info[1] > 0.0:
        key[0], key[1], key[2] = 1.0, gp, bp
    if outs.rigid_cut[CUT_FLAGS][3] > 0.0:  # the accepted iterate raised the penalties: the factor is not S's
        key[0] = 0.0
    if not end_cuts(tree, kin, cut_model, cut_work, outs.rigid_cut, free, (q1, balls1, u1, udot1), gp, bp, matrix, threads):
        return False
    if not end_actuators(k, tree, kin, fams.actuator, outs.actuator, act_work, cut_work, free, (q1, balls1, u1, udot1),
                         (gp, bp), matrix, threads):
        return False
    if not end_couplings(tree, fams.coupling, outs.coupling, coupling_work_, cut_work, free, (q1, balls1, u1, udot1), gp, bp,
                         matrix, threads):
        return False
    if not drive_power_at(k, cut_work.kin, fams.actuator, act_work):  # the actuators' power at the projected state
        return False
    c_f, c_m = 1 - af, 1 - am
    for j in range(a1.size):
        a1[j] = (af * udot[j] + c_f * udot1[j] - am * a[j]) / c_m
    if not all_finite(q1, u1, udot1, balls1):
        return False
    if cut_model.elastic:  # its bushings', beams' and spring-dampers' dissipation (``gravity``: the beams' weight)
        bushings_at(cut_work, fams.bushing, outs.bushing)
        beams_at(cut_work, fams.beam, gravity, outs.beam, threads[0])
        if not springs_at(cut_work, fams.spring_damper, outs.spring_damper):
            return False
    return True


@njit(cache=True)
def _with_drive_power(act_work, pw) -> bool:
    """Recorder.power: the actuators' drive power at the projected state (``act_work``: actuator_projection's
    ActuatorWork) added to the drive power pw[1] (Evaluation.element_drive_power, a sum from 0.0); whether pw[1] is
    finite."""
    if act_work.state.shape[0]:
        pw[1] = pw[1] + (0.0 + act_work.power[0])
    return math.isfinite(pw[1])


@njit(cache=True)
def _accept_states(cuts) -> None:
    """The step taken: the rigid cuts', actuators' and couplings' state at its end (``cuts`` of :func:`element_run`)
    becomes that of the last step taken, the factor key after it the current one's."""
    cuts[1].accepted[:] = cuts[1].state
    cuts[1].key[4:8] = cuts[1].key[0:4]
    cuts[2].accepted[:] = cuts[2].state
    cuts[3].accepted[:] = cuts[3].state


@njit(cache=True)
def _with_friction_power(fric, u1, pw) -> bool:
    """Recorder.power: the bearing friction (``fric``, the element step's friction arrays: coordinates 0,
    torques at the last iterate 9) dissipates -Σ τ u, taken off the dissipated power pw[0]; whether it is finite."""
    p_fric = 0.0
    for n in range(fric[0].size):
        p_fric += fric[9][n] * u1[fric[0][n]]
    pw[0] = pw[0] - p_fric
    return math.isfinite(pw[0])


def step_times(t: float, dt: float, n: int) -> np.ndarray:
    """(n, 3) = (step size, end time of the step, time of the state after it) of ``n`` steps of ``dt`` from ``t``,
    as GeneralizedAlpha.advance takes them (TreeRun.run's times: a sequential sum); one step without the sums'
    arrays (the same operations on floats: t + dt, min(dt, (t + dt) - t), t + h)."""
    if n == 1:
        t1 = t + dt
        h = min(dt, t1 - t)
        return np.array([[h, t + h, t1]])
    times = np.cumsum(np.concatenate(([t], np.full(n, dt))))
    h = np.minimum(dt, times[1:] - times[:-1])
    return np.column_stack((h, times[:-1] + h, times[1:]))


class ElementRun:
    """The fixed steps of a model of the compiled element step between output rows in one compiled
    call (module docstring), for one run: the integrator ``integ``, the recorder and the error
    estimate of the run. ``applies(integ, callback)``: whether a run can use it."""

    @staticmethod
    def applies(integ: Integrator, callback) -> bool:
        """Whether a fixed-step run of ``integ`` with ``callback`` takes it: :meth:`refusal` names no reason."""
        return not ElementRun.refusal(integ, callback)

    @staticmethod
    def refusal(integ: Integrator, callback=None) -> str:
        """Why a fixed-step run of ``integ`` with ``callback`` steps one by one from Python instead
        (empty if it takes the whole-run call; ``flexmb info`` says it): the whole Newton loop compiled
        (GeneralizedAlpha.newton_path: the dense or band factor, no factor kept over steps), no callback
        (it sees every step's state in Python), only families whose dissipation the compiled run sums
        (DISSIPATION_CODES), bearing friction only without rigid cuts (its power is that of the last
        iterate's torques, friction_loads; the cuts' projections move the state), and, of the
        families with element state, only rigid cuts and actuators (PROJECTED_IN_THE_CALL: where they project
        with their own factor, rigid_cut._elastic, the dissipation at the projected state is compiled for bushings,
        beams, spring-dampers and rotational spring-dampers: flexmb/solvers/cut_projection.py,
        flexmb/solvers/actuator_projection.py),
        and rotational spring-dampers (their reference angles (R3a) set per step in the call: _rotational_end,
        their dissipation at the projected state beside rigid cuts); no joint forces or loads of the motion (their
        work and samples: docs/motion_forces.md (M6), (M7), (M13), (M15)). Follower loads take it: their values at
        every step's end are evaluated before the call (tree_run.follower_values)."""
        model, asm = integ.model, integ.asm
        if callback is not None:
            return "a callback sees every step's state in Python"
        if model.mforce_u.size:
            return "the work and samples of joint forces of the motion are taken in Python after each step"
        if "motion_load" in model.elements and model.elements["motion_load"].n:  # docs/motion_forces.md §8
            return "the work and samples of loads of the motion are taken in Python after each step"
        if integ.element_step is None or not integ.compiled_newton or integ.chol.kind not in ("dense", "band") \
                or integ._reusing():
            return "each step's Newton loop is not one compiled call"
        state = sorted({f.name for f, _, _ in asm.with_state if f.name not in PROJECTED_IN_THE_CALL})
        if state:
            return f"element state of {', '.join(repr(n) for n in state)} is updated in Python"
        other = sorted({f.name for f, _, _ in asm.families if f.name not in DISSIPATION_CODES})
        if other:
            return f"the dissipation of {', '.join(repr(n) for n in other)} is summed in Python"
        if model.friction_u.size and any(model.elements[n].n for n in ("rigid_cut", "actuator", "coupling")):
            return ("bearing friction beside rigid cuts, actuators or couplings: its power at the projected state is summed "
                    "in Python")
        return ""

    def __init__(self, integ: Integrator, rec: Recorder, est: ErrorEstimate) -> None:
        self.integ, self.rec, self.est = integ, rec, est
        self.es = integ.element_step
        m = integ.model
        self.model = m
        self.max_steps = max(1, min(MAX_STEPS, MAX_COORDINATE_STEPS // max(m.n_u, 1)))
        if m.loads:
            self.max_steps = max(1, min(self.max_steps, MAX_LOAD_VALUES // (6 * m.n_nodes)))
        self.order = np.array([DISSIPATION_CODES[f.name] for f, _, _ in integ.asm.families], dtype=np.int64)
        self.spring = (np.asarray(m.spring_c, dtype=float), np.asarray(m.spring_u, dtype=np.int64))
        self.cuts = bool(m.elements["rigid_cut"].n)
        self.actuators = m.elements["actuator"]
        self.couplings = m.elements["coupling"]
        self.projects = self.cuts or bool(self.actuators.n) or bool(self.couplings.n)  # state set at each step's end
        n_rot = m.elements["rotational_spring_damper"].n  # their end of step's scratch arrays (_rotational_end)
        self.rot_work = (np.zeros((m.n_nodes + 1 if n_rot else 0, 6)), np.zeros(n_rot))
        self.rotational = bool(n_rot)
        self.followers = any(ld.follower for ld in m.loads)
        self._own: tuple | None = None  # the step arrays this run's last call began (ElementStep.begin's reuse)
        self._args: tuple | None = None  # (StepArgs, key) of the last call's buffers (_buffers)
        self._newton_key: tuple | None = None  # what _newton's tuple was made of
        self._newton_args: tuple = ()
        self._cuts: tuple | None = None  # (cut_arrays' (CutModel, CutWork), key) of the last call (_cut_arrays)

    def run(self, st: State, a: np.ndarray, dt: float, n: int) -> tuple[State, np.ndarray, Evaluation | None, Taken]:
        """Up to ``n`` steps of ``dt`` from (st, a), as GeneralizedAlpha.advance takes them when no
        step fails (the same step sizes and times); returns the state and pseudo-acceleration after
        the last step taken, its evaluation (None unless all n were taken) and the steps taken
        (:class:`flexmb.solvers.tree_run.Taken`). The step history, the error scale, the factor
        count and the recorder's work integrals are updated."""
        integ, rec, est, es, m = self.integ, self.rec, self.est, self.es, self.model
        steps = step_times(st.t, dt, min(n, self.max_steps))
        targets = call_targets(self.actuators, steps) if self.actuators.n else None  # the call stops before a step
        if targets is not None:  # whose prescribed lengths are not finite
            steps = steps[:targets[0].shape[0]]
        n = steps.shape[0]
        if not n:
            return st, a, None, Taken(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        drives, jf, loads_all = es.inputs(steps[:, 1])
        followers = follower_values(m, steps[:, 1]) if self.followers else np.zeros((1, 0, 6))
        # the joint forces at the states' times for the power: those at the step ends where the times are the same
        jf_p = jf if not m.jforce_f or np.array_equal(steps[:, 1], steps[:, 2]) else es.joint_forces(steps[:, 2])
        # the buffers of a step begun at the first one's time inputs (ElementStep.begin), used by every step
        q, balls, u, udot, a1 = st.q.copy(), st.balls.copy(), st.u.copy(), st.udot.copy(), a.copy()
        # the arrays of this run's last call again (its evaluation's row is written: simulate's fixed loop), not
        # those of a Python step in between (its State holds them: a call that fails at once must leave st as it is)
        es.begin(st, a, float(steps[0, 0]), float(steps[0, 1]), (integ.am, integ.af, integ.gamma, integ.beta,
                                                                  float(steps[0, 0])),
                 reuse=self._own is not None and es.out_state is self._own,
                 inputs=((drives[0][:1], drives[1][:1], drives[2][:1]), jf[:1], loads_all[:1]))
        self._own = es.out_state
        if self.rotational:  # the reference angles (R3) of st (begin's reuse leaves those of the step it began last)
            rot = self.model.elements["rotational_spring_damper"]
            es.rotational[11][:] = FAMILIES["rotational_spring_damper"].reference(rot, st)
        v_scale = np.array([est.v])
        prev, work = rec.work_arrays()
        log = np.empty((n, 4))
        info = np.zeros(5)
        newton = self._newton()
        cuts = self._projections(st, targets) if self.projects else None  # None: element_run's branches pruned
        t0 = time.perf_counter()
        done = element_run(es.kernel_args(integ.chol), self._buffers(), (jf, jf_p, loads_all, bool(m.loads),
                                                                         (es.driven, *drives), followers),
                           (integ.am, integ.af, integ.gamma, integ.beta), newton, steps, (q, balls, u, udot, a1),
                           (est.c, est.ell, v_scale), (prev, work, *self.spring, self.order, *self.rot_work), log, info,
                           cuts)
        integ.timings["compiled_step"] += time.perf_counter() - t0
        if not done:
            return st, a, None, Taken(np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros(0, np.int64))
        taken = self._book(float(v_scale[0]), prev, work, steps[:done], log[:done])
        elements = {k: v.copy() for k, v in st.elements.items()} if st.elements else {}
        if cuts is not None:
            self._after_projections(cuts, elements)
        if self.rotational:  # (R3a): the last step's angles, the next step's references (RotationalSpringDampers.end_step)
            elements["rotational_spring_damper"] = es.rotational[11].reshape(-1, 1).copy()
        last = done - 1
        st1 = State(float(steps[last, 2]), q, balls, u, udot, elements)
        if done < n:  # the state after the last step taken; its evaluation is not kept (the caller steps on in Python)
            return st1, a1, None, taken
        if self.projects:  # newton_loop.accept: the projected state evaluated, the converged iterate's drive forces
            ev = integ._evaluate(st1)
            ev.drive_forces = es.rfull[es.driven].copy() if m.driven.size else None
            rec.set_drive(es.rfull[es.driven].copy() if es.driven.size else np.zeros(0))
            return st1, a1, ev, taken
        if self.rotational:  # newton_loop.accept's evaluation ev1: at the step's end time, with the new references
            ev = integ._evaluate(State(float(steps[last, 1]), q, balls, u, udot, elements))
            ev.drive_forces = es.rfull[es.driven].copy() if m.driven.size else None
            rec.set_drive(es.rfull[es.driven].copy() if es.driven.size else np.zeros(0))
            return st1, a1, ev, taken
        es.end_run(st1, float(steps[last, 1]), loads_all[last] if m.loads else loads_all[0])
        lazy = int(info[3]) == LAZY
        ev = LazyEvaluation(integ.asm, st1, es.kinematics()) if lazy else es.evaluation()
        if not lazy:  # the accepted iterate's node wrenches (element_iterate's), for the row's reactions
            ev.wrenches_known = (ev.residual_known[1], es.work[3].copy())
            rec.set_drive(es.rfull[es.driven].copy() if es.driven.size else np.zeros(0))
        return st1, a1, ev, taken

    def _projections(self, st: State, targets: tuple[np.ndarray, np.ndarray] | None) -> tuple:
        """element_run's ``cuts`` = (CutModel, CutWork, ActuatorWork, CouplingWork) for a call from ``st``: the rigid
        cuts' arrays (:meth:`_cut_arrays`), the actuators' with the prescribed values ``targets`` of the call's steps
        (actuator_projection.call_targets; None without actuators), the couplings'; the projection factor made where
        a family projects with it (rigid_cut._elastic, coupling._elastic)."""
        m, integ, acts, couplings = self.model, self.integ, self.actuators, self.couplings
        elastic = _elastic(m, "rigid_cut")
        act_elastic = bool(acts.n) and _elastic(m, "actuator")
        coupling_elastic = bool(couplings.rigid.any()) and coupling_projects_own(m, couplings)
        own = (self.cuts and elastic) or act_elastic or coupling_elastic
        if own and integ._pchol is None:  # the projection factor (GeneralizedAlpha._projection_factor)
            integ._pchol = integ.chol.twin()
        cuts = self._cut_arrays(elastic, st.elements.get("rigid_cut", np.zeros((0, 10))),
                                self.es.factor_arrays(integ._pchol if own else integ.chol))
        none = np.zeros((0, 0, 3))
        act = actuator_work(acts, m.n_nodes, act_elastic, st.elements.get("actuator", acts.initial_state()),
                            *(targets if targets is not None else (none, none)))
        return (*cuts, act, coupling_work(m, couplings, integ.free, coupling_elastic,
                                          st.elements.get("coupling", couplings.initial_state())))

    def _after_projections(self, cuts: tuple, elements: dict) -> None:
        """After a call with rigid cuts, actuators or couplings: the integrator's factor key after the last step taken
        (its end step may have refactorized S: counted) and the families' state after it into ``elements``."""
        integ = self.integ
        key = cuts[1].key
        integ._factor_key = (float(key[5]), float(key[6])) if key[4] > 0.0 else None
        integ.chol.n_factorize += int(key[7])
        for name, work in (("rigid_cut", cuts[1]), ("actuator", cuts[2]), ("coupling", cuts[3])):
            if self.model.elements[name].n:
                elements[name] = work.accepted.copy()

    def _cut_arrays(self, elastic: bool, state: np.ndarray, projection: tuple) -> tuple:
        """element_run's ``cuts`` (cut_projection.cut_arrays) with the cuts' state ``state`` at the call's start and the
        integrator's factor key: the last call's arrays again, refilled, while the projection factor's arrays and the
        step's kinematics buffers are the same objects (its buffers are written before they are read; the accepted
        state and the key are set as cut_arrays sets them)."""
        es, m, integ = self.es, self.model, self.integ
        key = (es.kin, *(x.base if isinstance(x, np.ndarray) and x.base is not None else x for x in projection))
        if self._cuts is None or len(self._cuts[1]) != len(key) or not all(a is b for a, b in zip(self._cuts[1], key)):
            cuts = cut_arrays(es.fams, m.elements["rigid_cut"].penalty, elastic, es.kin, m.n_u, integ.free.size, state,
                              integ._factor_key, projection)
            self._cuts = (cuts, key)
            return cuts
        cuts = self._cuts[0]
        work = cuts[1]
        work.accepted[:] = np.asarray(state, dtype=float).reshape(work.accepted.shape)
        factor_key(work.key, integ._factor_key)
        return cuts

    def _buffers(self):
        """The StepArgs of the begun step's buffers (ElementStep.step_buffers: element_kernels.StepBuffers): the last
        call's again where they are the same objects (flexmb/solvers/step_args.py), so a call unboxes one
        structure, not their arrays."""
        buffers = self.es.step_buffers
        self._args = step_args(buffers, tuple(buffers), self._args)
        return self._args[0]

    def _newton(self) -> tuple:
        """element_run's ``newton``: the integrator's settings and diagonals, made again only where one changed."""
        integ = self.integ
        key = (integ.rtol, integ.atol_udot, integ._eps_pos, integ.length_scale, integ.max_iter, self._lazy(),
               self.es.with_mass, integ._lever, integ.c_diag, integ.k_diag)
        if self._newton_key is None or any(a is not b for a, b in zip(key, self._newton_key)):
            self._newton_args = (float(integ.rtol), float(integ.atol_udot), float(integ._eps_pos), float(integ.length_scale),
                                 int(integ.max_iter), bool(self._lazy()), self.es.with_mass,
                                 np.ascontiguousarray(integ._lever, dtype=float),
                                 np.ascontiguousarray(integ.c_diag, dtype=float), np.ascontiguousarray(integ.k_diag, dtype=float))
            self._newton_key = key
        return self._newton_args

    def _book(self, v_scale: float, prev: np.ndarray, work: np.ndarray, steps: np.ndarray, log: np.ndarray) -> Taken:
        """After element_run took ``steps`` (k, 3) with ``log`` (k, 4): what tree_run.book_steps and
        GeneralizedAlpha.note_element_steps do, at once, with views of this call's arrays (made per call): the error
        scale, the recorder's work integrals (prev, work) and step history, the integrator's step counts."""
        self.est.set_scale(v_scale)
        self.rec.set_work(prev, work)
        h = steps[:, 0]
        taken = Taken(steps[:, 2], h, log[:, 0].astype(np.int64), log[:, 1].astype(np.int64))
        self.rec.log.add_accepted(steps[:, 1], h, taken.iterations, log[:, 3])
        self.integ.note_element_steps(h, taken.factorizations)
        return taken

    def _lazy(self) -> bool:
        """Whether a converged step may be taken without evaluating its last iterate (GeneralizedAlpha.step)."""
        integ = self.integ
        return bool(integ.lazy_accept and not integ.asm.with_state and not integ._work_needs_forces)
