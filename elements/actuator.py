"""Prescribed-length linear actuators (a hydraulic cylinder's stroke, an electric linear axis): the
``"actuator"`` element family. The equations, (A1)-(A9), are derived in docs/actuator.md; the
arithmetic is in elements/actuator_kernels.py, the constraint rows as operators (with the rigid cuts'
rows, which the start closes together with the actuators') in elements/actuator_rows.py.

An actuator joins a point p_a carried by node a (or fixed on ground) and a point p_b carried by node
b, like a spring-damper (docs/spring_damper.md (S1)-(S3): length l, direction n, G = ∂l/∂X, rate
l' = G V), and holds the scalar constraint

    Φ(q, t) = l(q) - L(t) = 0                                                              (A3)

by the index-3 augmented Lagrangian of the rigid cuts (docs/rigid_cut.md (AL1)-(AL11)): the force
F = λ + αΦ (tension positive) enters the residual as Gᵀ F (A4), λ is updated at every iterate after
the first (A5), the penalty is α = κ m_ref / β' per step with m_ref = 1 / (G M̄⁻¹ Gᵀ) the actuator's
effective mass at the start (A6), its block ck α GᵀG (A7); a step is accepted when |Φ| is below the
tolerance, 1e-10 times the model's size (the rigid cuts' (AL4)), and the penalty grows tenfold where
the closure stagnates (AL11). After the step the velocities and accelerations are projected
mass-orthogonally onto

    G V = L'(t),     G a + Ġ V = L''(t)                                                     (A8)

(Ġ V in closed form, elements/actuator_kernels.velocity_product), the multiplier taking the
acceleration projection's impulse (AL9). At the start the points are brought to L(0) by mass-weighted
Newton steps, the velocities projected, and λ set by Gauss's principle (A9). The actuator's power
-F l' enters the energy balance as drive work (FamilyEvaluation.drive_power).

As an element family: two nodes per element (node a may be ground), a loop edge, blocks over its two
nodes, internal state (elements/actuator_kernels.py: the rigid cuts' columns and m_ref). Output
``length_rate_force`` into the spring-dampers' Result field (rows named by spring_damper_names after
the spring-dampers'; Result.actuator); drawn as a line p_a -> p_b of cell kind ``actuator``. The
compiled Newton step forms evaluate, newton_update and blocks with the same kernels
(flexmb/solvers/actuator_step.py, docs/actuator.md §7).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import actuator_kernels as kernels
from flexmb.elements.actuator_kernels import MREF, N_STATE
from flexmb.elements.actuator_rows import Line, Rows
from flexmb.elements.family import (
    NodeTable,
    PenaltyEvaluation,
    StartContext,
    StepContext,
    TwoNodeFamily,
    frozen_arrays,
    listing,
    ordered_sum,
    unstarted_state,
)
from flexmb.elements.rigid_cut import TOLERANCE, _elastic, _pinv
from flexmb.elements.rigid_cut_kernels import ESCALATION, KAPPA, PHASE, PREV, SMAX, S, rigid_cut_update
from flexmb.elements.rigid_cut_kernels import LAM as CUT_LAM
from flexmb.elements.spring_damper import (
    L_MIN,
    PointPairData,
    PointPairDrawing,
    PointPairEvaluation,
    length_rate_force,
    point_pair_arrays,
)
from flexmb.errors import SolverError, StartWarning

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import ActuatorSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["ActuatorData", "ActuatorEvaluation", "Actuators", "FAMILY"]

START_GAP = 1e-6  # a start whose length differs from L(0) beyond this fraction of the model's size warns


@dataclass(frozen=True, eq=False)
class ActuatorData(PointPairData):
    """Compiled prescribed-length actuators (``Model.elements["actuator"]``), eq. (A1)-(A3): the points
    of :class:`~flexmb.elements.spring_damper.PointPairData`, then:"""

    length0: np.ndarray  # distance of the points at assembly [m]                            (n_el)
    l_min: np.ndarray  # the shortest length with a direction, L_MIN length0 [m] (S11)      (n_el)
    tol: np.ndarray  # closure tolerance [m]: TOLERANCE times the model's size (AL4)          (n_el)
    length: tuple = ()  # per element its ScalarDrive: (L, L', L'')(t) [m, m/s, m/s²]         (n_el)

    def initial_state(self) -> np.ndarray:
        return unstarted_state(self.n, N_STATE, PHASE)


@dataclass
class ActuatorEvaluation(PointPairEvaluation, PenaltyEvaluation):
    """The actuators at one state: G, ``nv``, ``ra``, ``rb``, ``l``, ``ldot`` as for a spring-damper
    (:class:`~flexmb.elements.spring_damper.PointPairEvaluation`), closure ``phi``, penalty ``alpha`` (and
    ``alpha_next`` for the next matrix), multiplier ``lam`` and force ``force`` of this iterate ((n_el, 6),
    column 0; elements/actuator_kernels.py; :class:`~flexmb.elements.family.PenaltyEvaluation`), the
    prescribed (L, L', L'') ``target`` (n_el, 3), the closure's size ``ell`` (n_el,)."""

    target: np.ndarray | None = None
    ell: np.ndarray | None = None


class Actuators(PointPairDrawing, TwoNodeFamily):
    """The ``"actuator"`` family (module docstring)."""

    prescribes = True  # its power -F l' is drive work
    name = "actuator"
    label = "actuator"
    plural = "actuators"
    has_blocks = True
    has_state = True
    projection_blocks = True
    outputs = (length_rate_force("length l [m], its rate l' [m/s] and the actuator's force F (tension positive) [N] "
                                 "(docs/actuator.md (A4))"),)
    drawing_prefix = "actuator"  # cell_kind and drawing keys: PointPairDrawing
    builder_table = "actuators"

    def compile(self, records: Sequence[ActuatorSpec], nodes: NodeTable) -> ActuatorData:
        """End nodes, the points in their node frames (A1), the tolerance (AL4) and the length functions."""
        n = len(records)
        out = point_pair_arrays(records, nodes, "actuator")
        pts = np.concatenate([np.reshape(nodes.X0, (-1, 3))] + [np.stack([r.point_a, r.point_b]) for r in records])
        size = float(np.ptp(pts, axis=0).max(initial=0.0)) if pts.size else 0.0
        size = size if size > 0.0 and np.isfinite(size) else 1.0
        out["l_min"] = L_MIN * out["length0"]
        out["tol"] = np.full(n, TOLERANCE * size)
        out["length"] = tuple(r.length for r in records)
        return ActuatorData(**frozen_arrays(out))

    # ------------------------------------------------------------------ engine
    @staticmethod
    def _internal(data: ActuatorData, state: State) -> np.ndarray:
        st = state.elements.get(FAMILY.name) if state.elements else None
        return data.initial_state() if st is None else st

    @staticmethod
    def targets(data: ActuatorData, t: float) -> np.ndarray:
        """(L, L', L'') of every actuator at time ``t`` (n_el, 3); SolverError naming one that is not finite."""
        out = np.array([d(t) for d in data.length], dtype=float).reshape(data.n, 3)
        bad = ~np.isfinite(out).all(axis=1)
        if bad.any():
            e = int(np.argmax(bad))
            raise SolverError(f"t = {t:.6g}: actuator '{data.names[e]}': its length function gives (L, L', L'') = "
                              f"{out[e].tolist()}, not finite", t, hint="give a length that is finite over the run")
        return out

    def evaluate(self, model: Model, data: ActuatorData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> ActuatorEvaluation:
        """The forces λ + αΦ (A4) into the node wrenches, with the multiplier update (A5) at this
        iterate; the power -F l' as drive power; SolverError where the points meet (S11)."""
        ia, ib = prep
        n = data.n
        target = self.targets(data, state.t)
        G, nv, ra, rb = np.empty((n, 12)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3))
        l, ldot, ell = np.empty(n), np.empty(n), np.empty(n)
        phi, alpha, lam, force = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
        st = np.ascontiguousarray(self._internal(data, state), dtype=float)
        short, energy, noise = kernels.actuator_forces(kin.x, kin.R, kin.V, (ia, ib, data.sa, data.sb),
                                                       np.ascontiguousarray(target[:, 0]), data.l_min, st, w,
                                                       (G, nv, ra, rb, l, ldot), (phi, alpha, lam, force, ell))
        if short >= 0:
            raise self.short_error(data, short, l, state.t)
        return ActuatorEvaluation(strain_energy=float(energy), position_noise=float(noise),
                                  drive_power=float(ordered_sum(-force[:, 0] * ldot)), G=G, nv=nv, ra=ra, rb=rb, l=l,
                                  ldot=ldot, target=target, phi=phi, alpha=alpha, lam=lam, force=force, ell=ell)

    @staticmethod
    def short_error(data: ActuatorData, e: int, l: np.ndarray, t: float) -> SolverError:
        """The SolverError of actuator ``e`` shorter than its l_min (lengths ``l``) at time ``t`` (S11)."""
        return SolverError(f"t = {t:.6g}: actuator '{data.names[e]}' is {l[e]:.3g} m long: its two points meet, and the "
                           "direction of its force is undefined there (docs/actuator.md §1)", t,
                           hint="attach the actuator at points that stay apart, or prescribe a length that does")

    def blocks(self, model: Model, data: ActuatorData, prep: Any, fe: ActuatorEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """ck α GᵀG (A7), with the penalties of the next iterate (AL11)."""
        out = np.empty((data.n, 12, 12))
        kernels.actuator_blocks(fe.G, fe.matrix_penalties(), float(ck), out)
        return out

    def dissipates(self, data: ActuatorData) -> bool:
        return False

    def begin_step(self, model: Model, data: ActuatorData, prep: Any, state: State, ctx: StepContext) -> np.ndarray:
        """The step's penalty factor κ / β' (A6) and the first-iterate phase; λ stays that of the last step."""
        st = self._internal(data, state).copy()
        s = KAPPA / ctx.bp
        st[:, S], st[:, SMAX], st[:, PHASE], st[:, PREV] = s, ESCALATION * s, 0.0, np.inf
        return st

    def newton_update(self, model: Model, data: ActuatorData, prep: Any, fe: ActuatorEvaluation,
                      state: State) -> tuple[np.ndarray, bool, bool]:
        """(A5)'s multiplier for the next iterate, settled within the tolerance, α raised where the
        closure stagnates (the rigid cuts' kernel, (AL3), (AL4), (AL11)); SolverError naming an actuator
        whose length stays out of reach at its largest penalty."""
        st = np.ascontiguousarray(self._internal(data, state), dtype=float)
        nxt, alpha_next = np.empty_like(st), np.empty((data.n, 6))
        mask = np.zeros((data.n, 6), bool)
        mask[:, 0] = True
        scale = np.zeros((data.n, 6))
        scale[:, 0] = st[:, MREF]
        settled, changed, stuck = rigid_cut_update(st, fe.lam, fe.phi, mask, scale, data.tol, np.ones(data.n), fe.ell,
                                                   nxt, alpha_next)
        if stuck >= 0:
            raise SolverError(self._locked(data, fe, stuck, state.t), state.t)
        if changed:
            fe.alpha_next = alpha_next
        return nxt, bool(settled), bool(changed)

    @staticmethod
    def _locked(data: ActuatorData, fe: ActuatorEvaluation, e: int, t: float) -> str:
        return (f"t = {t:.6g}: actuator '{data.names[e]}' cannot reach its prescribed length L = {fe.target[e, 0]:.6g} m: "
                f"its length stays at {fe.l[e]:.6g} m (|l - L| = {abs(fe.phi[e, 0]):.3e} m, tolerance {data.tol[e]:.3g} m) "
                "with the penalty at its largest: the mechanism locks there (a dead point, or a length beyond its "
                "reach). Prescribe a length the mechanism can take (docs/actuator.md §5).")

    def newton_failure(self, model: Model, data: ActuatorData, prep: Any, fe: ActuatorEvaluation, ev: Any) -> list[str]:
        """The actuators farther from their length than the tolerance at ``fe`` (at most three, largest first)."""
        rel = np.abs(fe.phi[:, 0]) / data.tol
        return [f"actuator '{data.names[e]}' off its length L = {fe.target[e, 0]:.6g} m by {abs(fe.phi[e, 0]):.3e} m "
                f"(tolerance {data.tol[e]:.3g} m): the mechanism may lock there (docs/actuator.md §5)"
                for e in np.argsort(-rel)[:3] if rel[e] > 1.0]

    # ------------------------------------------------------------------ projections and start
    def end_step(self, model: Model, data: ActuatorData, prep: Any, fe: ActuatorEvaluation, state: State,
                 ctx: StepContext) -> None:
        """(AL8), then the velocity and acceleration projections onto (A8), the multiplier taking the
        latter's impulse (AL9)."""
        st = state.elements[self.name].copy()
        st[:, 0] = fe.force[:, 0]  # (AL8)
        st[:, PHASE] = -1.0
        state.elements = {**state.elements, self.name: st}
        alpha = fe.matrix_penalties()
        w = ctx.bp * alpha[:, 0]
        ops = Line(model, prep, fe)
        target = self.targets(data, state.t)
        free = ctx.free
        solve = ctx.solve_projection if _elastic(model, self.name) and ctx.solve_projection is not None else ctx.solve
        for _ in range(3):  # (AL5) with L'
            c = ops.rate(ctx.twists(state.u)) - target[:, 1]
            if np.abs(c).max(initial=0.0) <= 1e-14 * (np.abs(state.u).max(initial=0.0) + np.abs(target[:, 1]).max() + 1.0):
                break
            state.u[free] -= solve(ctx.project(ops.wrenches(w * c))[free])
        if ctx.evaluate is None and ctx.kinematics is None:
            return
        kin = ctx.kinematics(state) if ctx.kinematics is not None else ctx.evaluate(state).kin  # at the projected u
        gdv = ops.gdot_v(kin.V)
        for _ in range(3):  # (AL6), (AL9) with L''
            ca = ops.rate(ctx.twists(state.udot) + kin.zeta) + gdv - target[:, 2]
            if np.abs(ca).max(initial=0.0) <= 1e-14 * (np.abs(state.udot).max(initial=0.0) + np.abs(target[:, 2]).max() + 1.0):
                break
            state.udot[free] -= solve(ctx.project(ops.wrenches(w * ca))[free])
            st[:, 0] += w * (ops.rate(ctx.twists(state.udot) + kin.zeta) + gdv - target[:, 2])

    def start(self, model: Model, data: ActuatorData, prep: Any, state: State, ctx: StartContext) -> None:
        """The reference masses m_ref (A6), the points brought to L(0), the velocities projected, the
        multipliers of the constrained accelerations (A9), with the rigid cuts' rows where the model has
        them (their closure and multipliers made anew, jointly with the actuators'). A start farther than
        1e-6 of the model's size from L(0) warns (StartWarning) naming the actuator."""
        st = self._internal(data, state).copy()
        st[:, 0], st[:, S], st[:, PHASE] = 0.0, 0.0, -1.0
        state.elements = {**state.elements, self.name: st}
        ev = ctx.evaluate(state)
        _, W = Line(model, prep, ev.elements[self.name]).schur(ev, ctx.mass_solver(ev), ctx.free, model.n_u)
        d = np.diag(W).copy()
        regular = d > 1e-14 * max(float(d.max(initial=0.0)), 1e-300)
        fallback = float((1.0 / d[regular]).max()) if regular.any() else float(np.trace(ev.Mb[:, :3, :3]).sum() / 3 or 1.0)
        st[:, MREF] = np.where(regular, 1.0 / np.where(regular, d, 1.0), fallback)
        ev, rows, solve, Wp, gap = self._close(model, data, prep, state, ctx)
        self._report_start(model, data, ctx, gap)
        free = ctx.free
        cut = rows.cut_state(state)  # the rigid cuts' multipliers out of r0: both sets are made here
        if cut is not None:
            cut[:, CUT_LAM] = 0.0
        ev = ctx.evaluate(state)  # accelerations: the multipliers of Gauss's principle (A9)
        fe = ev.elements[self.name]
        rows = Rows(model, prep, ev, self.name)
        udot0 = state.udot.copy()
        udot0[free] = 0.0
        r0 = ev.residual(udot0)[free]
        c0 = rows.rate(ev.twists(udot0) + ev.kin.zeta) + rows.gdot_v(ev.kin) - rows.pad(fe.target[:, 2])
        y = np.zeros(model.n_u)
        y[free] = solve(r0)
        lam = Wp @ (c0 - rows.rate(ev.twists(y)))
        st[:, 0] = lam[:data.n]
        st[:, PHASE] = -1.0
        if cut is not None:
            rows.set_cut_multipliers(cut, lam[data.n:])

    def close(self, model: Model, data: ActuatorData, prep: Any, state: State, ctx: StartContext) -> None:
        """Bring ``state`` onto the prescribed lengths and their rates, with the rigid cuts' closure (dense
        output; docs/rigid_cut.md §6)."""
        self._close(model, data, prep, state, ctx)

    def between(self, data: ActuatorData, e0: np.ndarray, e1: np.ndarray, s: float) -> np.ndarray:
        """The multipliers interpolated linearly between the step's ends, the rest of ``e1``."""
        out = np.array(e1, dtype=float, copy=True)
        out[:, 0] = (1.0 - s) * np.asarray(e0)[:, 0] + s * np.asarray(e1)[:, 0]
        return out

    def _close(self, model: Model, data: ActuatorData, prep: Any, state: State, ctx: StartContext):
        """Positions onto l = L(t) (and the rigid cuts' closure) by mass-weighted Newton steps
        δq_f = -M̄⁻¹Jᵀ W⁺ Φ, then velocities onto G V = L'(t) (and the cuts' rates onto zero) (A9), J the
        actuators' rows G and the cuts' held rows (elements/actuator_rows.py); returns the last evaluation,
        its rows, the mass solver, W⁺ and the largest gap |l - L| found before closing per actuator.
        SolverError naming an actuator that cannot be closed."""
        free = ctx.free
        gap = None
        for it in range(31):
            ev = ctx.evaluate(state)
            fe = ev.elements[self.name]
            rows = Rows(model, prep, ev, self.name)
            if gap is None:
                gap = np.abs(fe.phi[:, 0])
            rel = np.abs(fe.phi[:, 0]) / data.tol
            if max(rel.max(initial=0.0), rows.cut_closure()) <= 1.0:
                break
            e = int(np.argmax(rel))
            if it == 30:
                raise SolverError(f"t = {state.t:.6g}: actuator '{data.names[e]}' cannot be brought to its length L = "
                                  f"{fe.target[e, 0]:.6g} m: after 30 mass-weighted Newton steps from a gap of {gap[e]:.3e} m "
                                  f"its length is {fe.l[e]:.6g} m: the mechanism cannot take that length (it locks, or "
                                  "the length is beyond its reach). Prescribe a length it can take (docs/actuator.md §5).",
                                  state.t)
            Z, W = rows.schur(ev, ctx.mass_solver(ev), free, model.n_u)
            dq = np.zeros(model.n_u)
            dq[free] = -Z @ (_pinv(W) @ rows.closure())
            if not np.isfinite(dq).all():
                raise SolverError(f"t = {state.t:.6g}: actuator '{data.names[e]}': the step toward its length L = "
                                  f"{fe.target[e, 0]:.6g} m from {fe.l[e]:.6g} m is not finite: the length is beyond any "
                                  "reach of the mechanism (docs/actuator.md §5).", state.t)
            moved = state.retract(model, dq)
            state.q, state.balls = moved.q, moved.balls
        solve = ctx.mass_solver(ev)
        Z, W = rows.schur(ev, solve, free, model.n_u)
        Wp = _pinv(W)
        target = rows.pad(fe.target[:, 1])
        for _ in range(3):  # velocities (a second pass takes the round-off of W⁺ away)
            c = rows.rate(ev.twists(state.u)) - target
            if np.abs(c).max(initial=0.0) <= 1e-15 * (np.abs(state.u).max(initial=0.0) + np.abs(target).max()):
                break
            state.u[free] -= Z @ (Wp @ c)
        return ev, rows, solve, Wp, gap

    def _report_start(self, model: Model, data: ActuatorData, ctx: StartContext, gap: np.ndarray) -> None:
        """The start's gaps in ``ctx.notes`` and a StartWarning where the start moved the model to L(0)."""
        if ctx.notes is not None:
            ctx.notes["actuator_gaps"] = {n: float(g) for n, g in zip(data.names, gap)}
        far = gap > START_GAP * model.size
        if far.any():
            e = int(np.argmax(gap))
            warnings.warn(f"actuator '{data.names[e]}': the assembled distance of its points differs from its length L(0) "
                          f"by {gap[e]:.4g} m; the start moved the mechanism to L(0) by the least mass-weighted motion. "
                          "If that is not the start you meant, give joint coordinates at that length.", StartWarning,
                          stacklevel=2)

    # ------------------------------------------------------------------ outputs and presentation
    def output(self, model: Model, data: ActuatorData, fe: ActuatorEvaluation | None, name: str) -> np.ndarray:
        """``length_rate_force``: (n_el, 3) of l, l' and the force F (A4)."""
        if name != "length_rate_force":
            return super().output(model, data, fe, name)
        return np.zeros((0, 3)) if fe is None else np.stack([fe.l, fe.ldot, fe.force[:, 0]], axis=1)

    def describe(self, model: Model, data: ActuatorData, limit: int) -> list[str]:
        rows = []
        for e, name in enumerate(data.names):
            a, b = int(data.a[e]), int(data.b[e])
            pa, pb = data.points(model, e)
            L0 = data.length[e](0.0)[0]
            rows.append(f"  {name}: {'ground' if a < 0 else model.node_names[a]} ({', '.join(f'{v:.4g}' for v in pa)}) - "
                        f"{model.node_names[b]} ({', '.join(f'{v:.4g}' for v in pb)}): prescribed length, L(0) = "
                        f"{L0:.6g} m (at assembly {data.length0[e]:.6g} m); tolerance {data.tol[e]:.3g} m; penalty "
                        f"α = {KAPPA:g} m_ref / β' per step")
        return ["actuators (prescribed length, augmented Lagrangian, docs/actuator.md):"] + listing(rows, limit)


#: the registered instance (flexmb.elements.FAMILIES["actuator"])
FAMILY = Actuators()
