"""The rigid-equivalent model of a mechanism whose loops are cut through bushings.

flexmb integrates loops closed by elastic links; this module answers the questions asked of
the *rigid* mechanism that the elastic model approximates, with every bushing's constrained
directions (nonzero diagonal stiffness, minus a free rotation) made rigid:

* the loop-closure residual c(q) and its Jacobian J = dc/du = P G B (P picks the constrained
  deformation components, G is the bushing's deformation derivative, B the velocity
  transformation) and the smallest singular value of J over the undriven coordinates: the
  monitor that shows where the rigid model is singular;
* rigid kinematics for prescribed drives: positions by Newton on c(q) = 0 (least squares, so
  redundant constraints are fine), velocities J_f u_f = -J_d u_d, accelerations
  J_f udot_f = -J_d udot_d - gamma with gamma = d/dt(J) u (a central difference of the
  constraint velocity along the motion: relative accuracy ~1e-10);
* rigid inverse dynamics: drive forces tau and cut forces lambda from
  r(udot) = E_d^T tau + J^T lambda (r: the generalized residual without bushing forces),
  and the joint reactions that go with them (for an overconstrained loop lambda is not unique:
  the least-squares one is returned; the drive forces are unique);
* the motion of a mechanism with undriven degrees of freedom (consistent_motion): velocities
  projected mass-orthogonally on the closure, accelerations by Gauss's principle;
* a pre-loaded start for the elastic model on the rigid motion (preloaded_state), with or without
  drives.

This is an analysis aid: at a singular configuration J loses rank and the rigid solution fails
(with a message saying so), which is exactly where the elastic model keeps going.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse.linalg as spla

from flexmb.elements import FAMILIES
from flexmb.elements import bushing as bushing_kernels
from flexmb.elements.cut_family import DIRECTIONS
from flexmb.elements.family import CutFrames
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.errors import ModelError, SolverError
from flexmb.model import Model
from flexmb.rotations import logm
from flexmb.state import State

__all__ = ["CutFrames", "has_cuts", "model_cuts", "RigidModel", "RigidResult", "consistent_motion", "constrained_solution",
           "preloaded_state", "rigid_inverse_dynamics"]


@dataclass
class RigidResult:
    """Time histories of the rigid-equivalent inverse dynamics.

    q (nt, n_u) (balls as rotation vectors), u, udot; drive_forces (nt, n_driven);
    cut_forces (nt, n_c): force/moment components carried by each rigid cut, in bushing axes
    (``cut_names`` says which); reactions (nt, n_joints, 6) as in Result; sigma_min (nt,):
    smallest singular value of the closure Jacobian over the undriven coordinates.
    """

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    x: np.ndarray
    drive_forces: np.ndarray
    cut_forces: np.ndarray
    reactions: np.ndarray
    sigma_min: np.ndarray
    cut_names: tuple[str, ...]


def has_cuts(model: Model) -> bool:
    """Whether ``model`` has loop cuts between node frames (elements of a cut family: ElementFamily.cut)."""
    return any(FAMILIES[name].cut and data.n for name, data in model.elements.items() if name in FAMILIES)


def model_cuts(model: Model) -> CutFrames:
    """Every loop cut of ``model`` as a rigid-equivalent constraint: the cut families' (ElementFamily.cut)
    :meth:`~flexmb.elements.family.ElementFamily.cut_frames`, in registry order (bushings, then rigid cuts)."""
    return CutFrames.concatenate([FAMILIES[name].cut_frames(model, data) for name, data in model.elements.items()
                                  if name in FAMILIES and FAMILIES[name].cut and data.n])


class RigidModel:
    """Rigid-equivalent view of ``model``: bushings become rigid cut joints (rigid cuts are rigid
    already; both are held here, bushings first: :class:`CutFrames`)."""

    _NAMES = DIRECTIONS

    def __init__(self, model: Model) -> None:
        cuts = model_cuts(model)
        if not cuts.n:
            raise ModelError("the model has no bushings or rigid cuts: there is no loop cut to make rigid.")
        self.model = model
        self.cuts = cuts
        self.asm = Assembler(model)
        self.mask = cuts.mask
        self.cut_names = tuple(f"{cuts.names[i]}.{self._NAMES[c]}" for i, c in zip(*np.nonzero(self.mask)))
        N = model.n_nodes
        self._ia = np.where(cuts.a < 0, N, cuts.a)
        self._rows = np.concatenate([6 * self._ia[:, None] + np.arange(6), 6 * cuts.b[:, None] + np.arange(6)], axis=1)
        self.free = model.free_u
        self.driven = model.driven

    # -------------------------------------------------------------- closure
    def _deformation(self, st: State, ev: Evaluation | None = None) -> tuple[Evaluation, np.ndarray, np.ndarray]:
        bu = self.cuts
        ev = self.asm.evaluate(st, elastic_cuts=False) if ev is None else ev
        xe = np.concatenate([ev.kin.x, np.zeros((1, 3))])
        Re = np.concatenate([ev.kin.R, np.eye(3)[None]])
        ia = self._ia
        d, G = bushing_kernels.deformation(xe[ia], Re[ia], xe[bu.b], Re[bu.b], bu.sa, bu.Ea, bu.sb, bu.Eb, bu.mode)
        return ev, d, G

    def closure(self, st: State, ev=None) -> tuple[np.ndarray, np.ndarray]:
        """Constrained deformations c (n_c,) and the closure Jacobian J = dc/du (n_c, n_u)."""
        ev, d, G = self._deformation(st, ev)
        B = np.vstack([ev.B.toarray(), np.zeros((6, self.model.n_u))])  # last 6 rows: ground
        J = np.einsum("bij,bjk->bik", G, B[self._rows])  # (n_b, 6, n_u)
        return d[self.mask], J[self.mask]

    def sigma_min(self, st: State) -> float:
        """Smallest singular value of the closure Jacobian over the undriven coordinates."""
        _, J = self.closure(st)
        return float(np.linalg.svd(J[:, self.free], compute_uv=False).min(initial=np.inf))

    # -------------------------------------------------------------- kinematics
    def solve_positions(self, st: State, tol: float = 1e-12, max_iter: int = 50) -> State:
        """Undriven coordinates that close every cut (drives held), by Newton / least squares."""
        st = st.copy()
        for _ in range(max_iter):
            c, J = self.closure(st)
            if np.abs(c).max(initial=0.0) <= tol:
                return st
            dx = np.linalg.lstsq(J[:, self.free], -c, rcond=None)[0]
            dq = np.zeros(self.model.n_u)
            dq[self.free] = dx
            st = st.retract(self.model, dq)
        raise SolverError(f"t = {st.t:.6g}: the rigid loops cannot be closed (residual {np.abs(c).max():.3e}); "
                          "the drives may ask for an unreachable position.", st.t)

    def _constraint_rate(self, st: State) -> np.ndarray:
        _, J = self.closure(st)
        return J @ st.u

    def solve_motion(self, st: State) -> State:
        """Velocities and accelerations of the undriven coordinates for the prescribed drives."""
        st = st.copy()
        f, d = self.free, self.driven
        _, J = self.closure(st)
        st.u[f] = np.linalg.lstsq(J[:, f], -J[:, d] @ st.u[d], rcond=None)[0]
        eps = 1e-6 / max(1.0, float(np.abs(st.u).max()))
        plus = st.retract(self.model, eps * st.u)
        minus = st.retract(self.model, -eps * st.u)
        gamma = (self._constraint_rate(plus) - self._constraint_rate(minus)) / (2 * eps)
        st.udot[f] = np.linalg.lstsq(J[:, f], -J[:, d] @ st.udot[d] - gamma, rcond=None)[0]
        return st


def rigid_inverse_dynamics(model: Model, times, state: State | None = None) -> RigidResult:
    """Drive forces, cut forces and joint reactions of the rigid-equivalent mechanism moving
    as its drives prescribe, at the given ``times``. Raises SolverError where the rigid model
    is singular or the drives and cuts cannot supply the forces the motion needs."""
    if model.friction_u.size:
        raise ModelError("rigid inverse dynamics: the model has bearing friction, whose torques depend on the cut "
                         "forces this solver computes; it is not supported here: simulate the elastic model instead.")
    rm = RigidModel(model)
    m, asm = model, rm.asm
    st = model.initial_state() if state is None else state.copy()
    rows = {k: [] for k in ("q", "u", "udot", "x", "tau", "lam", "react", "sig")}
    nd = m.driven.size
    Ed = np.zeros((m.n_u, nd))
    Ed[m.driven, np.arange(nd)] = 1.0
    for t in np.asarray(times, dtype=float):
        st.t = float(t)
        st.apply_drives(m, st.t)
        st = rm.solve_positions(st)
        st = rm.solve_motion(st)
        ev = asm.evaluate(st, elastic_cuts=False)
        r = ev.residual(st.udot)
        _, J = rm.closure(st, ev)
        A = np.hstack([Ed, J.T])
        x, *_ = np.linalg.lstsq(A, r, rcond=None)
        if np.abs(A @ x - r).max() > 1e-8 * max(1.0, np.abs(r).max()):
            raise SolverError(f"t = {t:.6g}: the drives and rigid cuts cannot supply the forces this motion needs "
                              "(under-actuated or singular rigid model).", float(t))
        tau, lam = x[:nd], x[nd:]
        # cut forces as applied node wrenches: w_lambda = G_c^T lambda at the bushing nodes
        _, d, G = rm._deformation(st, ev)
        Gc = np.zeros_like(G)
        Gc[rm.mask] = G[rm.mask]
        lam_full = np.zeros(rm.mask.shape)
        lam_full[rm.mask] = lam
        wl = np.einsum("bji,bj->bi", Gc, lam_full)  # (n_b, 12)
        extra = np.zeros((m.n_nodes + 1, 6))
        np.add.at(extra, rm._ia, -wl[:, :6])
        np.add.at(extra, rm.cuts.b, -wl[:, 6:])
        rows["react"].append(asm.reactions(ev, st.udot, extra=extra[:-1]))
        qo = np.zeros(m.n_u)
        qo[~m.u_is_ball] = st.q
        if m.n_ball:
            qo[m.u_is_ball] = logm(st.balls).reshape(-1)
        rows["q"].append(qo)
        rows["u"].append(st.u.copy())
        rows["udot"].append(st.udot.copy())
        rows["x"].append(ev.kin.x + m.origin)  # global
        rows["tau"].append(tau)
        rows["lam"].append(-lam)
        rows["sig"].append(float(np.linalg.svd(J[:, rm.free], compute_uv=False).min(initial=np.inf)))
    n = len(rows["q"])
    return RigidResult(
        t=np.asarray(times, dtype=float), q=np.array(rows["q"]).reshape(n, m.n_u), u=np.array(rows["u"]).reshape(n, m.n_u),
        udot=np.array(rows["udot"]).reshape(n, m.n_u), x=np.array(rows["x"]).reshape(n, m.n_nodes, 3),
        drive_forces=np.array(rows["tau"]).reshape(n, nd), cut_forces=np.array(rows["lam"]).reshape(n, -1),
        reactions=np.array(rows["react"]).reshape(n, m.n_joints, 6), sigma_min=np.array(rows["sig"]),
        cut_names=rm.cut_names,
    )


def constrained_solution(J: np.ndarray, b: np.ndarray, M: np.ndarray, g: np.ndarray | None = None,
                         rtol: float = 1e-9) -> tuple[np.ndarray, int, np.ndarray]:
    """Minimiser x of  1/2 x^T M x + g^T x  subject to  J x = b  (b in J's range; otherwise its
    least-squares part), by the null-space method:

        x = p + N z,   p = J^+ b (minimum norm, truncated SVD at ``rtol`` sigma_max),
        N: orthonormal basis of null(J),   (N^T M N) z = -N^T (M p + g).

    Redundant constraints (rank J < rows) are fine. Returns (x, rank of J, N). Used for the
    velocity projection (g = 0: the smallest kinetic-energy change that closes the cuts) and for
    the constrained accelerations (g = h: Gauss's principle) of :func:`consistent_motion`."""
    n = J.shape[1]
    if J.shape[0] == 0:
        rank, p, N = 0, np.zeros(n), np.eye(n)
    else:
        U, s, Vt = np.linalg.svd(J, full_matrices=True)
        rank = int(np.sum(s > rtol * s.max(initial=0.0))) if s.size and s.max() > 0 else 0
        p = Vt[:rank].T @ ((U[:, :rank].T @ b) / s[:rank])
        N = Vt[rank:].T
    if N.shape[1]:
        g = np.zeros(n) if g is None else g
        A = N.T @ M @ N
        try:
            z = np.linalg.solve(A, -N.T @ (M @ p + g))
        except np.linalg.LinAlgError:
            raise SolverError("the mass matrix is singular along the free motion of the rigid mechanism (a massless "
                              "coordinate it leaves free): its accelerations are not determined.", 0.0) from None
        p = p + N @ z
    return p, rank, N


def consistent_motion(model: Model, st: State, rm: RigidModel | None = None, hold: np.ndarray | None = None,
                      rtol: float = 1e-9) -> tuple[State, int]:
    """Velocities and accelerations of the rigid equivalent (bushing cuts rigid) for any number of
    drives, the coordinates ``hold`` (and the driven ones) kept at their values in ``st``.

    With f the other coordinates, J_f their columns of the closure Jacobian, M = M̄_ff and
    h = r(udot_f = 0) the generalized residual of eq. (1) without the bushings' forces:

    * velocities: u = u_g + δ, δ_f minimising 1/2 δ^T M δ subject to J_f δ_f = -J u_g — the
      mass-orthogonal projection of the given u_g on J u = 0, i.e. the velocities right after an
      impulsive closure of the rigid cuts (a consistent u_g is kept);
    * accelerations by Gauss's principle of least constraint: udot_f minimising
      1/2 udot^T M udot + h^T udot subject to J_f udot_f = -J_h udot_h - gamma (gamma = d/dt(J) u,
      as in :meth:`RigidModel.solve_motion`), i.e. the rigid constrained dynamics
      M udot_f + h_f = J_f^T lambda, J_f udot_f = -J_h udot_h - gamma, with redundant constraints
      allowed (lambda is then not unique; udot is).

    Returns the state and the number of degrees of freedom left free (dim null J_f). Bearing
    friction is not supported (its torques depend on the cut forces). Four-bar with its crank
    turning at 2 rad/s, no drive: the crank's acceleration equals Lagrange's equation of the
    closed-form four-bar to 1e-7 (tests/test_initial.py)."""
    if model.friction_u.size:
        raise ModelError("consistent motion: the model has bearing friction, whose torques depend on the cut forces; "
                         "it is not supported here.")
    rm = RigidModel(model) if rm is None else rm
    st = st.copy()
    held = np.zeros(model.n_u, dtype=bool)
    held[model.driven] = True
    if hold is not None:
        held[np.asarray(hold, dtype=int)] = True
    f = np.flatnonzero(~held)
    ev = rm.asm.evaluate(st, elastic_cuts=False)
    M = rm.asm.mbar(ev, f).toarray()
    _, J = rm.closure(st, ev)
    du, _, N = constrained_solution(J[:, f], -J @ st.u, M, rtol=rtol)
    st.u[f] += du
    eps = 1e-6 / max(1.0, float(np.abs(st.u).max()))
    gamma = (rm._constraint_rate(st.retract(model, eps * st.u)) - rm._constraint_rate(st.retract(model, -eps * st.u))) / (2 * eps)
    st.udot[f] = 0.0
    ev = rm.asm.evaluate(st, elastic_cuts=False)
    _, J = rm.closure(st, ev)
    h = ev.residual(st.udot)[f]
    st.udot[f], _, N = constrained_solution(J[:, f], -J[:, held] @ st.udot[held] - gamma, M, h, rtol=rtol)
    return st, int(N.shape[1])


def _applied_scale(asm: Assembler, st: State) -> float:
    """The force scale of the loads the cuts must carry at ``st``: weights, applied loads, joint
    forces and inertia of the rigid motion (|Bᵀ(M a + g - f)| and |τ| without the cuts' forces),
    never the cut forces themselves (they cancel the loads at the equilibrium sought, so a scale
    including them shrinks to the residual's round-off: docs/loops.md §5.1)."""
    ev = asm.evaluate(st, elastic_cuts=False)
    w = ev.node_wrenches(st.udot)
    return float(np.abs(ev.project(w)).max(initial=0.0) + np.abs(ev.project(ev.bias)).max(initial=0.0)
                 + np.abs(ev.tau).max(initial=0.0)) + 1e-300


def preloaded_state(model: Model, state: State | None = None, rtol: float = 1e-8, max_iter: int = 30) -> State:
    """A start for the elastic model on the motion of its rigid equivalent: rates and
    accelerations that close every cut, then positions moved by Newton on the elastic equations of
    motion (tangent: the cuts' stiffness B^T K B) until the stiff cuts carry the forces that
    motion needs. Unloaded stiff cuts would instead let the mechanism drop for a few steps and
    ring. Stops at ``rtol`` times the force scale of the loads the cuts carry (weights, applied
    loads and the inertia of the rigid motion, without the cut forces; stiff cuts make position
    round-off alone worth ~ k * 1e-16 of residual).

    Works with and without drives:

    * where the drives determine the motion (closure Jacobian over the undriven coordinates of
      full column rank): J_f u_f = -J_d u_d, J_f udot_f = -J_d udot_d - gamma
      (:meth:`RigidModel.solve_motion`), Newton steps solved with the sparse tangent;
    * with undriven degrees of freedom (a four-bar with no drive): the loops are first closed
      (:meth:`RigidModel.solve_positions`, minimum-norm steps), velocities and accelerations come
      from the dynamics (:func:`consistent_motion`: the given velocities projected
      mass-orthogonally on the closure, accelerations by Gauss's principle). The tangent K is
      singular along the free motion (K N = 0, N from the Jacobi-scaled eigenvalues below 1e-10):
      there the residual is taken by the accelerations, udot_f += N z with
      (N^T M̄ N) z = -N^T r, and the positions move in K's range only (the mechanism is not moved
      along its free motion), so the elastic equations of motion hold at the start. To start from
      given independent coordinates (crank angle and speed), build the state with
      flexmb.solvers.initial.consistent_state first.

    At a singular configuration of the rigid mechanism (the folded change-point four-bar) the
    projection and Gauss's principle still give velocities and accelerations, but the cuts cannot
    carry the forces by small deformations (the closure has lost rank in the direction they act):
    the Newton iteration then stops with a SolverError that gives the closure Jacobian's singular
    values and says to start from the unloaded consistent state instead."""
    rm = RigidModel(model)
    st = model.initial_state() if state is None else state.copy()
    free = model.free_u
    _, J = rm.closure(st)
    Jf = J[:, free]
    determined = (not free.size) or (Jf.shape[0] >= free.size
                                     and np.linalg.matrix_rank(Jf, tol=1e-9 * max(np.abs(Jf).max(), 1e-300)) == free.size)
    if determined:
        st = rm.solve_motion(st)
    else:
        st, _ = consistent_motion(model, rm.solve_positions(st), rm)
    asm = Assembler(model)
    if not free.size:
        return st
    k_diag = asm.stiffness_damping_diag(free)[0]
    scale = _applied_scale(asm, st)
    for _ in range(max_iter):
        ev = asm.evaluate(st)
        r = ev.residual(st.udot)[free]
        if np.abs(r).max() <= rtol * scale:
            return st
        K = asm.iteration_matrix(ev, free, 0.0, 1.0, k_diag, with_mass=False)
        dq = np.zeros(model.n_u)
        if determined:
            dq[free] = spla.spsolve(K.tocsc(), -r)
        else:  # K singular along the free motion: that part of r is taken by the accelerations
            Kd = K.toarray()
            d = np.abs(np.diagonal(Kd))
            s = 1.0 / np.sqrt(np.where(d > 0, d, 1.0))
            w, W = np.linalg.eigh(s[:, None] * Kd * s[None, :])
            null = w <= 1e-10 * max(float(np.abs(w).max()), 1e-300)
            if null.any():
                Nk = s[:, None] * W[:, null]  # K Nk = 0
                Mb = asm.mbar(ev, free).toarray()
                dz = np.linalg.solve(Nk.T @ Mb @ Nk, -Nk.T @ r)
                st.udot[free] += Nk @ dz
                r = r + Mb @ (Nk @ dz)
            Wr = W[:, ~null]
            dq[free] = s * (Wr @ ((Wr.T @ (-s * r)) / w[~null]))
        st = st.retract(model, dq)
    hint = ""
    if not determined:
        sv = np.linalg.svd(Jf, compute_uv=False)
        hint = (f" The rigid closure Jacobian over the undriven coordinates has singular values "
                f"{np.array2string(sv, precision=3)}: at (or near) a singular configuration of the rigid mechanism the "
                "cuts cannot carry the forces of its motion by small deformations; start from the unloaded consistent "
                "state (flexmb.solvers.initial.consistent_state) instead.")
    raise SolverError(f"preloaded_state: the cuts' equilibrium did not converge in {max_iter} iterations "
                      f"(residual {np.abs(r).max():.3e}).{hint}", st.t)
