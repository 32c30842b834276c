"""One compiled Newton iteration loop per time step for rigid trees (issue 14: small models).

For a rigid tree (only rigid bodies and particles as node masses; joint springs, dampers, drives,
applied joint forces and fixed-axes nodal loads; no friction, no element joining two nodes, no
element state) a generalized-α step of :class:`flexmb.solvers.generalized_alpha.GeneralizedAlpha`
is a chain of compiled kernels with a few lines of Python between them. :func:`tree_newton_step`
runs that chain in one compiled call: the update formulas (Arnold & Brüls eq. 13–16), the trial
state, the drives, forward kinematics (engine/kinematics.py), the bodies' masses and forces
(elements/rigid_body eq. 1–2), eq. (1) of engine/assembly.py, the Newton tests of
``GeneralizedAlpha.step``, and the O(n) tree factorization and solves with the velocity and
position tangents (engine/tree_solver.py). It calls the same kernels in the same order as the
Python step, so a step's result is the same bit for bit (tests/test_tree_step.py). What depends
on time only (the drives' q, q̇, q̈, the applied joint forces and the nodal loads at the step's
end) is evaluated once per step in Python (:class:`TreeStep`).

A step that does not converge, meets a non-finite value or a pivot that is not positive returns
a status instead of raising: the caller then repeats the step in Python, which raises the
SolverError naming the coordinate, time and residual (same arithmetic, so the same failure).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from flexmb.elements import FAMILIES
from flexmb.elements.family import FamilyEvaluation
from flexmb.elements.loads import nodal_wrenches
from flexmb.elements.rigid_body import accumulate
from flexmb.engine.assembly import Evaluation
from flexmb.engine.kinematics import (
    Kinematics,
    TreePattern,
    _forward,
    _node_twists,
    _project_node,
    kinematics_arrays,
    mass_times_add,
    zero_mass_times_add,
)
from flexmb.engine.tree_pairs import NO_PAIRS, pair_arrays, pair_forces, pair_matrix
from flexmb.engine.tree_solver import TreeSolver, _factor, _solve, _solve_position, position_tangent_setup
from flexmb.model import Model
from flexmb.solvers.motion_load_step import follower_inputs, follower_wrenches, step_node_loads
from flexmb.solvers.motion_step import (
    add_motion_diag,
    add_motion_forces,
    compile_motion,
    motion_evaluation,
    motion_inputs,
    step_motion,
)
from flexmb.state import State, _retract_balls

__all__ = ["CompiledStep", "TreeStep", "trial_state", "tree_newton_step", "OK", "NONFINITE", "NOT_CONVERGED", "NOT_POSITIVE"]

OK, NONFINITE, NOT_CONVERGED, NOT_POSITIVE = 0, 1, 2, 3


@njit(cache=True)
def _update(udot0, udot1, a, u0, am, af, g, b, h, a1, hdq, u1):
    """Arnold & Brüls eq. (13)-(16) per coordinate, in numpy's order of operations (bit for bit):
    a1 = (αf udot0 + (1-αf) udot1 - αm a) / (1-αm), hdq = h (u0 + h ((1/2-β) a + β a1)),
    u1 = u0 + h ((1-γ) a + γ a1)."""
    for i in range(a1.size):
        ai = (af * udot0[i] + (1 - af) * udot1[i] - am * a[i]) / (1 - am)
        a1[i] = ai
        hdq[i] = h * (u0[i] + h * ((0.5 - b) * a[i] + b * ai))
        u1[i] = u0[i] + h * ((1 - g) * a[i] + g * ai)


@njit(cache=True, inline="always")
def _apply_drives(driven, drv_q, drv_u, drv_a, u_to_q, q1, u1, udot1):
    """The drives' values on the driven coordinates (State.apply_drives)."""
    for j in range(driven.size):
        k = driven[j]
        q1[u_to_q[k]] = drv_q[j]
        u1[k] = drv_u[j]
        udot1[k] = drv_a[j]


@njit(cache=True)
def trial_state(udot0, udot, a, u0, am, af, g, b, h, q0, balls0, u_to_q, scalar_u, ball_u, driven, drv_q, drv_u, drv_a, hdq,
                phi, q1, balls1, u1, udot1, a1):
    """The Newton iterate of accelerations ``udot`` (GeneralizedAlpha._trial and State.apply_drives):
    a1, hdq and u1 by :func:`_update`, q1 = q0 + hdq on the scalar coordinates, balls1 = balls0
    expm(hdq) on the balls, udot1 = udot (may be the same array), then the drives' values on the
    driven coordinates. phi: work array (n_ball, 3)."""
    _update(udot0, udot, a, u0, am, af, g, b, h, a1, hdq, u1)
    if ball_u.size:
        for n in range(phi.shape[0]):
            for j in range(3):
                phi[n, j] = hdq[ball_u[3 * n + j]]
        _retract_balls(balls0, phi, balls1)
    else:
        balls1[:] = balls0
    for j in range(scalar_u.size):
        q1[j] = q0[j] + hdq[scalar_u[j]]
    for i in range(udot1.size):
        udot1[i] = udot[i]
    _apply_drives(driven, drv_q, drv_u, drv_a, u_to_q, q1, u1, udot1)


@njit(cache=True, parallel=True)
def trial_state_threads(nt, udot0, udot, a, u0, am, af, g, b, h, q0, balls0, u_to_q, scalar_u, ball_u, driven, drv_q, drv_u,
                        drv_a, hdq, phi, q1, balls1, u1, udot1, a1):
    """:func:`trial_state` with its per-coordinate and per-ball passes split over ``nt`` threads (the
    drives after them on one): every value the one-thread pass's, bit for bit."""
    n = a1.size
    for c in prange(nt):
        lo, hi = c * n // nt, (c + 1) * n // nt
        _update(udot0[lo:hi], udot[lo:hi], a[lo:hi], u0[lo:hi], am, af, g, b, h, a1[lo:hi], hdq[lo:hi], u1[lo:hi])
    if ball_u.size:
        nb = phi.shape[0]
        for c in prange(nt):
            lo, hi = c * nb // nt, (c + 1) * nb // nt
            for m in range(lo, hi):
                for j in range(3):
                    phi[m, j] = hdq[ball_u[3 * m + j]]
            _retract_balls(balls0[lo:hi], phi[lo:hi], balls1[lo:hi])
    else:
        balls1[:] = balls0
    ns = scalar_u.size
    for c in prange(nt):
        for j in range(c * ns // nt, (c + 1) * ns // nt):
            q1[j] = q0[j] + hdq[scalar_u[j]]
    for c in prange(nt):
        for i in range(c * n // nt, (c + 1) * n // nt):
            udot1[i] = udot[i]
    _apply_drives(driven, drv_q, drv_u, drv_a, u_to_q, q1, u1, udot1)


@njit(cache=True)
def _absmax(a) -> float:
    """max |a_i| (0 for an empty array; NaN if any a_i is NaN), like float(np.abs(a).max(initial=0))."""
    m = 0.0
    for v in a.flat:
        if v != v:
            return v
        m = max(m, abs(v))
    return m


@njit(cache=True)
def corrected(udot, free, dx):
    """(u̇ with u̇[free] - dx, max |dx|): a Newton correction applied to a copy of the accelerations,
    in one compiled call (the same values as ``u = u̇.copy(); u[free] -= dx`` and _absmax(dx))."""
    out = udot.copy()
    for j in range(free.size):
        out[free[j]] -= dx[j]
    return out, _absmax(dx)


@njit(cache=True)
def _absmax_at(a, idx) -> float:
    """max |a_i| over the indices idx (0 if none)."""
    m = 0.0
    for i in idx:
        v = a[i]
        if v != v:
            return v
        m = max(m, abs(v))
    return m


@njit(cache=True)
def newton_tolerances(udot, u0, free, h, rtol, atol_udot, length_scale) -> tuple[float, float]:
    """GeneralizedAlpha.step's tolerances at a step's first iterate: the correction size dx_tol
    below which it converged and the velocity scale of the round-off test."""
    udot_max, u_max = _absmax_at(udot, free), _absmax_at(u0, free)
    return atol_udot + 0.1 * rtol * (udot_max + u_max / h), u_max + h * udot_max + 1e-3 * length_scale / h


@njit(cache=True)
def newton_diverging(r_hist, it) -> bool:
    """Whether iteration ``it``'s residual r_hist[it] is 1e3 times the smallest so far (after 3)."""
    rmin = r_hist[0]
    for j in range(1, it + 1):
        rmin = min(rmin, r_hist[j])
    return it + 1 > 3 and r_hist[it] > 1e3 * rmin


@njit(cache=True)
def _evaluate(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, q, balls, u, x, R, Vs, As, S, Sd, P, V, zeta,
              Mb, wfull, tau, threads=1):
    """Assembler.evaluate for a rigid tree into the given arrays (same kernels, same order):
    forward kinematics (its joints on ground on ``threads`` threads), the bodies' eq. (1)-(2), minus
    the loads, plus Mb ζ; τ of the joint springs and the applied joint forces. ``Sd`` with no rows:
    the axes' rates are not formed (_forward). Without bodies Mb must be zero on entry (nothing
    writes it: CompiledStep.buffers gives one zero array for all steps)."""
    parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff, coord_start, coord_count = tree
    Sd[:] = 0.0  # _forward adds the velocity products into Sd (kinematics.forward starts from zeros)
    _forward(parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff, q, balls, u, x, R, Vs, As, S, Sd, P, V, zeta,
             threads)
    node, mass, com, inertia = bodies
    if node.size:
        Mb[:] = 0.0
    wfull[:] = 0.0
    N = x.shape[0]
    accumulate(node, R, np.ascontiguousarray(V[:, 3:]), mass, com, inertia, gravity, 1.0, Mb, wfull)
    bias = wfull[:N]
    follower_wrenches(springs[6], R, loads)  # the follower loads turned by R (flexmb/solvers/motion_load_step.py (M19))
    for i in range(N):
        for j in range(6):
            bias[i, j] -= loads[i, j]
    if node.size:
        mass_times_add(Mb, zeta, bias, bias)
    else:  # no bodies: Mb is +0 (the same values without its products)
        zero_mass_times_add(zeta, bias, bias)
    tau[:] = 0.0
    spring_u, spring_q, spring_k, spring_rest, spring_c = springs[:5]
    for i in range(spring_u.size):
        k = spring_u[i]
        tau[k] = -spring_k[i] * (q[spring_q[i]] - spring_rest[i]) - spring_c[i] * u[k]
    if jforce_u.size:  # numpy's tau[idx] += v: every sum from the old values, the last write wins
        tmp = np.empty(jforce_u.size)
        for i in range(jforce_u.size):
            tmp[i] = tau[jforce_u[i]] + jforce_val[i]
        for i in range(jforce_u.size):
            tau[jforce_u[i]] = tmp[i]
    add_motion_forces(springs[5], q, u, tau)  # the joint forces of the motion (flexmb/solvers/motion_step.py)


@njit(cache=True)
def tree_newton_step(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, drives, coords, solver, params,
                     q0, balls0, u0, udot0, a, out_state, kin, Mb, wfull, tau, rfull, info):
    """The Newton loop of ``GeneralizedAlpha.step`` for a rigid tree with a fresh tree factor per
    step (module docstring). Writes the converged state into ``out_state`` = (q, balls, u, udot,
    a1), its kinematics into ``kin`` = (x, R, Vs, As, S, Sd, P, V, zeta), Mb, the node wrenches
    ``wfull`` (N+1, 6; bias = its first N rows), τ, eq. (1) at the converged u̇ into ``rfull`` (all
    coordinates), and ``info`` = (iterations, factorizations, residual, status, coordinate of a
    failed pivot)."""
    parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff, coord_start, coord_count = tree
    driven, drv_q, drv_u, drv_a = drives
    u_to_q, scalar_u, ball_u, free, c_diag, k_diag = coords
    jf_ptr, jf_coord, coord_child, IA, U, W, Sf, St, Dinv, I6, IV, IAv, Ap, Fp, pairs = solver
    jblock = pairs[4] if pairs[1][0].size else np.zeros((0, 6))  # the spring-dampers' joint blocks (S17), or none
    am, af, g, b, h, rtol, atol_udot, eps_pos, length_scale, max_iter, position_tangent = params
    q1, balls1, u1, udot1, a1 = out_state
    x, R, Vs, As, S, Sd, P, V, zeta = kin
    N = x.shape[0]
    n_u = u0.size
    nf = free.size
    c_a = (1 - af) / (1 - am)
    gp = g * h * c_a
    bp = b * h * h * c_a
    for i in range(n_u):
        udot1[i] = udot0[i]
    hdq = np.empty(n_u)
    phi = np.empty((ball_u.size // 3, 3))
    aw = np.empty((N, 6))
    w = np.empty((N, 6))
    Wtmp = np.empty((N, 6))
    r = np.empty(nf)
    dx = np.empty(nf)
    dg = np.zeros(n_u)
    rr = np.zeros(n_u)
    xx = np.zeros(n_u)
    S_f = np.empty_like(S)
    u_f = np.empty(n_u)
    udot_f = np.empty(n_u)
    r_hist = np.empty(int(max_iter) + 1)
    dxs = np.empty(int(max_iter) + 1)
    n_dx = 0
    nfac = 0
    fresh = False
    scale = dx_tol = vscale = 0.0
    info[3] = OK
    info[4] = -1.0
    for it in range(int(max_iter) + 1):
        trial_state(udot0, udot1, a, u0, am, af, g, b, h, q0, balls0, u_to_q, scalar_u, ball_u, driven, drv_q, drv_u, drv_a,
                    hdq, phi, q1, balls1, u1, udot1, a1)
        _evaluate(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, q1, balls1, u1, x, R, Vs, As, S, Sd, P, V,
                  zeta, Mb, wfull, tau)
        if pair_forces(x, R, V, pairs, wfull) >= 0:  # a spring-damper below its l_min (S11): Python names it
            info[3] = NONFINITE
            return
        bias = wfull[:N]
        # eq. (1): r = Bᵀ (Mb B u̇ + bias) - τ on the free coordinates
        _node_twists(parent, child, coord_start, coord_count, S, udot1, x, aw)
        mass_times_add(Mb, aw, bias, w)
        _project_node(parent, child, coord_start, coord_count, S, w, x, Wtmp, rfull)
        for j in range(n_u):
            rfull[j] = rfull[j] - tau[j]
        for j in range(nf):
            r[j] = rfull[free[j]]
        rn = _absmax(r)
        info[0] = it
        info[1] = nfac
        info[2] = rn
        if not math.isfinite(rn):
            info[3] = NONFINITE
            return
        r_hist[it] = rn
        if it == 0:
            # GeneralizedAlpha._scale
            mw = np.empty((N, 6))
            mass_times_add(Mb, aw, np.zeros((N, 6)), mw)
            p1 = np.empty(n_u)
            _project_node(parent, child, coord_start, coord_count, S, mw, x, Wtmp, p1)
            p2 = np.empty(n_u)
            _project_node(parent, child, coord_start, coord_count, S, np.ascontiguousarray(bias), x, Wtmp, p2)
            scale = float(_absmax(p1) + _absmax(p2) + _absmax(tau)) + 1e-300
            dx_tol, vscale = newton_tolerances(udot1, u0, free, h, rtol, atol_udot, length_scale)
        theta = dxs[n_dx - 1] / dxs[n_dx - 2] if n_dx > 1 and dxs[n_dx - 2] > 0 else np.inf
        if theta < 0.5:
            nxt = theta / (1 - theta) * dxs[n_dx - 1]
        else:
            nxt = dxs[n_dx - 1] if n_dx > 0 else np.inf
        roundoff = bp * nxt <= eps_pos and gp * nxt <= 1e-11 * vscale
        if rn <= max(rtol * scale, 0.0) or nxt <= dx_tol or roundoff:
            return
        if it == max_iter or newton_diverging(r_hist, it):
            info[3] = NOT_CONVERGED
            return
        if not fresh:  # a fresh factor at the first iteration of every step (reuse_factor 'auto' on a tree)
            if position_tangent and bp > 0.0:
                # the solves use the position tangent at this iterate (the factor's): keep its S, u, u̇
                S_f[:] = S
                u_f[:] = u1
                udot_f[:] = udot1
                position_tangent_setup(parent, child, uT, uR, uB, S_f, u_f, udot_f, Mb, x, w, I6, IV, IAv, Ap, Fp)
            for j in range(nf):
                dg[free[j]] = gp * c_diag[j] + bp * k_diag[j]
            add_motion_diag(springs[5], gp, bp, dg)
            pair_matrix(pairs, jf_ptr, jf_coord, S, x, bp, gp, jblock)
            bad = _factor(parent, child, jf_ptr, jf_coord, S, Sd, gp, Mb, x, Vs, dg, IA, U, W, Sf, St, Dinv, jblock)
            if bad >= 0:
                info[3] = NOT_POSITIVE
                info[4] = bad
                return
            nfac += 1
            info[1] = nfac
            fresh = True
            n_dx = 0
        if position_tangent and bp > 0.0:
            _solve_position(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, N, uT, uR, uB, coord_child, S_f, u_f, udot_f,
                            I6, IV, IAv, Ap, Fp, gravity, bp, free, r, dx)
        else:
            rr[:] = 0.0
            for j in range(nf):
                rr[free[j]] = r[j]
            xx[:] = 0.0
            _solve(parent, child, jf_ptr, jf_coord, U, W, Sf, St, Dinv, rr, xx, N)
            for j in range(nf):
                dx[j] = xx[free[j]]
        dxs[n_dx] = _absmax(dx)
        n_dx += 1
        for j in range(nf):
            udot1[free[j]] -= dx[j]
    info[3] = NOT_CONVERGED


class CompiledStep:
    """What every compiled step holds of a model (:class:`TreeStep`, and
    flexmb.solvers.element_step.ElementStep): its constant arrays in the tuples the kernels take, the
    time inputs of a step (:meth:`inputs`) and new buffers for a step's evaluation (:meth:`buffers`).
    The node masses are the rigid bodies' (empty arrays without bodies)."""

    def __init__(self, model: Model, asm) -> None:
        m = model
        t: TreePattern = asm.pattern
        i64 = np.int64
        self.model = m
        self.tree = (t.joint_parent_ext, np.asarray(m.joint_child, dtype=i64), np.ascontiguousarray(m.joint_point, dtype=float),
                     t.axT, t.axR, t.qT, t.qR, t.uT, t.uR, t.uB, t.ball, np.ascontiguousarray(m.joint_child_rot, dtype=float),
                     np.ascontiguousarray(m.joint_child_offset, dtype=float), t.coord_start, t.coord_count)
        if asm.node_mass:
            d = asm.node_mass[0][1]
            self.bodies = (np.asarray(d.node, dtype=i64), np.asarray(d.mass, dtype=float),
                           np.ascontiguousarray(d.com, dtype=float), np.ascontiguousarray(d.inertia, dtype=float))
        else:
            self.bodies = (np.zeros(0, dtype=i64), np.zeros(0), np.zeros((0, 3)), np.zeros((0, 3, 3)))
            for arr in self.bodies:  # read-only like the bodies' arrays: one compiled specialization for both
                arr.setflags(write=False)
        self.gravity = np.asarray(m.gravity, dtype=float)
        spring_u = np.asarray(m.spring_u, dtype=i64)
        # the joint springs, and the joint forces of the motion compiled (flexmb/solvers/motion_step.py, motion_inputs)
        self.springs = (spring_u, np.asarray(m.u_to_q, dtype=i64)[spring_u], np.asarray(m.spring_k, dtype=float),
                        np.asarray(m.spring_rest, dtype=float), np.asarray(m.spring_c, dtype=float), motion_inputs(m),
                        follower_inputs(m))  # [6]: the follower loads (flexmb/solvers/motion_load_step.py)
        self.jforce_u = np.asarray(m.jforce_u, dtype=i64)
        self.driven = np.asarray(m.driven, dtype=i64)
        free = np.asarray(m.free_u, dtype=i64)
        k_diag, c_diag = asm.stiffness_damping_diag(free)  # the joint springs' K̄ and C̄ (the Python step's)
        self.coords = (np.asarray(m.u_to_q, dtype=i64), np.flatnonzero(~m.u_is_ball).astype(i64),
                       np.flatnonzero(m.u_is_ball).astype(i64), free, c_diag, k_diag)
        self.pattern = t
        self._no_loads = np.zeros((m.n_nodes, 6))
        self._zero_Mb: np.ndarray | None = None  # Mb of every step without bodies (_node_masses)

    def inputs(self, times: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray, np.ndarray]:
        """What depends on time only, at the step end times ``times`` (K,): the drives' (q, q̇, q̈), each
        (K, n_driven), the applied joint forces (K, n_jforce) and the nodal loads (K, N, 6); without
        loads one row of zeros (1, N, 6) for all."""
        m = self.model
        n, nd = times.size, self.driven.size
        dq, du, da = np.empty((n, nd)), np.empty((n, nd)), np.empty((n, nd))
        for j, d in enumerate(m.drives):
            for k in range(n):
                dq[k, j], du[k, j], da[k, j] = d(times[k])
        if m.loads:
            loads = np.empty((n, m.n_nodes, 6))
            for k in range(n):
                loads[k] = nodal_wrenches(m.loads, times[k], None, m.n_nodes)
        else:
            loads = self._no_loads[None]
        return (dq, du, da), self.joint_forces(times), loads

    def joint_forces(self, times: np.ndarray) -> np.ndarray:
        """The applied joint forces at the times ``times`` (K,): (K, n_jforce)."""
        out = np.zeros((times.size, self.jforce_u.size))
        for j, f in enumerate(self.model.jforce_f):
            for k in range(times.size):
                out[k, j] = float(f(times[k]))
        return out

    def buffers(self, with_sd: bool = True) -> tuple[tuple[np.ndarray, ...], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """New arrays for a step's evaluation: kinematics (x, R, Vs, As, S, Sd, P, V, ζ), Mb, the node
        wrenches (N+1, 6), τ and eq. (1) (tree_newton_step's ``kin``, Mb, ``wfull``, τ, ``rfull``).
        ``with_sd`` False: Sd with no rows (the axes' rates not formed: _forward)."""
        m = self.model
        N, n_u = m.n_nodes, m.n_u
        kin = kinematics_arrays(m, zeroed=False)  # _evaluate writes every row of S and zeroes Sd first
        if not with_sd:
            kin = kin[:5] + (np.empty((0, 6)),) + kin[6:]
        return kin, self._node_masses(), np.empty((N + 1, 6)), np.empty(n_u), np.empty(n_u)

    def _node_masses(self) -> np.ndarray:
        """Mb's array for a step: new with bodies (_evaluate fills it), else one zero array for all steps
        (nothing writes it; megabytes per step for a large model)."""
        N = self.model.n_nodes
        if self.bodies[0].size:
            return np.empty((N, 6, 6))
        if self._zero_Mb is None:
            self._zero_Mb = np.zeros((N, 6, 6))
        return self._zero_Mb


class TreeStep(CompiledStep):
    """The compiled step of a rigid tree for one integrator (module docstring): per step it evaluates
    what depends on time only and calls :func:`tree_newton_step`. ``applies(model, asm)`` says
    whether a model qualifies."""

    @staticmethod
    def applies(model: Model, asm) -> bool:
        """A rigid tree without friction, element state, families other than node masses (but spring-dampers
        each across one joint: engine/tree_pairs.py); follower loads are turned in its evaluation
        (flexmb/solvers/motion_load_step.py (M19))."""
        pairs = asm.tree_pairs is not None and not asm.exact_tangent and len(asm.families) == 1
        return ((asm.rigid_tree and not asm.families or pairs) and not asm.with_state and model.friction_u.size == 0
                and len(asm.node_mass) == 1 and asm.node_mass[0][0] is FAMILIES["body"]
                and model.free_u.size > 0
                and (not model.mforce_u.size or compile_motion(model)[0] is not None))

    @staticmethod
    def refusal(model: Model, asm) -> str:
        """Why a rigid tree takes the Python Newton loop (empty if :meth:`applies`), for ``flexmb info``."""
        if model.friction_u.size:
            return "bearing friction (engine/friction.py) is evaluated in Python"
        if model.mforce_u.size and compile_motion(model)[0] is None:  # a force numba does not compile: it and why
            return compile_motion(model)[1]
        if asm.tree_pairs is not None and asm.exact_tangent:
            return "the exact tangent (exact_tangent=True) of the spring-dampers is formed in Python"
        names = sorted({f.name for f, _, _ in asm.families if asm.tree_pairs is None or f.name != "spring_damper"}
                       | {f.name for f, _, _ in asm.with_state}
                       | {f.name for f, _, _ in asm.node_mass if f is not FAMILIES["body"]})
        if names:
            return f"element famil{'y' if len(names) == 1 else 'ies'} {', '.join(repr(n) for n in names)} not compiled"
        return "" if TreeStep.applies(model, asm) else "no unknowns"

    def __init__(self, model: Model, asm, solver: TreeSolver) -> None:
        super().__init__(model, asm)
        N = model.n_nodes
        self.solver = (solver.jf_ptr, solver.jf_coord, solver.coord_child, solver.IA, solver.U, solver.W, solver.S,
                       solver.St, solver.Dinv, np.empty((N, 6, 6)), np.empty((N, 6)), np.empty((N, 6)),
                       np.empty((N + 1, 6)), np.empty((N + 1, 6)), self.pair_arrays(model, asm))

    @staticmethod
    def pair_arrays(model: Model, asm) -> tuple:
        """The spring-dampers' tuple of the step (engine/tree_pairs.py pair_arrays; empty without them)."""
        sd = [(d, prep) for f, d, prep in asm.families if f.name == "spring_damper"]
        return pair_arrays(model, sd[0][1] if sd else None, asm.tree_pairs if sd else NO_PAIRS)

    def evaluation(self, st1: State, kin: tuple, Mb: np.ndarray, wfull: np.ndarray, tau: np.ndarray, rfull: np.ndarray,
                   loads: np.ndarray) -> Evaluation:
        """The Evaluation of the state st1 from the arrays of :meth:`buffers` a step filled (eq. (1) at
        its u̇ known: ``residual_known``)."""
        x, R, Vs, As, S, Sd, P, V, zeta = kin
        elements = {"body": FamilyEvaluation()}
        consts, _, out = self.solver[14][:3]
        if consts[0].size:  # the spring-dampers at st1 (SpringDampers.evaluate's evaluation)
            elements["spring_damper"] = FAMILIES["spring_damper"].evaluation(*(v.copy() for v in out), consts[4], consts[5])
        ev = Evaluation(Kinematics(x, R, V, zeta, S, P, Vs, As, self.pattern, Sd), Mb, wfull[:-1], loads, tau, elements)
        if consts[0].size:
            ev.strain_energy += elements["spring_damper"].strain_energy
            ev.element_dissipation += elements["spring_damper"].dissipation
        ev.residual_known = (st1.udot, st1.udot.copy(), rfull)
        ev.motion = motion_evaluation(self.springs[5], self.model.n_u)
        return ev

    def step(self, st: State, a: np.ndarray, h: float, t1: float, params: tuple
             ) -> tuple[int, int, int, float, State, np.ndarray, Evaluation]:
        """One step of size h from (st, a) ending at t1, ``params`` = (αm, αf, γ, β, h, rtol, atol_udot, eps_pos,
        length scale, max_iter, position tangent): (status, iterations, factorizations, residual, state, a1, its
        evaluation); the element state is carried over."""
        drives, jf, loads = self.inputs(np.array([t1]))
        step_motion(self.springs[5], st, t1)
        step_node_loads(self.springs[6], (np.zeros(0),), self.model, st, t1)  # the follower loads' values at t1
        n_u = self.model.n_u
        q1, balls1, u1, udot1, a1 = (np.empty_like(st.q), np.empty_like(st.balls), np.empty(n_u), np.empty(n_u), np.empty(n_u))
        kin, Mb, wfull, tau, rfull = self.buffers()
        info = np.zeros(5)
        tree_newton_step(self.tree, self.bodies, self.gravity, self.springs, self.jforce_u, jf[0], loads[0],
                         (self.driven, drives[0][0], drives[1][0], drives[2][0]), self.coords, self.solver, params,
                         st.q, st.balls, st.u, st.udot, a, (q1, balls1, u1, udot1, a1), kin, Mb, wfull, tau, rfull, info)
        st1 = State(t1, q1, balls1, u1, udot1, {k: v.copy() for k, v in st.elements.items()})
        return (int(info[3]), int(info[0]), int(info[1]), float(info[2]), st1, a1,
                self.evaluation(st1, kin, Mb, wfull, tau, rfull, loads[0]))
