"""Couplings between two joint coordinates (gears, belts, rack and pinion, screws, URDF mimic joints):
the ``"coupling"`` element family. Its equations, (C1)-(C16), are derived in docs/coupling.md; the
arithmetic is in elements/coupling_kernels.py, which the compiled Newton steps call too
(flexmb/solvers/element_families.py).

A coupling holds q_b = r q_a + c0 between two scalar coordinates of tree joints (C1): elastically, with
a mesh stiffness k and damping c and the force f = k g + c ġ on the gap g = q_b - r q_a - c0 (C3), or
rigidly, f the multiplier of an index-3 augmented Lagrangian as the rigid cut's (docs/rigid_cut.md):
penalty α = κ m_ref / β' per step (C13), raised tenfold (up to 100 times) where the gap stagnates and a
SolverError naming the coupling where it stays open at the largest penalty (the rigid cut's update
(AL11), shared: docs/coupling.md §6, (C17)), λ updated at every Newton iterate after the first (C11), the
step accepted when |g| is within its tolerance (C14), velocities and accelerations projected after it
(C15). The coupling applies -f to q_b and r f to q_a (C2): the generalized force of ½ k g² (or of λ g).

Couplings act on joint coordinates, the element interface on node twists: a coordinate's rate is a
row j of its joint's relative twist (C5)-(C6), so the coupling's node wrenches Gᵀ f (C7)-(C8) project
(Bᵀ) to exactly f on q_b and -r f on q_a and nothing else, and its blocks (k GᵀG, C9) to exactly
k [[r², -r], [-r, 1]] on (q_a, q_b) (C10). As an element family: four node slots (the two joints'
parents and children), blocks over them (so the O(n) tree factor gives way to a matrix factor), no
mass, internal state (the rigid cut's columns: λ, penalty, its largest value, Newton phase, last
relative gap; then m_ref: elements/coupling_kernels.py) used by the rigid ones. Output ``gap_rate_force``
(Result.couplings, rows named Result.coupling_names).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import coupling_kernels as kernels
from flexmb.elements.coupling_kernels import ESCALATION, KAPPA, LAM, MREF, N_STATE, PHASE, PREV, SMAX, S
from flexmb.elements.family import (
    ElementData,
    ElementFamily,
    FamilyEvaluation,
    NodeTable,
    Output,
    StartContext,
    StepContext,
    frozen_arrays,
    listing,
    ordered_sum,
    unstarted_state,
)
from flexmb.errors import ModelError, SolverError

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["CouplingSpec", "CouplingData", "CouplingEvaluation", "Couplings", "FAMILY", "TOLERANCE"]

TOLERANCE = 1e-10  # (C14): the rigid couplings' closure tolerance, rad (translations: times the model's size)


@dataclass(frozen=True)
class CouplingSpec:
    """A coupling as ModelBuilder.add_coupling records it: ``name``; per end (a, b) the joint, its
    scalar dof, the coordinate's name, whether it is a translation; ``nodes`` the declared parent and
    child of joint a, then of joint b; ``ratio`` r and ``offset`` c0 of (C1); ``stiffness`` None for
    a rigid coupling, else k (with ``damping`` c) of (C3)."""

    name: str
    joint_a: str
    dof_a: int
    coordinate_a: str
    joint_b: str
    dof_b: int
    coordinate_b: str
    nodes: tuple[str, str, str, str]
    translation_b: bool
    ratio: float
    offset: float
    stiffness: float | None
    damping: float


@dataclass(frozen=True, eq=False)
class CouplingData(ElementData):
    """Compiled couplings (``Model.elements["coupling"]``), eq. (C1)-(C3)."""

    coordinate_a: tuple  # name of coordinate a, as in Result.coordinate (n_el)
    coordinate_b: tuple  # name of coordinate b                                                      (n_el)
    joint_a: tuple  # joint of coordinate a                                                          (n_el)
    joint_b: tuple  # joint of coordinate b                                                          (n_el)
    dof_a: np.ndarray  # scalar dof of coordinate a in its joint                                   (n_el)
    dof_b: np.ndarray  # scalar dof of coordinate b in its joint                                   (n_el)
    nodes: np.ndarray  # declared parent and child of joint a, then of joint b, -1 = ground      (n_el x 4)
    ratio: np.ndarray  # r of (C1)                                                                 (n_el)
    offset: np.ndarray  # c0 of (C1) [the unit of q_b]                                             (n_el)
    rigid: np.ndarray  # held by the augmented Lagrangian (no stiffness given) (bool)              (n_el)
    k: np.ndarray  # mesh stiffness of an elastic coupling [N/m or N m/rad in q_b's unit], 0 rigid   (n_el)
    c: np.ndarray  # its damping [N s/m or N m s/rad]                                              (n_el)
    tol: np.ndarray  # (C14): closure tolerance of a rigid coupling [q_b's unit]                   (n_el)

    def initial_state(self) -> np.ndarray:
        return unstarted_state(self.n, N_STATE, PHASE)


@dataclass
class CouplingEvaluation(FamilyEvaluation):
    """The couplings at one state: gap g, its rate ġ, force f, multiplier λ of this iterate and
    penalty α (rigid ones; 0 elastic), the rows G (n_el, 24) of (C7), the size ``ell`` the gap is computed
    from (C16), and ``alpha_next``, the next iterate's penalties where the Newton update raised them (AL11)."""

    g: np.ndarray | None = None
    gdot: np.ndarray | None = None
    force: np.ndarray | None = None
    lam: np.ndarray | None = None
    alpha: np.ndarray | None = None
    G: np.ndarray | None = None
    ell: np.ndarray | None = None
    alpha_next: np.ndarray | None = None


@dataclass(frozen=True)
class CouplingPrep:
    """The couplings' indices in a model (Couplings.prepare): coordinates ua, ub (in u) and qa, qb
    (in q), the node slots with ground as N, each end's tree child, the ends' joint coordinates
    split into translations and rotations (coupling_kernels module docstring), and the lever of the
    position noise (C16): the model's size for a rotation q_b, else 1."""

    ua: np.ndarray
    ub: np.ndarray
    qa: np.ndarray
    qb: np.ndarray
    nodes: np.ndarray
    tree_child: np.ndarray
    t_idx: np.ndarray
    n_t: np.ndarray
    r_idx: np.ndarray
    n_r: np.ndarray
    own_t: np.ndarray
    own_pos: np.ndarray
    lever: np.ndarray


class Couplings(ElementFamily):
    """The ``"coupling"`` family (module docstring)."""

    name = "coupling"
    label = "coupling"
    plural = "couplings"
    has_blocks = True
    has_state = True
    projection_blocks = True
    outputs = (Output("gap_rate_force", ("coupling_gap", "coupling_rate", "coupling_force"),
                      "gap g = q_b - r q_a - c0, its rate ġ and the force f (the coupling applies -f to q_b, r f to q_a; "
                      "docs/coupling.md (C1)-(C3))", field="couplings", names_field="coupling_names"),)

    def compile(self, records: Sequence[CouplingSpec], nodes: NodeTable) -> CouplingData:
        """Names, node slots, (C1)'s r and c0, k and c of (C3), the tolerance (C14)."""
        n = len(records)
        slots = np.array([[nodes.index(s, f"coupling '{r.name}'", ground=True) for s in r.nodes] for r in records],
                         dtype=np.int64).reshape(n, 4)
        size = float(np.ptp(np.reshape(nodes.X0, (-1, 3)), axis=0).max(initial=0.0)) if len(nodes.names) else 0.0
        size = size if size > 0.0 and np.isfinite(size) else 1.0
        out = dict(
            names=tuple(r.name for r in records), coordinate_a=tuple(r.coordinate_a for r in records),
            coordinate_b=tuple(r.coordinate_b for r in records), joint_a=tuple(r.joint_a for r in records),
            joint_b=tuple(r.joint_b for r in records), dof_a=np.array([r.dof_a for r in records], dtype=np.int64),
            dof_b=np.array([r.dof_b for r in records], dtype=np.int64), nodes=slots,
            ratio=np.array([r.ratio for r in records], dtype=float), offset=np.array([r.offset for r in records], dtype=float),
            rigid=np.array([r.stiffness is None for r in records], dtype=bool),
            k=np.array([0.0 if r.stiffness is None else r.stiffness for r in records], dtype=float),
            c=np.array([0.0 if r.stiffness is None else r.damping for r in records], dtype=float),
            tol=np.array([TOLERANCE * (size if r.translation_b else 1.0) for r in records], dtype=float))
        return CouplingData(**frozen_arrays(out))

    def element_nodes(self, data: CouplingData) -> np.ndarray:
        return np.asarray(data.nodes, dtype=np.int64).reshape(-1, 4)

    def prepare(self, model: Model, data: CouplingData) -> CouplingPrep:
        """Resolve the coordinates in ``model`` (refusing what (C1) cannot hold: module docstring of
        flexmb.builder.couplings) and the joints' coordinate layouts for (C6)."""
        n = data.n
        ua, ub = np.zeros(n, np.int64), np.zeros(n, np.int64)
        tree_child = np.zeros((n, 2), np.int64)
        t_idx, r_idx = np.zeros((n, 2, 3), np.int64), np.zeros((n, 2, 3), np.int64)
        n_t, n_r = np.zeros((n, 2), np.int64), np.zeros((n, 2), np.int64)
        own_t, own_pos = np.zeros((n, 2), np.bool_), np.zeros((n, 2), np.int64)
        driven = set(int(u) for u in model.driven)
        for e in range(n):
            for end, (joint, dof) in enumerate(((data.joint_a[e], data.dof_a[e]), (data.joint_b[e], data.dof_b[e]))):
                who = f"coupling '{data.names[e]}'"
                if joint not in model.joint_names:
                    raise ModelError(f"{who}: joint '{joint}' is not a joint of the model's tree; a coupling joins "
                                     "coordinates of tree joints.")
                j = model.joint_index(joint)
                start, kind = int(model.joint_u_start[j]), model.joint_kinds[j]
                scalar = [start + i for i in range(kind.n_u) if not model.u_is_ball[start + i]]
                u = scalar[int(dof)]
                (ua if end == 0 else ub)[e] = u
                tree_child[e, end] = int(model.joint_child[j])
                for i in range(kind.n_u):
                    k = start + i
                    trans = not model.rotation_u[k]
                    lst, cnt = (t_idx, n_t) if trans else (r_idx, n_r)
                    if k == u:
                        own_t[e, end], own_pos[e, end] = trans, cnt[e, end]
                    lst[e, end, cnt[e, end]] = k
                    cnt[e, end] += 1
            if int(ua[e]) in driven and int(ub[e]) in driven:
                raise ModelError(f"coupling '{data.names[e]}': both its coordinates '{data.coordinate_a[e]}' and "
                                 f"'{data.coordinate_b[e]}' are driven, so nothing is left for it to hold; drive one of "
                                 "them and let the coupling move the other, or remove the coupling.")
        N = model.n_nodes
        nodes = np.where(data.nodes < 0, N, data.nodes).astype(np.int64)
        lever = np.where(np.asarray(model.rotation_u)[ub], model.size, 1.0) if n else np.zeros(0)  # (C16)
        return CouplingPrep(ua, ub, model.u_to_q[ua].astype(np.int64), model.u_to_q[ub].astype(np.int64), nodes,
                            tree_child, t_idx, n_t, r_idx, n_r, own_t, own_pos, lever.astype(float))

    def dissipates(self, data: CouplingData) -> bool:
        return bool(np.any(data.c != 0.0))

    # ------------------------------------------------------------------ engine
    @staticmethod
    def _internal(data: CouplingData, state: State) -> np.ndarray:
        st = state.elements.get(FAMILY.name) if state.elements else None
        return data.initial_state() if st is None else np.ascontiguousarray(st, dtype=float)

    def evaluate(self, model: Model, data: CouplingData, prep: CouplingPrep, state: State, kin: Kinematics,
                 load_factor: float, Mb: np.ndarray, w: np.ndarray) -> CouplingEvaluation:
        """(C2)-(C8), (C11) into the node wrenches ``w`` (compiled kernels)."""
        n = data.n
        G = np.empty((n, 24))
        kernels.coupling_rows(kin.S, kin.x, prep.nodes, prep.tree_child, prep.t_idx, prep.n_t, prep.r_idx, prep.n_r,
                              prep.own_t, prep.own_pos, data.ratio, G)
        g, gdot, force, lam, alpha, energy, power, ell = (np.empty(n) for _ in range(8))
        st = self._internal(data, state)
        # (C16): the round-off of g, amplified by the penalty, as node motion (the kernel's noise)
        _, _, noise = kernels.coupling_forces(
            np.ascontiguousarray(state.q, dtype=float), np.ascontiguousarray(state.u, dtype=float),
            (prep.qa, prep.qb, prep.ua, prep.ub, data.ratio, data.offset, data.k, data.c, data.rigid, prep.nodes,
             prep.lever), st, G, w, (g, gdot, force, lam, alpha, energy, power, ell))
        return CouplingEvaluation(strain_energy=float(ordered_sum(energy)), dissipation=float(ordered_sum(power)),
                                  position_noise=float(noise), g=g, gdot=gdot, force=force, lam=lam, alpha=alpha, G=G,
                                  ell=ell)

    def blocks(self, model: Model, data: CouplingData, prep: Any, fe: CouplingEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """(C9): (ck k + cc c) GᵀG, rigid ck α GᵀG with the next iterate's penalties (AL11); exact (g is
        linear in the coordinates)."""
        out = np.empty((data.n, 24, 24))
        alpha = fe.alpha if fe.alpha_next is None else fe.alpha_next
        kernels.coupling_blocks(fe.G, data.k, data.c, alpha, data.rigid, float(ck), float(cc), out)
        return out

    def output(self, model: Model, data: CouplingData, fe: CouplingEvaluation | None, name: str) -> np.ndarray:
        """``gap_rate_force``: (n_el, 3) of g, ġ, f (C1)-(C3)."""
        if name != "gap_rate_force":
            return super().output(model, data, fe, name)
        return np.zeros((0, 3)) if fe is None else np.stack([fe.g, fe.gdot, fe.force], axis=1)

    # ------------------------------------------------------------------ the augmented Lagrangian of the rigid ones
    def begin_step(self, model: Model, data: CouplingData, prep: Any, state: State, ctx: StepContext) -> np.ndarray:
        """(C13): the step's penalty factor κ / β', its largest value ESCALATION κ / β' (AL11) and the
        first-iterate phase; λ stays the last step's."""
        st = self._internal(data, state).copy()
        s = np.where(data.rigid, KAPPA / ctx.bp, 0.0)
        st[:, S], st[:, SMAX], st[:, PREV] = s, ESCALATION * s, np.inf
        st[:, PHASE] = np.where(data.rigid, 0.0, -1.0)
        return st

    def newton_update(self, model: Model, data: CouplingData, prep: Any, fe: CouplingEvaluation,
                      state: State) -> tuple[np.ndarray, bool, bool]:
        """(C11)'s multiplier for the next iterate, settled when every rigid coupling is within (C14), the
        penalty raised where the gap stagnates (the rigid cuts' update, (AL3), (AL4), (AL11), (AL13):
        kernels.coupling_update); SolverError naming a coupling whose gap stays open at its largest penalty."""
        st = np.ascontiguousarray(self._internal(data, state), dtype=float)
        nxt, alpha_next = np.empty_like(st), np.empty(data.n)
        settled, changed, stuck = kernels.coupling_update(st, fe.lam, fe.g, fe.ell, data.rigid, data.tol, nxt, alpha_next)
        if stuck >= 0:
            raise self.stuck_error(data, fe, stuck, state.t)
        if changed:
            fe.alpha_next = alpha_next
        return nxt, bool(settled), bool(changed)

    @staticmethod
    def stuck_error(data: CouplingData, fe: CouplingEvaluation, e: int, t: float) -> SolverError:
        """The SolverError of coupling ``e`` whose gap stagnates open at its largest penalty (docs/coupling.md §6)."""
        return SolverError(
            f"t = {t:.6g}: coupling '{data.names[e]}' cannot hold {data.coordinate_b[e]} = {data.ratio[e]:g} "
            f"{data.coordinate_a[e]} + {data.offset[e]:g}: its gap g stays at {fe.g[e]:.3e} (tolerance {data.tol[e]:.3g}) "
            f"with the penalty at its largest (α = {fe.alpha[e]:.3g}) and force f = {fe.force[e]:.6g}: another constraint "
            "on these coordinates fights it (a drive, a locked or very stiff joint, a rigid cut, an actuator or another "
            f"coupling; docs/coupling.md §6). Remove the constraint that contradicts the coupling, or give the coupling "
            f"a mesh stiffness (ModelBuilder.add_coupling('{data.names[e]}', ..., stiffness=...)) so that it yields.", t)

    def newton_failure(self, model: Model, data: CouplingData, prep: Any, fe: CouplingEvaluation, ev: Any) -> list[str]:
        """The rigid couplings left open (at most three, largest first)."""
        rel = np.where(data.rigid, np.abs(fe.g) / data.tol, 0.0)
        return [f"coupling '{data.names[e]}' open: |g| = {abs(fe.g[e]):.3e} (tolerance {data.tol[e]:.3g})"
                for e in np.argsort(-rel)[:3] if rel[e] > 1.0]

    def _rows(self, model: Model, data: CouplingData, prep: CouplingPrep, free: np.ndarray) -> np.ndarray:
        """Φ_q,f (n_rigid, n_f) of (C12): e_b - r e_a on the free coordinates, rigid couplings only."""
        pos = np.full(model.n_u, -1)
        pos[free] = np.arange(free.size)
        rig = np.flatnonzero(data.rigid)
        J = np.zeros((rig.size, free.size))
        for i, e in enumerate(rig):
            if pos[prep.ub[e]] >= 0:
                J[i, pos[prep.ub[e]]] += 1.0
            if pos[prep.ua[e]] >= 0:
                J[i, pos[prep.ua[e]]] -= data.ratio[e]
        return J

    @staticmethod
    def _rates(data: CouplingData, prep: CouplingPrep, v: np.ndarray) -> np.ndarray:
        """Φ_q v = v_b - r v_a of the rigid couplings (velocities or accelerations v, all coordinates)."""
        rig = data.rigid
        return (v[prep.ub] - data.ratio * v[prep.ua])[rig]

    def end_step(self, model: Model, data: CouplingData, prep: CouplingPrep, fe: CouplingEvaluation, state: State,
                 ctx: StepContext) -> None:
        """(C15): λ the converged force, then velocities and accelerations projected on Φ_q u = 0 and
        Φ_q u' = 0 (Φ is linear: Φ'_q = 0) in the metric P_α = M̄ + β'α Φ_qᵀΦ_q, λ following (AL9)."""
        if not data.rigid.any():
            return
        st = self._internal(data, state).copy()
        st[:, LAM] = np.where(data.rigid, fe.force, 0.0)
        st[:, PHASE] = -1.0
        rig = np.flatnonzero(data.rigid)
        w = ctx.bp * (fe.alpha if fe.alpha_next is None else fe.alpha_next)[rig]  # the step's last factor
        pos = np.full(model.n_u, -1, dtype=np.int64)  # Φ_q,fᵀ by the kernel the compiled run uses
        pos[ctx.free] = np.arange(ctx.free.size)     # (flexmb/solvers/coupling_projection.py)
        c, forces = np.empty(rig.size), np.empty(ctx.free.size)
        solve = ctx.solve_projection if _elastic(model, data) and ctx.solve_projection is not None else ctx.solve
        for v, pass_lam in ((state.u, False), (state.udot, True)):
            for _ in range(3):
                kernels.coupling_rates(v, prep.ua, prep.ub, data.ratio, rig, c)
                if np.abs(c).max(initial=0.0) <= 1e-14 * (np.abs(v).max(initial=0.0) + 1.0):
                    break
                kernels.rows_transpose_times(prep.ua, prep.ub, data.ratio, rig, pos, w * c, forces)
                v[ctx.free] -= solve(forces)
                if pass_lam:
                    kernels.coupling_rates(v, prep.ua, prep.ub, data.ratio, rig, c)
                    st[rig, LAM] += w * c
        state.elements = {**state.elements, self.name: st}

    def _schur(self, model: Model, data: CouplingData, prep: CouplingPrep, ev: Any,
               ctx: StartContext) -> tuple[np.ndarray, np.ndarray, Any]:
        """Z = M̄⁻¹Φ_q,fᵀ and W = Φ_q,f Z at ``ev`` (the mass solver of ``ctx``), and the solver."""
        J = self._rows(model, data, prep, ctx.free)
        solve = ctx.mass_solver(ev)
        Z = np.stack([solve(row) for row in J], axis=1) if J.shape[0] else np.zeros((ctx.free.size, 0))
        return Z, J @ Z, solve

    def _close(self, model: Model, data: CouplingData, prep: CouplingPrep, state: State, ctx: StartContext):
        """Positions, then velocities onto the rigid couplings (mass-weighted; Φ linear: one step each,
        a second takes the round-off away); returns (evaluation, Z, W⁻¹, solve)."""
        free = ctx.free
        ev = ctx.evaluate(state)
        Z, W, solve = self._schur(model, data, prep, ev, ctx)
        if np.linalg.cond(W) > 1e12:
            raise ModelError(f"couplings {list(np.asarray(data.names)[data.rigid])}: the rigid couplings are redundant "
                             "(their rows e_b - r e_a on the unknown coordinates are dependent): remove the coupling that "
                             "repeats the others, or make it elastic.")
        Wi = np.linalg.inv(W)
        rig = data.rigid
        for _ in range(2):
            g = (state.q[prep.qb] - data.ratio * state.q[prep.qa] - data.offset)[rig]
            if np.all(np.abs(g) <= data.tol[rig]):
                break
            dq = np.zeros(model.n_u)
            dq[free] = -Z @ (Wi @ g)
            moved = state.retract(model, dq)
            state.q, state.balls = moved.q, moved.balls
        for _ in range(2):
            state.u[free] -= Z @ (Wi @ self._rates(data, prep, state.u))
        return ctx.evaluate(state), Z, Wi, solve

    def start(self, model: Model, data: CouplingData, prep: CouplingPrep, state: State, ctx: StartContext) -> None:
        """Close the rigid couplings, project the velocities, and set m_ref (C13) and the multipliers of
        the constrained accelerations λ0 = W⁻¹(c0 - Φ_q,f M̄⁻¹ r0) (docs/coupling.md §3)."""
        st = self._internal(data, state).copy()
        st[:, LAM], st[:, S], st[:, SMAX], st[:, PHASE] = 0.0, 0.0, 0.0, -1.0
        state.elements = {**state.elements, self.name: st}
        if not data.rigid.any():
            return
        rig = np.flatnonzero(data.rigid)
        ev, Z, Wi, solve = self._close(model, data, prep, state, ctx)
        free = ctx.free
        udot0 = state.udot.copy()
        udot0[free] = 0.0
        r0 = ev.residual(udot0)[free]
        J = self._rows(model, data, prep, free)
        c0 = self._rates(data, prep, udot0)
        st[rig, LAM] = Wi @ (c0 - J @ solve(r0))
        st[rig, MREF] = 1.0 / np.diag(np.linalg.inv(Wi))
        state.elements = {**state.elements, self.name: st}

    def close(self, model: Model, data: CouplingData, prep: CouplingPrep, state: State, ctx: StartContext) -> None:
        """Close the rigid couplings of ``state`` (dense output rows between steps); λ left as it is."""
        if data.rigid.any():
            self._close(model, data, prep, state, ctx)

    def between(self, data: CouplingData, e0: np.ndarray, e1: np.ndarray, s: float) -> np.ndarray:
        """λ interpolated linearly inside a step, the rest of ``e1``."""
        out = np.array(e1, dtype=float, copy=True)
        out[:, LAM] = (1.0 - s) * np.asarray(e0)[:, LAM] + s * np.asarray(e1)[:, LAM]
        return out

    # ------------------------------------------------------------------ presentation
    def describe(self, model: Model, data: CouplingData, limit: int) -> list[str]:
        rows = []
        for e, n in enumerate(data.names):
            how = ("rigid (augmented Lagrangian, tolerance " f"{data.tol[e]:.3g})" if data.rigid[e] else
                   f"elastic: k = {data.k[e]:g}, c = {data.c[e]:g}")
            rows.append(f"  {n}: {data.coordinate_b[e]} = {data.ratio[e]:g} {data.coordinate_a[e]} + {data.offset[e]:g}; "
                        f"{how}")
        return ["couplings (between coordinates, docs/coupling.md):"] + listing(rows, limit)

    def node_roles(self, model: Model, data: CouplingData) -> dict[int, list[str]]:
        return {}


def _elastic(model: Model, data: CouplingData) -> bool:
    """Whether the iteration matrix has stiffness or damping beside the rigid couplings' penalties
    (then the projection takes its own factor M̄ + β'K̄_c: module docstring of elements/rigid_cut.py)."""
    from flexmb.elements import FAMILIES  # the registry imports this module

    return (bool(model.spring_u.size) or bool(np.any(~data.rigid))
            or any(n != FAMILY.name and n in FAMILIES and FAMILIES[n].has_blocks and d.n for n, d in model.elements.items()))


#: the registered instance (flexmb.elements.FAMILIES["coupling"])
FAMILY = Couplings()
