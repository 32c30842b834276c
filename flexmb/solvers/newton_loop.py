"""The generalized-α step as an algorithm: its Newton loop in Python, the reference every compiled
back-end (flexmb/solvers/step_backends.py) reproduces bit for bit.

A step from (qₙ, uₙ, u̇ₙ, aₙ) by h (docs/equations_of_motion.md §4) runs in stages, each a function here:

* :func:`begin_step`: the weights γ', β' of S (G5) and the element families' begin of step;
* :func:`newton_step`: the predictor (G6), then per iterate the trial state (G2)–(G4) and its residual of
  eq. (1) (:func:`_python_iterate`, or the compiled iterates of ElementStep: :func:`_compiled_iterate`),
  the tolerances (G7), the convergence test (G7), (G9), the restart of a stale factor (G10), the failure,
  and the correction S δu̇ = r (G8) with the factor refreshed where (G10) says so (:func:`_correct`);
* :func:`accept`: the converged state after the families' end-of-step corrections and its (G2) (G11).

The halving of failed steps (G12) and the error estimate of each sub-step are the integrator's
(GeneralizedAlpha.advance). A step returns ``StepResult``: (state, pseudo-acceleration a, evaluation,
:class:`StepInfo`). The loop's helpers are the integrator's factor (_factorize, _solve: the
LinearSolver chosen once, flexmb/engine/linear_solver.py), its trial state (_trial) and evaluation.
"""

from __future__ import annotations

import functools
import math
import time as _time
from dataclasses import dataclass, field

import numpy as np

from flexmb.elements.family import StepContext
from flexmb.engine.assembly import Evaluation, LazyEvaluation
from flexmb.errors import NewtonFailure
from flexmb.model import Model
from flexmb.solvers.element_families import stuck_error
from flexmb.solvers.integrator_protocol import Integrator
from flexmb.solvers.nonfinite import evaluation_source, nonfinite_error
from flexmb.solvers.tree_step import _absmax, _absmax_at, _update, corrected
from flexmb.state import State

__all__ = ["StepInfo", "BegunStep", "begin_step", "newton_step", "accept"]


@dataclass
class StepInfo:
    """What one accepted step cost: Newton iterations, refactorizations, final residual."""

    iterations: int
    factorizations: int
    residual: float
    h: float


#: what a step returns: the new state, its pseudo-acceleration a, its evaluation and the step's cost (a type
#: alias for hints, not in __all__: a generic alias has no source module of its own for the API pages)
StepResult = tuple[State, np.ndarray, Evaluation, StepInfo]


@dataclass
class BegunStep:
    """A step from (``st``, ``a``) by ``h`` to the time ``t1`` with the weights ``gp`` = γ' and ``bp`` = β' of
    S (G5), the element families' internal state after their begin of step (``elements``) and whether a
    converged iterate may be taken without evaluating it (``lazy``: GeneralizedAlpha.lazy_accept)."""

    st: State
    a: np.ndarray
    h: float
    t1: float
    gp: float
    bp: float
    elements: dict
    lazy: bool


def begin_step(integ: Integrator, st: State, a: np.ndarray, h: float, t1: float) -> BegunStep:
    """The step's weights γ' = γ h (1-αf)/(1-αm) and β' = β h² (1-αf)/(1-αm) of (G5), the families' state
    for this step size (ElementFamily.begin_step, e.g. a rigid cut's penalty) and the lazy acceptance:
    on a matrix factor without element state, and not where the compiled iterates evaluate every
    accepted iterate for the work integrals."""
    c_a = (1 - integ.af) / (1 - integ.am)
    gp = integ.gamma * h * c_a
    bp = integ.beta * h * h * c_a
    elements = st.elements
    if integ.asm.with_state:
        elements = integ.asm.begin_step(st, StepContext(h, gp, bp, integ.free))
    lazy = (integ.lazy_accept and not integ.asm.with_state and (integ.chol is None or integ.chol.kind != "tree")
            and not (integ.element_step is not None and integ._work_needs_forces))
    return BegunStep(st, a, h, t1, gp, bp, elements, lazy)


@dataclass
class _Newton:
    """The running state of one step's Newton loop: the iterate's accelerations ``udot1`` (and those it
    started from), its pseudo-acceleration ``a1``, trial state ``st1`` and evaluation ``ev`` (None with the
    compiled iterates until asked for), its residual ``r`` on the free coordinates (``r_all``: all of
    them) and max norm ``rn``; the residual history, the correction sizes ``dxs`` since the last
    factorization and their node motions ``dxws``; the tolerances of (G7)."""

    udot1: np.ndarray
    udot_start: np.ndarray
    elements: dict
    a1: np.ndarray | None = None
    st1: State | None = None
    ev: Evaluation | None = None
    r_all: np.ndarray | None = None
    r: np.ndarray | None = None
    rn: float = math.nan
    es_scale: float = math.nan
    settled: bool = True
    noise: float = 0.0
    nfac: int = 0
    fresh: bool = False  # factor computed during this step
    restarted: bool = False
    predicted: bool = False  # the last correction predicts the next one below tolerance (G9)
    scale: float = math.nan
    dx_tol: float = math.nan
    vscale: float = math.nan
    r_hist: list[float] = field(default_factory=list)
    dxs: list[float] = field(default_factory=list)
    dxws: list[float] = field(default_factory=list)


def newton_step(integ: Integrator, b: BegunStep) -> StepResult:
    """The begun step's Newton loop in Python: from the predictor (G6), iterates (G2)–(G4) with their
    residuals of eq. (1) until (G7) or (G9) holds and every family has settled, correcting by (G8) with
    the factor refreshed by (G10). Raises NewtonFailure after ``max_iter`` iterations or on divergence,
    SolverError at a non-finite residual (named by flexmb.solvers.nonfinite)."""
    es = integ.element_step
    if es is not None:  # the compiled iterates begin from (st, a) with the begun families' state
        es.begin(b.st, b.a, b.h, b.t1, (integ.am, integ.af, integ.gamma, integ.beta, b.h), b.elements)
    n = _Newton(b.st.udot.copy(), b.st.udot.copy(), b.elements)  # the predictor (G6)
    for it in range(integ.max_iter + 1):
        n.settled = True
        done = _compiled_iterate(integ, b, n, it) if es is not None else _python_iterate(integ, b, n, it)
        if done is not None:
            return done
        if not math.isfinite(n.rn):  # max propagates NaN and inf
            m = integ.model
            source = (evaluation_source(m, n.st1, n.ev, n.udot1)
                      or f"residual of {_names(m, integ.free[~np.isfinite(n.r)])}")
            raise nonfinite_error(b.t1, source)
        n.r_hist.append(n.rn)
        if it == 0:
            _tolerances(integ, b, n)
        if (n.rn <= integ.rtol * n.scale or n.predicted) and n.settled:
            return _converged(integ, b, n, it)
        diverging = len(n.r_hist) > 3 and n.rn > 1e3 * min(n.r_hist)
        if not n.fresh and (diverging or len(n.dxs) >= integ.reuse_iterations) and not n.restarted:
            _restart(integ, b, n)  # an old factor led the iteration astray or too slowly (G10)
            continue
        if it == integ.max_iter or diverging:
            raise _failure(integ, b, n, it)
        _correct(integ, b, n)
    raise AssertionError("unreachable")


def _python_iterate(integ: Integrator, b: BegunStep, n: _Newton, it: int) -> StepResult | None:
    """Iterate ``it`` in Python: the trial state of (G2)–(G4) at the accelerations n.udot1 (one compiled
    pass, numpy's arithmetic), the drives applied, its evaluation and residual of eq. (1) and the
    families' Newton update; the step itself where the last correction predicted convergence (G9: taken
    without its evaluation, LazyEvaluation) or there is no unknown."""
    st, m = b.st, integ.model
    n_u = st.u.size
    a1, hdq, u1 = np.empty(n_u), np.empty(n_u), np.empty(n_u)
    _update(st.udot, n.udot1, b.a, st.u, integ.am, integ.af, integ.gamma, integ.beta, b.h, a1, hdq, u1)
    st1 = integ._trial(st, hdq, u1, n.udot1, b.t1)
    if integ.asm.with_state:
        st1.elements = n.elements
    st1.apply_drives(m, b.t1)
    n.udot1, n.a1 = st1.udot, a1
    if b.lazy and n.predicted:  # taken without its evaluation, computed when used (LazyEvaluation); the
        # error estimate takes the last evaluated iterate's kinematics unless the work will evaluate this
        # state anyway (as the compiled iterates do in the step: the same estimate)
        near = None if integ._work_needs_forces else n.ev.kin
        return st1, a1, LazyEvaluation(integ.asm, st1, near), StepInfo(it, n.nfac, math.nan, b.h)
    ev = integ._evaluate(st1)
    n.noise = ev.position_noise
    if integ.asm.with_state:  # e.g. augmented-Lagrangian multipliers (flexmb.elements, newton_update)
        n.elements, n.settled, changed = integ.asm.newton_update(ev, st1)
        if changed:  # a family's blocks changed: refactorize
            integ._factor_key = None
    n.st1, n.ev = st1, ev
    if not integ.free.size:
        st1, a1, ev = accept(integ, b, st1, ev, n.elements, a1)
        return st1, a1, ev, StepInfo(it, n.nfac, 0.0, b.h)
    n.r_all = ev.residual(n.udot1)
    n.r = n.r_all[integ.free]
    n.rn = _absmax(n.r)
    return None


def _compiled_iterate(integ: Integrator, b: BegunStep, n: _Newton, it: int) -> StepResult | None:
    """Iterate ``it`` by the compiled element step (ElementStep.iterate: the same (G2)–(G4) and residual
    as :func:`_python_iterate`, State and Evaluation built only when used) with the rigid cuts' update;
    the step itself where the last correction predicted convergence (G9)."""
    es = integ.element_step
    t0 = _time.perf_counter()
    n.rn, n.es_scale = es.iterate(n.udot1, not (b.lazy and n.predicted), it == 0)
    integ.timings["assembly"] += _time.perf_counter() - t0
    n.a1, n.udot1 = es.a1, es.udot
    if b.lazy and n.predicted:  # as _python_iterate
        st1 = es.state()
        return st1, n.a1, LazyEvaluation(integ.asm, st1, es.kinematics()), StepInfo(it, n.nfac, math.nan, b.h)
    n.st1 = n.ev = None
    n.r_all, n.r = es.rfull, es.r
    n.settled, changed, n.noise, stuck = es.cut_flags  # the rigid cuts' update at this iterate (newton_update)
    if stuck >= 0:
        raise stuck_error(es, b.t1)  # the rigid cut's, actuator's or coupling's message (element_families.py)
    if changed:
        integ._factor_key = None
    if integ.asm.with_state:
        n.elements = es.elements()
    if not math.isfinite(n.rn):
        n.st1, n.ev = es.state(), es.evaluation()
    return None


def _tolerances(integ: Integrator, b: BegunStep, n: _Newton) -> None:
    """The first iterate's tolerances (G7): the force scale F of the residual test, the correction
    tolerance δ_tol (corrections this small change the accelerations by < rtol/10 of their size and the
    velocities by h times that) and the velocity scale of the round-off test of (G9)."""
    n.scale = n.es_scale if integ.element_step is not None else integ._scale(n.ev, n.udot1)
    udot_max, u_max = _absmax_at(n.udot1, integ.free), _absmax_at(b.st.u, integ.free)
    n.dx_tol = integ.atol_udot + 0.1 * integ.rtol * (udot_max + u_max / b.h)
    n.vscale = u_max + b.h * udot_max + 1e-3 * integ.length_scale / b.h


def _converged(integ: Integrator, b: BegunStep, n: _Newton, it: int) -> StepResult:
    """The converged iterate ``it`` accepted (:func:`accept`), its residual of eq. (1) known."""
    es = integ.element_step
    if es is not None:
        st1, ev = es.state(), es.evaluation()  # eq. (1) at its u̇ known
    else:
        st1, ev = n.st1, n.ev
        ev.residual_known = (n.udot1, n.udot1.copy(), n.r_all)
    st1, a1, ev = accept(integ, b, st1, ev, n.elements, n.a1)
    return st1, a1, ev, StepInfo(it, n.nfac, n.rn, b.h)


def _restart(integ: Integrator, b: BegunStep, n: _Newton) -> None:
    """Restart the step from its predictor with a fresh factor (G10), once per step."""
    n.restarted = True
    n.udot1 = n.udot_start.copy()
    n.elements = b.elements
    if integ.element_step is not None:
        integ.element_step.restart()
    integ._factor_key = None
    n.r_hist.clear()
    n.dxs.clear()
    n.dxws.clear()
    n.predicted = False


def _failure(integ: Integrator, b: BegunStep, n: _Newton, it: int) -> NewtonFailure:
    """The NewtonFailure of a step that did not converge: its time, iterations, residual history and
    the coordinates of the largest residuals, with the families' notes (Assembler.newton_failure)."""
    m, free, ev = integ.model, integ.free, n.ev
    worst = free[np.argsort(-np.abs(n.r))[:3]]
    if ev is None and integ.element_step is not None and integ.asm.with_state:
        ev = integ.element_step.evaluation()
    notes = functools.partial(integ.asm.newton_failure, ev) if ev is not None and integ.asm.with_state else list
    return NewtonFailure(
        f"t = {b.t1:.6g}: Newton did not converge in {it} iterations (residual {n.rn:.3e}, "
        f"history {', '.join(f'{x:.1e}' for x in n.r_hist[-4:])}); largest residuals in "
        f"{_names(m, worst)}", b.t1, notes)


def _correct(integ: Integrator, b: BegunStep, n: _Newton) -> None:
    """The correction of (G8), S δu̇ = r, u̇ ← u̇ - δu̇, on a factor refreshed where (G10) asks (new step
    weights, no reuse, or a contraction rate θ above ``theta_refresh``), and the prediction of (G9)."""
    gp, bp = b.gp, b.bp
    dxs = n.dxs
    theta = dxs[-1] / dxs[-2] if len(dxs) > 1 and dxs[-2] > 0 else np.inf  # contraction rate
    slow = not n.fresh and theta != np.inf and theta > integ.theta_refresh
    if integ._factor_key != (gp, bp) or (not n.fresh and not integ._reusing()) or slow:
        integ._t = b.t1
        integ._factorize(n.ev, gp, bp, n.st1)
        n.nfac += 1
        n.fresh = True
        dxs.clear()  # the contraction rate restarts with the new factor
        n.dxws.clear()
    dx = integ._solve(n.r)
    n.udot1, dx_max = corrected(n.udot1, integ.free, dx)
    dxs.append(dx_max)
    n.predicted = _predicts_convergence(dxs, n.dx_tol, bp, gp, integ._eps_pos, n.vscale)
    if n.noise > 0.0:  # a family's round-off sets a floor (FamilyEvaluation.position_noise)
        n.dxws.append(float(np.abs(dx * integ._lever).max(initial=0.0)))
        n.predicted = n.predicted or _at_noise(n.dxws, bp, n.noise)


def accept(integ: Integrator, b: BegunStep, st1: State, ev: Evaluation, elements: dict, a1: np.ndarray
           ) -> tuple[State, np.ndarray, Evaluation]:
    """The converged state (G11) with the element families' internal state, after their end-of-step
    corrections (ElementFamily.end_step; nothing to do for stateless families), its pseudo-acceleration
    of (G2) at the corrected u̇ and its evaluation."""
    if not integ.asm.with_state:
        return st1, a1, ev
    st1.elements = elements
    gp, bp = b.gp, b.bp
    # the drive forces of the step are those of its converged iterate: the projections below correct velocities
    # and accelerations by the cuts' impulses, which the drives do not supply (docs/rigid_cut.md (AL10))
    drive = ev.residual(st1.udot)[integ.model.driven] if integ.model.driven.size else None

    def solve(r: np.ndarray) -> np.ndarray:
        if integ._factor_key != (gp, bp):
            integ._factorize(ev, gp, bp, st1)
        return integ._solve(r)

    projection = []  # the projection matrix's factor, made when first asked for (once per step)

    def solve_projection(r: np.ndarray) -> np.ndarray:
        if not projection:
            projection.append(integ._projection_factor(ev, bp))
        t0 = _time.perf_counter()
        x = projection[0].solve(r)
        integ.timings["solve"] += _time.perf_counter() - t0
        return x

    integ.asm.end_step(ev, st1, StepContext(b.h, gp, bp, integ.free, solve, solve_projection, ev.project, ev.twists,
                                            integ._evaluate, integ._kinematics))
    st = b.st
    a1 = (integ.af * st.udot + (1 - integ.af) * st1.udot - integ.am * b.a) / (1 - integ.am)
    ev1 = integ._evaluate(st1)
    ev1.drive_forces = drive
    return st1, a1, ev1


def _predicts_convergence(dxs: list[float], dx_tol: float, bp: float, gp: float, eps_pos: float, vscale: float) -> bool:
    """Whether the corrections so far (their sizes ``dxs`` since the last factorization) predict the
    next one below tolerance, so the current iterate is converged without evaluating its residual (G9):
    the next correction estimated from the contraction rate θ (Hairer & Wanner IV.8; with an old
    factor Newton converges linearly and the same estimate holds) is at most ``dx_tol``, or it moves
    positions (β' times it) and velocities (γ' times it) only at round-off level (stiff elements make
    the residual itself noisy at about eps × stiffness × size)."""
    theta = dxs[-1] / dxs[-2] if len(dxs) > 1 and dxs[-2] > 0 else np.inf
    nxt = theta / (1 - theta) * dxs[-1] if theta < 0.5 else (dxs[-1] if dxs else np.inf)
    return nxt <= dx_tol or (bp * nxt <= eps_pos and gp * nxt <= 1e-11 * vscale)


def _at_noise(dxws: list[float], bp: float, noise: float) -> bool:
    """Whether Newton has reached the round-off floor of a family (FamilyEvaluation.position_noise,
    eq. (N1) of docs/rigid_cut.md): three corrections since the last factorization, the last no
    smaller than a tenth of the one two before (they no longer contract), and it moves the nodes
    (β' times its node acceleration ``dxws[-1]``) by at most ``noise`` [m]."""
    return len(dxws) >= 3 and dxws[-1] >= 0.1 * dxws[-3] and bp * dxws[-1] <= noise


def _names(model: Model, idx: np.ndarray | int) -> list[str]:
    """The names of the coordinates ``idx`` (for messages)."""
    return [model.coordinate_names[i] for i in np.atleast_1d(idx)]
