"""Static equilibrium: Newton iterations on the generalized forces with load stepping.

Solves  r(q; λ) = B^T (bias - λ f_ext) - tau = 0  for the free coordinates at u = 0 (docs/equations_of_motion.md §3, eq. (1)
of flexmb/engine/assembly.py with udot = 0): gravity, nodal loads and applied joint forces are scaled
by the load factor λ, which goes from 0 to 1 in load steps; each step's Newton iteration starts from
the previous equilibrium. With elements (beams, bushings) the tangent is their assembled consistent
stiffness B^T K B plus the joint springs (sparse); for rigid trees it is formed by central
differences of the residual along the Lie-group retraction (one residual pair per free coordinate).

Load steps are either fixed (``load_steps=n``: λ = 1/n, 2/n, …, 1) or chosen by the solver
(``load_steps="auto"``, the default), a continuation in λ with the increment rule

    Δλ_0 = 1 (the whole load in one step);
    Newton fails (no convergence in ``max_iter`` iterations, non-finite residual or step,
        singular tangent)  ->  back to the last equilibrium, Δλ <- Δλ / 2;
    Newton converges in n <= 4 iterations  ->  λ <- λ + Δλ, Δλ <- 2 Δλ;
    converges in n > 4 iterations          ->  λ <- λ + Δλ, Δλ unchanged;
    (Δλ is cut to 1 - λ at the end; the solve is refused when Δλ would fall below ``min_increment``)

so an easy problem is one step, and a hard one (the 16-element cantilever rolled into a circle by
its end moment 2πEI/L, which fails in one or two fixed steps) finds its own steps: there the
increments 1 and 1/2 fail (50 iterations each), and λ = 0.25, 0.5, 0.75, 1 converge in 13
iterations each (tests/test_beam.py::test_rollup_finds_its_own_load_steps).

Rigid cuts, prescribed-length actuators and rigid couplings are held by the method of multipliers
(docs/statics.md §2; flexmb/solvers/statics_constraints.py): each load step solves the residual with the
constraints' forces λ + αΦ at fixed λ (ST4), updates λ ← λ + αΦ (ST5) and solves again until every row
is closed to its family's tolerance (ST7), the penalty α chosen once from the loads' scale (ST6) and
raised tenfold where the closure falls slowly. Their forces are reported in the result (ST9). Above
FD_TANGENT_LIMIT free coordinates the assembled tangent gains the constraint forces' geometric stiffness
and the weights' and nodal loads' (ST10; flexmb/solvers/constraint_stiffness.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from flexmb.elements import has_element_forces
from flexmb.engine.assembly import Assembler
from flexmb.errors import ModelError, SolverError
from flexmb.model import Model
from flexmb.solvers.constraint_stiffness import geometric_stiffness
from flexmb.solvers.statics_constraints import MAX_GROWTH, MAX_UPDATES, SLOW, StaticConstraints, _rows
from flexmb.state import State

__all__ = ["StaticResult", "static_equilibrium"]

#: Newton iterations at or below which the automatic load stepping doubles its increment
FAST_ITERATIONS = 4
#: with rigid cuts, actuators or rigid couplings, the tangent is formed by central differences (exact,
#: the constraint forces' geometric terms included) up to this many free coordinates
FD_TANGENT_LIMIT = 64


@dataclass
class StaticResult:
    """Equilibrium found by :func:`static_equilibrium`.

    ``state``: the equilibrium State (u = udot = 0; drives at their values at ``t``);
    ``x`` (N,3), ``R`` (N,3,3): node positions and rotations there; ``load_factors``: the load
    factor λ reached by each accepted load step (the last is 1); ``iterations``: Newton
    iterations of each accepted step; ``rejected``: load factors that were tried and failed
    (automatic stepping halved the increment there); ``residual``: largest generalized-force
    residual at the end [N or N m]. With rigid cuts, prescribed-length actuators or rigid couplings
    (docs/statics.md §2): ``constraint_forces`` their forces by family and name (ST9; read them as
    :attr:`actuator_forces`, :attr:`cut_forces`, :attr:`coupling_forces`), ``multiplier_updates`` the
    multiplier updates (ST5) of each accepted step, ``closure`` the largest closure over its tolerance
    at the end (at most 1). ``newton_residuals``: the largest residual of every Newton iterate [N or N m],
    one tuple per Newton solve (rejected load steps included; with constraints one solve per multiplier
    update): its ratios show the convergence rate (quadratic: each about the square of the last, relative
    to the force scale).
    """

    state: State
    x: np.ndarray
    R: np.ndarray
    load_factors: np.ndarray
    iterations: np.ndarray
    rejected: tuple[float, ...]
    residual: float
    node_names: tuple[str, ...]
    constraint_forces: dict[str, dict] = field(default_factory=dict)
    multiplier_updates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))
    closure: float = 0.0
    newton_residuals: tuple[tuple[float, ...], ...] = ()

    @property
    def total_iterations(self) -> int:
        """Newton iterations of the accepted steps, summed."""
        return int(self.iterations.sum())

    @property
    def actuator_forces(self) -> dict[str, float]:
        """Each prescribed-length actuator's tension at equilibrium [N] by name (positive pulling its
        points together, negative pushing; docs/actuator.md (A4))."""
        return dict(self.constraint_forces.get("actuator", {}))

    @property
    def cut_forces(self) -> dict[str, np.ndarray]:
        """Each rigid cut's force and moment on its end b at the cut point, in the cut's axes (6,) [N, N m],
        by name (as ``Result.cut_force``)."""
        return dict(self.constraint_forces.get("rigid_cut", {}))

    @property
    def cut_forces_global(self) -> dict[str, np.ndarray]:
        """The same wrenches as :attr:`cut_forces` in global axes (as ``Result.cut_force_global``)."""
        return dict(self.constraint_forces.get("rigid_cut_global", {}))

    @property
    def coupling_forces(self) -> dict[str, float]:
        """Each coupling's force f (docs/coupling.md (C2): −f on q_b, r f on q_a) by name, in a model with
        rigid couplings."""
        return dict(self.constraint_forces.get("coupling", {}))

    def node_position(self, name: str) -> np.ndarray:
        """Position (3,) of the node called ``name``."""
        try:
            return self.x[self.node_names.index(name)]
        except ValueError:
            raise ModelError(f"unknown node '{name}'. Known nodes: {list(self.node_names)[:20]}.") from None


class _NewtonFailure(Exception):
    """One load step's Newton iteration failed (internal: the caller halves or raises)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def static_equilibrium(
    model: Model,
    load_steps: int | str = "auto",
    tol: float = 1e-10,
    max_iter: int = 50,
    state: State | None = None,
    t: float = 0.0,
    min_increment: float = 1.0 / 2**16,
) -> StaticResult:
    """Equilibrium of ``model`` under its loads at time ``t`` (drives held at q(t)), from
    ``state`` (default: the model's initial state).

    ``load_steps``: ``"auto"`` (the increment rule of the module docstring: start with the whole
    load, halve the increment where Newton fails, double it after a step that converged in at most
    4 iterations; give up below ``min_increment``) or a number n of equal steps. Each step converges
    when the largest residual is at most ``tol`` times the force scale (largest of the loads and
    joint forces, at least 1) or the Newton step stalls below 1e-13 of the coordinates; at most
    ``max_iter`` iterations per step. Rigid cuts, prescribed-length actuators (at L(t)) and rigid
    couplings are held by multiplier updates around the Newton solves (docs/statics.md (ST4)-(ST8)).
    Returns a :class:`StaticResult` (``.state``, ``.x``, ``.load_factors``, ``.iterations``, the
    constraints' forces ``.actuator_forces``, ``.cut_forces``, ``.coupling_forces``). Raises SolverError
    naming the load factor and the coordinates that do not converge, or the constraint that does not
    close; ModelError for a model with an element family whose internal state statics cannot hold.
    """
    auto = _check_steps(load_steps, min_increment)
    asm = Assembler(model, exact_tangent=True)
    cons = StaticConstraints(model, asm)
    st = _at_rest(model, state, t)
    free = model.free_u
    steps = _Steps([], [], [], [])
    history: list[list[float]] = []
    if free.size:
        solver = _Newton(model, asm, free, tol, max_iter, cons)
        history = solver.history
        if cons.active:
            st = solver.penalties(st)
        if not auto:
            st = _equal_steps(solver, st, load_steps, t, steps)
        else:
            st = _auto_steps(solver, st, min_increment, t, steps)
    ev = asm.evaluate(st)
    res = float(np.abs(ev.residual(st.udot)[free]).max(initial=0.0))
    forces = cons.forces(asm, ev) if cons.active else {}
    closure = cons.closure(ev)[0] if cons.active else 0.0
    return StaticResult(st, ev.kin.x + model.origin, ev.kin.R, np.array(steps.lams, dtype=float),
                        np.array(steps.iterations, dtype=int), tuple(steps.rejected), res, model.node_names, forces,
                        np.array(steps.updates, dtype=int), closure, tuple(tuple(h) for h in history))


def _check_steps(load_steps: int | str, min_increment: float) -> bool:
    """Whether the load steps are automatic; a ValueError for settings out of range."""
    auto = isinstance(load_steps, str)
    if auto and load_steps != "auto":
        raise ValueError(f"load_steps = {load_steps!r}: give 'auto' or a positive integer number of steps")
    if not auto and not (isinstance(load_steps, (int, np.integer)) and not isinstance(load_steps, bool) and load_steps >= 1):
        raise ValueError(f"load_steps = {load_steps!r}: give 'auto' or a positive integer number of steps")
    if not (isinstance(min_increment, (int, float)) and 0 < min_increment <= 1):
        raise ValueError(f"min_increment = {min_increment!r} must be a number in (0, 1]")
    return auto


def _at_rest(model: Model, state: State | None, t: float) -> State:
    """The start of the static solution: ``state`` (default: the model's initial state) at time ``t``, at rest,
    the driven coordinates at their drives' positions."""
    st = (model.initial_state() if state is None else state.copy())
    st.t = t
    st.u[:] = 0.0
    st.udot[:] = 0.0
    st.apply_drives(model, t)
    st.u[model.driven] = 0.0
    st.udot[model.driven] = 0.0
    return st


class _Steps(NamedTuple):
    """The load steps taken so far (lists the load stepping appends to)."""

    lams: list[float]  # the load factor each step reached
    iterations: list[int]  # its Newton iterations
    updates: list[int]  # its multiplier updates (docs/statics.md (ST4)-(ST8))
    rejected: list[float]  # the load factors of the automatic steps that failed

    def add(self, lam: float, n: int, k: int) -> None:
        """Record a converged step to load factor ``lam`` in ``n`` iterations and ``k`` updates."""
        self.lams.append(lam)
        self.iterations.append(n)
        self.updates.append(k)


def _equal_steps(solver: _Newton, st: State, load_steps: int, t: float, steps: _Steps) -> State:
    """The equilibrium after ``load_steps`` equal load steps from ``st``, each recorded in ``steps``."""
    for step in range(1, load_steps + 1):
        lam = step / load_steps
        try:
            st, n, k = solver.solve(st, lam)
        except _NewtonFailure as exc:
            raise SolverError(exc.message + (" Use more load_steps." if "converge" in exc.message else ""),
                              t) from None
        steps.add(lam, n, k)
    return st


def _auto_steps(solver: _Newton, st: State, min_increment: float, t: float, steps: _Steps) -> State:
    """The equilibrium after automatic load steps from ``st`` (the increment rule of the module docstring:
    start with the whole load, halve the increment where Newton fails, double it after a step that converged
    in at most FAST_ITERATIONS iterations; give up below ``min_increment``), each recorded in ``steps``."""
    lam, dlam = 0.0, 1.0
    while lam < 1.0:
        target = 1.0 if dlam >= 1.0 - lam else lam + dlam
        try:
            st, n, k = solver.solve(st, target)
        except _NewtonFailure as exc:
            steps.rejected.append(target)
            dlam *= 0.5
            if dlam < min_increment:
                raise SolverError(
                    f"{exc.message} Automatic load stepping gave up at load factor {lam:.6g}: the increment "
                    f"{2 * dlam:.3g} failed and min_increment = {min_increment:.3g} ({len(steps.rejected)} failed "
                    "tries).", t) from None
            continue
        steps.add(target, n, k)
        lam = target
        if n <= FAST_ITERATIONS:
            dlam *= 2.0
    return st


class _Newton:
    """Newton iterations on r(q; λ) = 0 over the coordinates ``free`` (module docstring), with the
    constraints' multiplier updates around them (docs/statics.md (ST4)-(ST8))."""

    def __init__(self, model: Model, asm: Assembler, free: np.ndarray, tol: float, max_iter: int,
                 cons: StaticConstraints) -> None:
        self.model, self.asm, self.free, self.tol, self.max_iter, self.cons = model, asm, free, tol, max_iter, cons
        # with elements: their assembled tangent B^T K B (+ joint springs); otherwise (rigid trees), and with
        # constraints on small models, central differences of the residual along the retraction
        self.use_elements = has_element_forces(model) and not (cons.active and free.size <= FD_TANGENT_LIMIT)
        self.k_diag = asm.stiffness_damping_diag(free)[0]
        self.history: list[list[float]] = []  # the largest residual of every iterate, per Newton solve

    def tangent(self, st: State, ev, lam: float):
        """The static tangent ∂r/∂q at ``st`` (evaluated as ``ev``) on the free coordinates: sparse
        assembled (with constraints plus their forces' and the loads' stiffness, docs/statics.md (ST10)), or
        dense by central differences."""
        if self.use_elements:
            K = sp.csc_matrix(self.asm.iteration_matrix(ev, self.free, 0.0, 1.0, self.k_diag, with_mass=False))
            if self.cons.active:  # (ST10): the constraint forces' geometric stiffness at this iterate's forces
                forces = [_rows(f.name, self.model, d, prep, ev.elements[f.name]).force
                          for f, d, prep in self.cons.families]
                K = K + sp.csc_matrix(geometric_stiffness(self.model, self.asm, self.cons, st, forces, self.free,
                                                                     load_factor=lam))
            return K
        return _fd_tangent(self.model, self.asm, st, lam, self.free)

    def penalties(self, st: State) -> State:
        """``st`` with the constraints' penalties (ST6): from the force scale of the model without its
        constraints, at full load."""
        off = self.cons.switched_off(st)
        ev0 = self.asm.evaluate(off, load_factor=1.0)
        return self.cons.with_penalties(st, ev0, self.free, max(_force_scale(ev0), 1e-300))

    def solve(self, st: State, lam: float) -> tuple[State, int, int]:
        """Equilibrium at load factor ``lam`` from ``st``: (state, Newton iterations, multiplier updates);
        with constraints the method of multipliers (ST5) around Newton solves until every row is closed
        (ST7). Raises _NewtonFailure."""
        if not self.cons.active:
            st, n = self._newton(st, lam)
            return st, n, 0
        st = self.cons.resumed(st)
        total, last, grown = 0, np.inf, 1.0
        for k in range(MAX_UPDATES + 1):
            st, n = self._newton(st, lam)
            total += n
            ev = self.asm.evaluate(st, load_factor=lam)
            worst, text = self.cons.closure(ev)
            if worst <= 1.0:
                return self.cons.updated(st, ev, accept=True), total, k  # (ST8)
            slow = worst > SLOW * last
            if k == MAX_UPDATES or (slow and grown >= MAX_GROWTH):
                raise _NewtonFailure(
                    f"static solve, load factor {lam:.3g}: the constraints do not close: {text} after {k} multiplier "
                    f"updates, the penalties raised {grown:.0e} times (the mechanism cannot take the prescribed lengths "
                    "or closure there: beyond its reach, at a dead point or a singular configuration of its loops).")
            last = worst
            st = self.cons.updated(st, ev)  # (ST5)
            if slow:  # (ST7)
                st, grown = self.cons.escalated(st, 10.0), 10.0 * grown
        raise AssertionError("unreachable")  # pragma: no cover

    def _newton(self, st: State, lam: float) -> tuple[State, int]:
        """Newton iterations at load factor ``lam`` (the constraints' multipliers held): (state, iterations)."""
        model, asm, free = self.model, self.asm, self.free
        last_dx = np.inf
        self.history.append([])
        for it in range(self.max_iter + 1):
            ev = asm.evaluate(st, load_factor=lam)
            r = ev.residual(st.udot)[free]
            self.history[-1].append(float(np.abs(r).max(initial=0.0)))
            scale = _force_scale(ev) + 1e-300
            if not np.all(np.isfinite(r)):
                raise _NewtonFailure(f"static solve, load factor {lam:.3g}: non-finite residual.")
            if np.abs(r).max() <= self.tol * max(scale, 1.0) or last_dx <= 1e-13 * (1.0 + np.abs(st.q).max(initial=0.0)):
                return st, it
            if it == self.max_iter:
                worst = [model.coordinate_names[free[i]] for i in np.argsort(-np.abs(r))[:3]]
                raise _NewtonFailure(
                    f"static solve did not converge at load factor {lam:.3g} after {self.max_iter} iterations "
                    f"(residual {np.abs(r).max():.3e}); largest residuals in {worst}.")
            try:
                K = self.tangent(st, ev, lam)
                dx = spla.spsolve(K, -r) if self.use_elements else np.linalg.solve(K, -r)
                if not np.all(np.isfinite(dx)):
                    raise np.linalg.LinAlgError
            except (np.linalg.LinAlgError, RuntimeError):
                raise _NewtonFailure(f"static solve: singular tangent at load factor {lam:.3g} (a mechanism with "
                                     "no stiffness against its loads has no static equilibrium).") from None
            last_dx = float(np.abs(dx).max())
            dq = np.zeros(model.n_u)
            dq[free] = dx
            st = st.retract(model, dq)
        raise AssertionError("unreachable")  # pragma: no cover


def _force_scale(ev) -> float:
    """The generalized force scale of an evaluation: largest |Bᵀ bias| plus largest |τ| [N or N m]."""
    return float(np.abs(ev.project(ev.bias)).max(initial=0.0) + np.abs(ev.tau).max(initial=0.0))


def _fd_tangent(model: Model, asm: Assembler, st: State, lam: float, free: np.ndarray) -> np.ndarray:
    K = np.empty((free.size, free.size))
    eps = 1e-6
    for j, k in enumerate(free):
        dq = np.zeros(model.n_u)
        dq[k] = eps
        rp = asm.evaluate(st.retract(model, dq), load_factor=lam).residual(st.udot)[free]
        rm = asm.evaluate(st.retract(model, -dq), load_factor=lam).residual(st.udot)[free]
        K[:, j] = (rp - rm) / (2 * eps)
    return K
