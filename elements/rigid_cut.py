"""Rigid-limit loop cut by an index-3 augmented Lagrangian with mass-orthogonal projections (Bayo &
Ledesma 1996; Cuadrado, Cardenal, Morer & Bayo 2000, "ALI3-P"): the ``"rigid_cut"`` element family.
The equations are derived and discussed in docs/rigid_cut.md, whose numbers the code cites.

A rigid cut joins node a (or ground) and node b at a cut frame like a bushing (elements/bushing.py,
eq. (1)-(2)) and holds the directions it constrains (all translations; the rotations but the one a
revolute cut frees, none for a spherical one) exactly instead of elastically. P picks the held rows,
G = ∂d/∂X is the bushing's deformation derivative, B the velocity transformation, β' = β h²
(1-αf)/(1-αm) and γ' the integrator's factors.

    Φ(q) = P d(q),   Φ_q = P G B                                                           (AL0)
    r(u') = [Bᵀ(M(Bu' + ζ) + g - f) - τ]_f + Φ_q,fᵀ (λ + α Φ)                                  (AL1)
    S = M̄ + γ'C̄ + β'(K̄ + α Φ_qᵀ Φ_q)       (the element block ck α GᵀPᵀPG: S stays SPD)      (AL2)
    λ ← λ + α Φ(q_{n+1})   at every Newton iterate after the first, at that iterate            (AL3)
    |Φ_i| <= tolerance for every held row: 1e-10 times the model's size [m] and 1e-10 rad by
        default (translation- and scale-invariant)                                             (AL4)
    α = κ m_ref / β',  κ = 1e4, m_ref the largest effective mass of the cut's translations
        (rotations: of its rotations) at the start (flexmb.builder.cut_defaults, eq. D1-D2, D8)  (AL7)
    λ_{n+1} = λ + α Φ(q_{n+1})   the cut force of the converged step                           (AL8)
    within a step, α ← 10 α (up to 100 times) when the closure falls by less than 0.3 per
        iteration after the third while above round-off; S is refactorized with it             (AL11)
    a closed cut whose closure falls by less than 0.3 per iteration after the third keeps its λ
        for the rest of the step (round-off, or rows that hold only at second order near a
        singular configuration: (AL3) would only add α times a closure it cannot reduce)       (AL13)

A step is accepted when every cut is within (AL4) and the time step's Newton test holds (rtol on
the residual or on the predicted correction, flexmb.solvers.generalized_alpha); there is no residual
floor: the penalty force α Φ carries the closure's round-off times α, far above rtol times the
forces at small steps, so the step also accepts an iterate whose corrections no longer contract
and move the nodes by less than ``position_noise`` = 16 eps κ' ℓ, ℓ the size of the numbers Φ is
computed from in the model frame and κ' = κ times the step's escalation (docs/rigid_cut.md (N1)):
independent of α, of where the model lies and of its size. A step that reaches neither fails
(halved, then the run fails) with a message naming the open cuts, and where the cuts' closure
Jacobian has lost rank beyond the start's (AL12) the cuts of that singular configuration.

After the step (:meth:`RigidCuts.end_step`), with P_α = M̄ + β'α Φ_qᵀ Φ_q (S itself where the model
has no stiffness or damping beside the cuts' penalty, else its own factor: the mass-orthogonal
metric, whatever element families the model holds):

    P_α δu_f = -β'α Φ_q,fᵀ (Φ_q u)                 u_f ← u_f + δu_f                            (AL5)
    P_α δu'_f = -β'α Φ_q,fᵀ (Φ_q u' + Φ'_q u)      u'_f ← u'_f + δu'_f                          (AL6)
    λ ← λ + β'α (Φ_q u' + Φ'_q u)   after each pass of (AL6)                                   (AL9)

up to three passes each, so the closure rates are at round-off. The drive forces of the step are
those of its converged iterate (AL10): the projections are the cuts' impulses, not the drives'
(recomputed after them, a stiff damped link's velocity correction would bias the drive work).
Φ_q u' + Φ'_q u = P (G a + Ġ V) with the node accelerations a = Bu' + ζ and Ġ V by a central
difference of G along the node motions.

Start (:meth:`RigidCuts.start`, before the integrator's initial accelerations): positions closed by
mass-weighted Newton steps δq_f = -M̄⁻¹Φ_q,fᵀ W⁺ Φ, velocities projected δu_f = -M̄⁻¹Φ_q,fᵀ W⁺ Φ_q u,
and the multipliers of the constrained accelerations (Gauss's principle, W = Φ_q,f M̄⁻¹ Φ_q,fᵀ, W⁺
its pseudo-inverse: redundant cuts are fine)

    λ0 = W⁺ (c0 - Φ_q,f M̄⁻¹ r0)     (c0: the acceleration closure with u'_f = 0, r0 = r(u'_f = 0))

so the integrator's M̄ u' = -r gives accelerations that keep the cuts closed. A cut found open by more
than 1e-6 of the model's size warns (StartWarning) naming it, its gap and what moved. Dense output
rows between steps are closed the same way (:meth:`RigidCuts.close`), their multipliers interpolated.

Internal state per cut (State.elements["rigid_cut"], (n_el, 10)): λ (6, bushing order, zero on free
rows), the penalty factor s (α = s × the row's mass scale), its largest value, the Newton phase k
(-1: accepted, the cut force is λ; 0: the first iterate of a step, force λ + αΦ; >= 1: later
iterates, (AL3)) and the closure of the previous iterate relative to the tolerance (negative: λ kept,
(AL13)).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import rigid_cut_kernels as kernels
from flexmb.elements.cut_contract import CutStart
from flexmb.elements.cut_family import DIRECTIONS, CutData, CutFamily, constrained_mask, cut_arrays, held_directions, place_cut
from flexmb.elements.family import (
    NodeTable,
    PenaltyEvaluation,
    StartContext,
    StepContext,
    frozen_arrays,
    listing,
    unstarted_state,
)
from flexmb.elements.rigid_cut_kernels import ESCALATION, KAPPA, LAM, N_STATE, PHASE, PREV, SMAX, S
from flexmb.elements.rigid_cut_start import rigid_cut_defaults
from flexmb.errors import SolverError, StartWarning

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import RigidCutSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["RigidCutData", "RigidCutEvaluation", "RigidCuts", "FAMILY", "KAPPA", "ESCALATION", "TOLERANCE", "model_size"]

TOLERANCE = 1e-10  # (AL4): the default closure tolerance, relative to the model's size (rotations: rad)

START_GAP = 1e-6  # a start found open beyond this fraction of the model's size (or rad) warns (RigidCuts.start)


@dataclass(frozen=True, eq=False)
class RigidCutData(CutData):
    """Compiled rigid cuts (``Model.elements["rigid_cut"]``): the frames of
    :class:`~flexmb.elements.cut_family.CutData`, then:"""

    mask: np.ndarray  # held directions (tx, ty, tz, rx, ry, rz) (bool)                 (n_el x 6)
    tol: np.ndarray  # closure tolerance of the translations [m]                       (n_el)
    tol_rot: np.ndarray  # closure tolerance of the rotations [rad]                    (n_el)
    penalty: np.ndarray  # user's α [N/m, N m/rad], nan: (AL7) per step                 (n_el)
    m_eff: np.ndarray  # effective mass per direction at the start [kg, kg m^2] (cut_defaults D2; inf: moves nothing) (n_el x 6)
    alpha_scale: np.ndarray  # α per unit penalty factor: m_ref of the row's kind (AL7), or the user's α (n_el x 6)
    plane: np.ndarray  # planar cut: the cut axis along its plane normal, -1: spatial (docs/planar.md (P3)) (n_el)
    redundancy: int = 0  # held rows dependent on the others at the start, all cuts (cut_defaults; AL12) (scalar)

    def initial_state(self) -> np.ndarray:
        return unstarted_state(self.n, N_STATE, PHASE)


@dataclass
class RigidCutEvaluation(PenaltyEvaluation):
    """The rigid cuts at one state: closure Φ (n_el, 6, zero on free rows), the penalties α used (n_el, 6)
    and those for the next matrix, the multipliers of this iterate, the cut forces (n_el, 6)
    (:class:`~flexmb.elements.family.PenaltyEvaluation`), G (n_el, 6, 12), the end poses and twists."""

    G: np.ndarray | None = None
    xa: np.ndarray | None = None
    Ra: np.ndarray | None = None
    xb: np.ndarray | None = None
    Rb: np.ndarray | None = None
    V: np.ndarray | None = None
    A: np.ndarray | None = None


class RigidCuts(CutFamily):
    """The ``"rigid_cut"`` family (module docstring; a :class:`~flexmb.elements.cut_family.CutFamily`)."""

    name = "rigid_cut"
    label = "rigid cut"
    plural = "rigid cuts"
    rigid = True
    has_state = True
    projection_blocks = True
    builder_table = "rigid_cuts"

    def compile(self, records: Sequence[RigidCutSpec], nodes: NodeTable) -> RigidCutData:
        """End nodes, the cut frame in the two node frames, held directions, tolerance, penalty."""
        n = len(records)
        out = cut_arrays(records, tol=np.zeros(n), tol_rot=np.zeros(n), penalty=np.full(n, np.nan),
                         m_eff=np.full((n, 6), np.nan), alpha_scale=np.ones((n, 6)), plane=np.full(n, -1, int))
        size = model_size(nodes, records)
        for i, s in enumerate(records):
            place_cut(out, i, s, nodes, f"rigid cut '{s.name}'")
            out["plane"][i] = s.plane
            out["tol"][i] = TOLERANCE * size if s.tolerance is None else s.tolerance
            out["tol_rot"][i] = TOLERANCE if s.tolerance is None else s.tolerance
            if s.penalty is not None:
                out["penalty"][i] = s.penalty
                out["alpha_scale"][i] = s.penalty
        held = np.array([held_directions(int(k)) for k in out["plane"]], dtype=bool).reshape(n, 6)  # docs/planar.md (P3)
        out["mask"] = constrained_mask(out["mode"], held)
        return RigidCutData(**frozen_arrays(out))

    def held(self, data: RigidCutData) -> np.ndarray:
        """The rigid cuts as they are (``cut_frames``): each holds its directions ``mask``."""
        return data.mask

    def cut_defaults(self, model: Model, data: RigidCutData, start: CutStart) -> RigidCutData:
        """The penalty scales (AL7), the redundancy (AL12) and the refusal of cuts the drives open on a
        loop nothing can move (elements/rigid_cut_start.py)."""
        return rigid_cut_defaults(model, data, start)

    # ------------------------------------------------------------------ engine
    @staticmethod
    def _internal(data: RigidCutData, state: State) -> np.ndarray:
        st = state.elements.get(FAMILY.name) if state.elements else None
        return data.initial_state() if st is None else st

    def evaluate(self, model: Model, data: RigidCutData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> RigidCutEvaluation:
        """The cut forces λ + αΦ (AL1) into the node wrenches, with the multiplier update (AL3) at
        this iterate (compiled: elements/rigid_cut_kernels.py, the compiled step's kernel)."""
        ia, ib = prep
        n = data.n
        d, G, A = np.empty((n, 6)), np.empty((n, 6, 12)), np.empty((n, 3, 3))
        phi, alpha, lam, force = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
        st = np.ascontiguousarray(self._internal(data, state), dtype=float)
        cuts = kernels.RigidCutArrays(ia, ib, data.sa, data.Ea, data.sb, data.Eb, data.mode, data.mask, data.alpha_scale,
                                      data.tol, data.tol_rot)
        energy, noise = kernels.rigid_cut_forces(kin.x, kin.R, cuts, st, w,
                                                 kernels.RigidCutResults(d, G, A, phi, alpha, lam, force))
        return self.evaluation(kin.x, kin.R, ia, ib, energy, noise, phi, G, A, alpha, lam, force)

    @staticmethod
    def evaluation(x: np.ndarray, R: np.ndarray, ia: np.ndarray, ib: np.ndarray, energy: float, noise: float,
                   phi: np.ndarray, G: np.ndarray, A: np.ndarray, alpha: np.ndarray, lam: np.ndarray,
                   force: np.ndarray) -> RigidCutEvaluation:
        """The RigidCutEvaluation of rigid_cut_forces' outputs at the node poses x, R (ends ia, ib; N = ground)."""
        xe = np.concatenate([x, np.zeros((1, 3))])
        Re = np.concatenate([R, np.eye(3)[None]])
        return RigidCutEvaluation(strain_energy=float(energy), position_noise=float(noise), phi=phi, G=G, alpha=alpha,
                                  lam=lam, force=force, xa=xe[ia], Ra=Re[ia], xb=xe[ib], Rb=Re[ib], A=A)

    def blocks(self, model: Model, data: RigidCutData, prep: Any, fe: RigidCutEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """ck Gᵀ α G (AL2), with the penalties of the next iterate (AL11)."""
        alpha = fe.matrix_penalties()
        out = np.empty((data.n, 12, 12))
        kernels.penalty_blocks(fe.G, alpha, float(ck), out)
        return out

    def begin_step(self, model: Model, data: RigidCutData, prep: Any, state: State, ctx: StepContext) -> np.ndarray:
        """The step's penalty (AL7) and the first-iterate phase; λ stays that of the last step."""
        st = self._internal(data, state).copy()
        s = np.where(np.isnan(data.penalty), KAPPA / ctx.bp, 1.0)
        st[:, S], st[:, SMAX], st[:, PHASE], st[:, PREV] = s, ESCALATION * s, 0.0, np.inf
        return st

    def newton_update(self, model: Model, data: RigidCutData, prep: Any, fe: RigidCutEvaluation,
                      state: State) -> tuple[np.ndarray, bool, bool]:
        """(AL3)'s multipliers for the next iterate, settled when every held row is within its
        tolerance (AL4), α raised where the closure stagnates (AL11; the matrix then changes), λ
        kept for the rest of the step where a closed cut's closure stagnates (AL13)."""
        st = np.ascontiguousarray(self._internal(data, state), dtype=float)
        nxt, alpha_next, scale = np.empty_like(st), np.empty((data.n, 6)), np.empty(data.n)
        ia, ib = prep
        xe = np.concatenate([fe.xa, fe.xb])  # the ends' poses as nodes 0..2n-1 (closure_scales)
        Re = np.concatenate([fe.Ra, fe.Rb])
        kernels.closure_scales(xe, Re, np.arange(data.n), np.arange(data.n, 2 * data.n), data.sa, data.sb, scale)
        settled, changed, stuck = kernels.rigid_cut_update(st, fe.lam, fe.phi, data.mask, data.alpha_scale, data.tol,
                                                           data.tol_rot, scale, nxt, alpha_next)
        if stuck >= 0:
            raise SolverError(self._stuck_message(data, fe, nxt, stuck, state.t, bool(model.driven.size)), state.t)
        if changed:
            fe.alpha_next = alpha_next
        return nxt, bool(settled), bool(changed)

    def newton_failure(self, model: Model, data: RigidCutData, prep: Any, fe: RigidCutEvaluation, ev: Any) -> list[str]:
        """The cuts open beyond their tolerance at ``fe`` (at most three, largest first), and, where the
        cuts' closure Jacobian Φ_q (over the unknowns) is nearly rank-deficient (σ_min <= 1e-3 σ_max: a
        singular configuration, where the rigid loops gain mobility that no cut force determines), the
        cuts whose rows span its near-null space (at most three)."""
        rel = relative_closure(data, fe.phi)
        out = []
        for e in np.argsort(-rel)[:3]:
            if rel[e] > 1.0:
                i = int(np.argmax(np.abs(fe.phi[e]) / np.r_[np.full(3, data.tol[e]), np.full(3, data.tol_rot[e])]))
                unit, tol = ("m", data.tol[e]) if i < 3 else ("rad", data.tol_rot[e])
                out.append(f"rigid cut '{data.names[e]}' open: |Φ_{DIRECTIONS[i]}| = {abs(fe.phi[e, i]):.3e} {unit} "
                           f"(tolerance {tol:.3g} {unit})")
        rows = np.argwhere(data.mask)
        free = model.free_u
        if not len(rows) or not free.size:
            return out
        ops = _Closure(model, data, prep, fe.G)
        J = np.zeros((len(rows), free.size))
        u = np.zeros(model.n_u)
        for j, k in enumerate(free):
            u[k] = 1.0
            J[:, j] = ops.rate(ev.twists(u))[data.mask]
            u[k] = 0.0
        # rows in common units: rotations times the model's size
        J *= np.where(rows[:, 1] >= 3, model.size, 1.0)[:, None]
        U, s, _ = np.linalg.svd(J, full_matrices=True)
        s_all = np.zeros(len(rows))  # one per held row (zero where there are more rows than unknowns)
        s_all[:s.size] = s
        smax = float(s_all.max(initial=0.0))
        near = s_all <= 1e-3 * smax
        if smax > 0.0 and int(near.sum()) > data.redundancy:  # (AL12): more than the start's dependent rows
            weight = np.zeros(data.n)
            np.add.at(weight, rows[:, 0], (U[:, near] ** 2).sum(axis=1))
            names = ", ".join(f"'{data.names[e]}'" for e in np.argsort(-weight)[:3] if weight[e] > 1e-3)
            ratio = float(np.sort(s_all)[data.redundancy]) / smax  # the first beyond the start's dependent rows
            out.append(f"the loops closed by rigid cut(s) {names} are at (or near) a singular configuration (the "
                       f"smallest singular value of the cuts' closure Jacobian is {ratio:.1e} of the largest): the rigid "
                       "mechanism gains mobility there that no cut force determines, and the augmented Lagrangian does "
                       "not settle. Model these cuts as bushings (ModelBuilder.add_bushing, damped by default), which "
                       "pass singular configurations, or try a smaller time step")
        return out

    def stuck_error(self, model: Model, fe: RigidCutEvaluation, e: int, t: float) -> SolverError:
        """The SolverError of cut ``e`` stuck open at the iterate evaluated as ``fe`` (newton_update)."""
        data = model.elements[self.name]
        return SolverError(self._stuck_message(data, fe, data.initial_state(), e, t, bool(model.driven.size)), t)

    @staticmethod
    def _stuck_message(data: RigidCutData, fe: RigidCutEvaluation, st: np.ndarray, e: int, t: float, driven: bool) -> str:
        i = int(np.argmax(np.abs(fe.phi[e]) / np.r_[np.full(3, data.tol[e]), np.full(3, data.tol_rot[e])]))
        unit, tol = ("m", data.tol[e]) if i < 3 else ("rad", data.tol_rot[e])
        where = ("where the drives move it, where no rigid loop can follow (its cut forces grow without bound)"
                 if driven else "where the rigid loop gains mobility and its cut forces are not determined")
        return (f"t = {t:.6g}: rigid cut '{data.names[e]}' does not close: its closure |Φ_{DIRECTIONS[i]}| = "
                f"{abs(fe.phi[e, i]):.3e} {unit} stays above its tolerance {tol:.3g} {unit} with the penalty at "
                f"its largest (α = {fe.alpha[e, i]:.3g}): the loop is at (or near) a singular configuration {where}. "
                f"Use an elastic cut there (ModelBuilder.add_bushing('{data.names[e]}', ...), damped by default), a "
                "smaller time step, or start away from the singular configuration.")

    def end_step(self, model: Model, data: RigidCutData, prep: Any, fe: RigidCutEvaluation, state: State,
                 ctx: StepContext) -> None:
        """(AL8), then the velocity and acceleration projections (AL5), (AL6) with (AL9)."""
        st = state.elements[self.name].copy()
        st[:, LAM] = fe.force  # (AL8)
        st[:, PHASE] = -1.0
        state.elements = {**state.elements, self.name: st}
        rows = data.mask
        alpha = fe.matrix_penalties()
        w = ctx.bp * alpha
        ops = _Closure(model, data, prep, fe.G)
        free = ctx.free
        # the metric M̄ + β'αΦ_qᵀΦ_q: S itself where it has no stiffness or damping beside the cuts' penalty, else
        # its own factor (module docstring)
        solve = ctx.solve_projection if _elastic(model, self.name) and ctx.solve_projection is not None else ctx.solve
        for _ in range(3):  # (AL5)
            c = ops.rate(ctx.twists(state.u))
            if np.abs(c[rows]).max(initial=0.0) <= 1e-14 * (np.abs(state.u).max(initial=0.0) + 1.0):
                break
            state.u[free] -= solve(ctx.project(ops.wrenches(w * c))[free])
        if ctx.evaluate is None and ctx.kinematics is None:
            return
        kin = ctx.kinematics(state) if ctx.kinematics is not None else ctx.evaluate(state).kin  # at the projected u
        gdv = ops.gdot_v(kin)
        for _ in range(3):  # (AL6), (AL9)
            ca = ops.rate(ctx.twists(state.udot) + kin.zeta) + gdv
            if np.abs(ca[rows]).max(initial=0.0) <= 1e-14 * (np.abs(state.udot).max(initial=0.0) + 1.0):
                break
            state.udot[free] -= solve(ctx.project(ops.wrenches(w * ca))[free])
            st[:, LAM] += w[:, :] * (ops.rate(ctx.twists(state.udot) + kin.zeta) + gdv)

    def start(self, model: Model, data: RigidCutData, prep: Any, state: State, ctx: StartContext) -> None:
        """Close the cuts at the start, project the velocities, set the multipliers of the constrained
        accelerations (module docstring). A cut found open beyond 1e-6 of the model's size (or 1e-6
        rad) warns (StartWarning) naming it, its gap and the coordinates the closing moved; the gaps go
        to ``ctx.notes`` (the run's ``meta["start"]``)."""
        st = self._internal(data, state).copy()
        st[:, LAM], st[:, S], st[:, PHASE] = 0.0, 0.0, -1.0
        state.elements = {**state.elements, self.name: st}
        rows = data.mask
        free = ctx.free
        q0, u0 = state.q.copy(), state.u.copy()
        ev, ops, solve, Z, Wp, gap = self._close(model, data, prep, state, ctx)
        self._report_start(model, data, state, ctx, gap, q0, u0)
        ev = ctx.evaluate(state)  # accelerations: the multipliers of Gauss's principle
        udot0 = state.udot.copy()
        udot0[free] = 0.0
        r0 = ev.residual(udot0)[free]
        c0 = ops.rate(ev.twists(udot0) + ev.kin.zeta) + ops.gdot_v(ev.kin)
        y = np.zeros(model.n_u)
        y[free] = solve(r0)
        lam = Wp @ (c0[rows] - ops.rate(ev.twists(y))[rows])
        st[:, LAM] = 0.0
        st[:, LAM][rows] = lam
        st[:, PHASE] = -1.0

    def close(self, model: Model, data: RigidCutData, prep: Any, state: State, ctx: StartContext) -> None:
        """Close the cuts of ``state`` (positions by mass-weighted Newton steps, velocities by the
        mass-orthogonal projection; module docstring), e.g. a row of dense output interpolated between
        two steps (docs/rigid_cut.md §6); its multipliers are left as they are."""
        self._close(model, data, prep, state, ctx)

    def between(self, data: RigidCutData, e0: np.ndarray, e1: np.ndarray, s: float) -> np.ndarray:
        """The internal state at the fraction ``s`` of a step from ``e0`` to ``e1``: the multipliers
        (the cut forces) interpolated linearly, the rest of ``e1``."""
        out = np.array(e1, dtype=float, copy=True)
        out[:, LAM] = (1.0 - s) * np.asarray(e0)[:, LAM] + s * np.asarray(e1)[:, LAM]
        return out

    def _close(self, model: Model, data: RigidCutData, prep: Any, state: State, ctx: StartContext):
        """Positions, then velocities onto the cuts' closure (start and close); returns the last
        evaluation, the closure operators, the mass solver, Z = M̄⁻¹Φ_qᵀ, W⁺ and the largest gap found
        before closing per cut (n_el, 2: [m], [rad])."""
        rows = data.mask
        free = ctx.free
        gap = None
        for it in range(31):  # positions
            ev = ctx.evaluate(state)
            fe = ev.elements[self.name]
            if gap is None:
                gap = np.stack([np.abs(fe.phi[:, :3]).max(axis=1), np.abs(fe.phi[:, 3:]).max(axis=1)], axis=1)
            rel = relative_closure(data, fe.phi)
            if rel.max(initial=0.0) <= 1.0:
                break
            if it == 30:
                e = int(np.argmax(rel))
                raise SolverError(f"t = {state.t:.6g}: rigid cut '{data.names[e]}' does not close (closure {rel[e]:.3e} "
                                  "times its tolerance after 30 mass-weighted Newton steps, from a gap of "
                                  f"{gap[e, 0]:.3e} m, {gap[e, 1]:.3e} rad): the joint coordinates put the loop where it "
                                  "cannot be assembled; give closing ones (flexmb.solvers.initial.consistent_state).",
                                  state.t)
            ops = _Closure(model, data, prep, fe.G)
            solve = ctx.mass_solver(ev)
            Z, W = ops.schur(ev, solve, free)
            dq = np.zeros(model.n_u)
            dq[free] = -Z @ (_pinv(W) @ fe.phi[rows])
            moved = state.retract(model, dq)
            state.q, state.balls = moved.q, moved.balls
        ops = _Closure(model, data, prep, fe.G)
        solve = ctx.mass_solver(ev)
        Z, W = ops.schur(ev, solve, free)
        Wp = _pinv(W)
        for _ in range(3):  # velocities (a second pass takes the round-off of W⁺ away)
            c = ops.rate(ev.twists(state.u))[rows]
            if np.abs(c).max(initial=0.0) <= 1e-15 * np.abs(state.u).max(initial=0.0):
                break
            state.u[free] -= Z @ (Wp @ c)
        return ev, ops, solve, Z, Wp, gap

    def _report_start(self, model: Model, data: RigidCutData, state: State, ctx: StartContext, gap: np.ndarray,
                      q0: np.ndarray, u0: np.ndarray) -> None:
        """The start's closure in ``ctx.notes`` and a StartWarning where it moved the model (start)."""
        notes = ctx.notes if ctx.notes is not None else {}
        notes["rigid_cut_gaps"] = {n: [float(g[0]), float(g[1])] for n, g in zip(data.names, gap)}
        far = (gap[:, 0] > START_GAP * model.size) | (gap[:, 1] > START_GAP)
        notes["positions_closed"] = bool(far.any())
        if not far.any():
            return
        dq = np.zeros(model.n_u)
        dq[~model.u_is_ball] = state.q - q0  # ball rotations: the scalar coordinates say enough
        worst = np.argsort(-np.abs(dq))[:3]
        moved = ", ".join(f"'{model.coordinate_names[k]}' by {dq[k]:+.4g}" for k in worst if dq[k] != 0.0)
        e = int(np.argmax(np.maximum(gap[:, 0] / model.size, gap[:, 1])))
        warnings.warn(f"rigid cut '{data.names[e]}' is open at the start by {gap[e, 0]:.4g} m and {gap[e, 1]:.4g} rad "
                      f"(its tolerance {data.tol[e]:.3g} m, {data.tol_rot[e]:.3g} rad): the joints' q0 and the drives put "
                      f"its ends apart, and the start closed the loop by the least mass-weighted motion, moving "
                      f"{moved or 'no scalar coordinate'}. If that is not the start you meant, give closing coordinates "
                      "(flexmb.solvers.initial.consistent_state).", StartWarning, stacklevel=2)

    # ------------------------------------------------------------------ outputs
    def cut_force(self, fe: RigidCutEvaluation) -> np.ndarray:
        """The multipliers λ (+ αΦ at an iterate): the f of the cut force, eq. (3) of elements/bushing.py
        (outputs ``cut_force``, ``cut_force_global``)."""
        return fe.force

    # ------------------------------------------------------------------ presentation (drawing: NodePairDrawing)
    def describe(self, model: Model, data: RigidCutData, limit: int) -> list[str]:
        rows = []
        for e, n in enumerate(data.names):
            held = ", ".join(DIRECTIONS[i] for i in np.flatnonzero(data.mask[e]))
            pen = (f"penalty α = {data.penalty[e]:.3g} (given)" if not np.isnan(data.penalty[e]) else
                   f"penalty α = {KAPPA:g} m_ref / β' per step, m_ref = {data.alpha_scale[e, 0]:.4g} kg"
                   + (f", {data.alpha_scale[e, 3]:.4g} kg m^2" if data.mask[e, 3:].any() else ""))
            held += f" (planar: normal along cut {'xyz'[data.plane[e]]})" if data.plane[e] >= 0 else ""
            rows.append(f"  {n}: {'ground' if data.a[e] < 0 else model.node_names[int(data.a[e])]} - "
                        f"{model.node_names[int(data.b[e])]}, holds {held}; closure tolerance {data.tol[e]:.3g} m"
                        + (f", {data.tol_rot[e]:.3g} rad" if data.mask[e, 3:].any() else "") + f"; {pen}")
        return ["rigid cuts (augmented Lagrangian):"] + listing(rows, limit)


def model_size(nodes: NodeTable, records: Sequence[RigidCutSpec]) -> float:
    """The model's size for the default tolerance (AL4): the largest extent, along the global axes,
    of its nodes and cut points at assembly [m]; 1 m where they all coincide."""
    pts = np.concatenate([np.reshape(nodes.X0, (-1, 3))] + [np.reshape(s.point, (1, 3)) for s in records])
    size = float(np.ptp(pts, axis=0).max(initial=0.0)) if pts.size else 0.0
    return size if size > 0.0 and np.isfinite(size) else 1.0


def relative_closure(data: RigidCutData, phi: np.ndarray) -> np.ndarray:
    """max_i |Φ_i| / tolerance_i per cut (n_el): translations against ``tol``, rotations ``tol_rot``."""
    return np.maximum(np.abs(phi[:, :3]).max(axis=1) / data.tol, np.abs(phi[:, 3:]).max(axis=1) / data.tol_rot)


def _elastic(model: Model, own: str) -> bool:
    """Whether the iteration matrix of ``model`` has stiffness or damping beside the rigid cuts' own
    penalty (joint springs, element families with blocks: bushings, beams)."""
    from flexmb.elements import FAMILIES  # the registry imports this module

    return bool(model.spring_u.size) or any(n != own and n in FAMILIES and FAMILIES[n].has_blocks and d.n
                                            for n, d in model.elements.items())


def _pinv(W: np.ndarray) -> np.ndarray:
    """Pseudo-inverse of the symmetric W (redundant cuts make it singular)."""
    return np.linalg.pinv(W, rcond=1e-10, hermitian=True) if W.size else W


class _Closure:
    """Φ_q and Φ_qᵀ of the cuts at one configuration, as products with node twists and wrenches."""

    def __init__(self, model: Model, data: RigidCutData, prep: tuple[np.ndarray, np.ndarray], G: np.ndarray) -> None:
        self.model, self.data, self.G = model, data, G
        self.ia, self.ib = prep

    def rate(self, V: np.ndarray) -> np.ndarray:
        """P G (V_a, V_b) (n_el, 6) for node twists or accelerations V (N, 6) (compiled)."""
        out = np.empty((self.data.n, 6))
        kernels.closure_rates(self.G, self.data.mask, np.ascontiguousarray(V, dtype=float), self.ia, self.ib, out)
        return out

    def wrenches(self, f: np.ndarray) -> np.ndarray:
        """Node wrenches (N, 6) Gᵀ Pᵀ f of cut forces f (n_el, 6) (compiled)."""
        w = np.empty((self.model.n_nodes + 1, 6))
        kernels.closure_wrenches(self.G, self.data.mask, np.ascontiguousarray(f, dtype=float), self.ia, self.ib, w)
        return w[:-1]

    def gdot_v(self, kin: Kinematics) -> np.ndarray:
        """P Ġ V (n_el, 6): G differentiated along the node motions (central difference of the node
        poses moved by their twists), times the twists (compiled)."""
        d = self.data
        out = np.empty((d.n, 6))
        kernels.gdot_times_v(kin.x, kin.R, kin.V, self.ia, self.ib, d.sa, d.Ea, d.sb, d.Eb, d.mode, d.mask, out)
        return out

    def schur(self, ev: Any, solve: Any, free: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Z = M̄⁻¹ Φ_q,fᵀ (n_f, n_c) and W = Φ_q,f Z (n_c, n_c) over the held rows."""
        rows = np.argwhere(self.data.mask)
        Z = np.zeros((free.size, len(rows)))
        W = np.zeros((len(rows), len(rows)))
        u = np.zeros(self.model.n_u)
        for j, (e, i) in enumerate(rows):
            f = np.zeros((self.data.n, 6))
            f[e, i] = 1.0
            Z[:, j] = solve(ev.project(self.wrenches(f))[free])
        for j in range(len(rows)):
            u[free] = Z[:, j]
            W[:, j] = self.rate(ev.twists(u))[self.data.mask]
        return Z, 0.5 * (W + W.T)


#: the registered instance (flexmb.elements.FAMILIES["rigid_cut"])
FAMILY = RigidCuts()
