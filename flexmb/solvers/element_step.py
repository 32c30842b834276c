"""Compiled Newton iterations for models with beams on CHOLMOD (issue 14: the lean Newton iteration).

In a generalized-α step of :class:`flexmb.solvers.generalized_alpha.GeneralizedAlpha` each Newton
iteration forms a trial state, evaluates it and forms eq. (1) of engine/assembly.py; a
factorization also assembles the iteration matrix. In Python that is some forty calls and as many
small arrays per iteration, several times the arithmetic on small models. For models whose forces
are those of rigid bodies, beams, joint springs, dampers, drives, applied joint forces, nodal and follower
loads, loads of the motion and bearing friction (:meth:`ElementStep.applies`), :func:`element_iterate` does one
iteration's work in one compiled call: the update formulas (Arnold & Brüls eq. 13–16), the trial state, the
drives, forward kinematics, the bodies' masses and forces (elements/rigid_body eq. 1–2), the
beams' forces and inertia (elements/beam eq. 5–7), eq. (1) on the free coordinates with the
bearing friction's torques (engine/friction.py eq. 1, the Python evaluation's kernel) and, at the
first iteration, the force scale of Newton's test; :func:`element_matrix` writes the iteration
matrix's values M̄ + γ' C̄ + β' K̄ straight into CHOLMOD's persistent matrix. The Newton loop itself
(tests, factor reuse, restarts, the lazy acceptance) stays the Python step's, and so do CHOLMOD's
factorization and solves. Both call the same kernels in the same order as the Python evaluation,
so a step's result is the same bit for bit (tests/test_element_step.py). The State and Evaluation
objects are built only for the iterate a step accepts (or one that fails, for its message).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from flexmb.elements import FAMILIES
from flexmb.elements.beam import kernels as beam_kernels
from flexmb.elements.beam.kernel_data import MatrixWeights, NodeMotion, ScatterMaps
from flexmb.elements.cut_kernels import bushing_blocks, bushing_forces
from flexmb.elements.rotational_spring_damper import rotational_failure
from flexmb.engine import parallel
from flexmb.engine.assembly import Evaluation
from flexmb.engine.band_cholesky import band_factor_loaded, band_solve
from flexmb.engine.dense_cholesky import dense_factor, dense_solve
from flexmb.engine.friction import JointFriction, friction_arrays, friction_diag, friction_loads
from flexmb.engine.iteration_matrix import ElementScatter, _composite_pairs, _scatter_elements
from flexmb.engine.kinematics import (
    Kinematics,
    _node_twists,
    _project_node,
    mass_times_add,
    node_twists_threads,
    project_node_threads,
    zero_mass_times_add,
)
from flexmb.engine.tree_data import Coordinates, DriveValues, KinematicsArrays, StepInputs, StepModel, StepState, TreeOutputs
from flexmb.model import Model
from flexmb.solvers import motion_load_step as load_step
from flexmb.solvers.actuator_step import SHORT, actuator_arrays, actuator_error, set_targets
from flexmb.solvers.element_families import (
    any_cut_or_spring,
    any_with_state,
    coupling_arrays,
    cut_and_spring_forces,
    cut_and_spring_matrix,
    element_step_refusal,
    family_outputs,
    iterate_evaluations,
    iterate_flags,
    rotational_arrays,
)
from flexmb.solvers.law_step import spring_arrays, spring_failure
from flexmb.solvers.motion_step import motion_evaluation, step_motion, with_motion_diag
from flexmb.solvers.tree_step import (
    NONFINITE,
    NOT_CONVERGED,
    NOT_POSITIVE,
    OK,
    CompiledStep,
    _absmax,
    _evaluate,
    newton_diverging,
    newton_tolerances,
    trial_state,
    trial_state_threads,
)
from flexmb.state import State

__all__ = ["ElementStep", "element_iterate", "element_matrix", "element_newton_step", "LAZY"]

LAZY = 4  # element_newton_step: converged by prediction, the last iterate not evaluated
_NO_INT, _NO_FLOAT = np.empty(0, dtype=np.int64), np.empty(0)  # the band factor's arrays, for the dense one


@njit(cache=True)
def element_iterate(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, drives, coords, fams, params, q0, balls0,
                    u0, udot0, a, udot_in, out_state, kin, Mb, wfull, tau, outs, rfull, r, work, evaluate, first, threads):
    """One Newton iterate of ``GeneralizedAlpha.step`` (module docstring): from the accelerations
    ``udot_in`` the pseudo-acceleration, trial state and drives into ``out_state`` = (q, balls, u, u̇,
    a1); with ``evaluate`` also kinematics ``kin`` = (x, R, Vs, As, S, Sd, P, V, ζ), Mb, the node
    wrenches ``wfull`` (N+1, 6), τ, the families' outputs ``outs`` = (the beams' (frames, local forces,
    energies, p, Bl, chord), the bushings' (d, G, A, f, energy, power), the rigid cuts', the
    spring-dampers' (law_step.py)) of the families ``fams`` = (beams, bushings, rigid cuts,
    spring-dampers) (any may have no elements), eq. (1) on all coordinates ``rfull`` and on the free
    ones ``r``; ``threads`` = (the beams' passes', the joints on ground's) threads
    (flexmb/engine/parallel.py); ``work`` ends with the bearing friction's arrays (friction_arrays: its
    torques and radial loads written, engine/friction.py eq. 1). Returns (max |r|, force scale; the scale only at the ``first``
    iteration, else 0; both 0 without ``evaluate``; inf where a spring-damper is too short, (S11) of
    docs/spring_damper.md: ElementStep.iterate names it)."""
    parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff, coord_start, coord_count = tree
    drive_values, coordinates = DriveValues(*drives), Coordinates(*coords)  # the same arrays, named (engine/tree_data.py)
    free = coordinates.free
    beam, bushing = fams[0], fams[1]
    am, af, g, b, h = params
    q1, balls1, u1, udot1, a1 = out_state
    x, R, Vs, As, S, Sd, P, V, zeta = kin
    hdq, phi, aw, w, Wtmp, mf, ground, rest, fric = work
    nt = threads[1]  # the per-node passes on the joints' threads (their joints on ground split: node_twists_threads)
    start, state = StepState(q0, balls0, u0, udot0, a), StepState(q1, balls1, u1, udot1, a1)
    if nt > 1:
        trial_state_threads(nt, start, udot_in, (am, af, g, b, h), coordinates, drive_values, hdq, phi, state)
    else:
        trial_state(start, udot_in, (am, af, g, b, h), coordinates, drive_values, hdq, phi, state)
    if not evaluate:
        return 0.0, 0.0
    # Assembler.evaluate: the tree and the bodies, then the bushings (bushing.evaluate), then the beams (beam.evaluate)
    _evaluate(StepModel(tree, bodies, gravity, springs, jforce_u, coordinates), StepInputs(jforce_val, loads, drive_values),
              state, KinematicsArrays(x, R, Vs, As, S, Sd, P, V, zeta), TreeOutputs(Mb, wfull, tau, rfull), threads[1])
    if bushing[0].size:
        bushing_forces(x, R, V, bushing, wfull, outs[1])
    # Evaluation.residual: r = Bᵀ (Mb B u̇ + bias + M_e B u̇) - τ; the beams' M_e B u̇ in their residual's pass
    if nt > 1:
        node_twists_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, udot1, x, aw)
    else:
        _node_twists(parent, child, coord_start, coord_count, S, udot1, x, aw)
    mf[:] = 0.0
    if beam.a.size:
        beam_kernels.residual_and_mass_forces(beam, NodeMotion(x, R, V, zeta), gravity, 1.0, wfull, aw, mf, outs[0],
                                              threads[0])
    if any_cut_or_spring(fams) and cut_and_spring_forces(x, R, V, S, q1, u1, fams, outs, wfull):
        return np.inf, 0.0  # a spring-damper below l_min (S11): fails
    if load_step.node_loads_iterate(fams[7], x, R, V, wfull):  # the loads of the motion, last (M12); one not finite
        return np.inf, 0.0
    N = x.shape[0]
    bias = wfull[:N]
    if bodies[0].size:
        mass_times_add(Mb, aw, bias, w)
    else:  # no node masses: Mb is +0 (the same values without its products)
        zero_mass_times_add(aw, bias, w)
    for i in range(N):
        for j in range(6):
            w[i, j] = w[i, j] + mf[i, j]
    if nt > 1:
        project_node_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, w, x, Wtmp, rfull)
    else:
        _project_node(parent, child, coord_start, coord_count, S, w, x, Wtmp, rfull)
    for j in range(rfull.size):
        rfull[j] = rfull[j] - tau[j]
    fu = fric[0]
    if fu.size:  # Evaluation.residual: the bearing friction torques from the reactions, subtree sums of w
        ftau = fric[9]
        friction_loads(w, S, u1, (fu, fric[1], fric[2], fric[3], fric[4]), (fric[5], fric[6], fric[7]), fric[12], ftau, fric[10])
        for n in range(fu.size):
            rfull[fu[n]] -= ftau[n]
    for j in range(free.size):
        r[j] = rfull[free[j]]
    rn = _absmax(r)
    scale = 0.0
    if first:  # GeneralizedAlpha._scale: |Bᵀ Mb B u̇| + |Bᵀ bias| + |τ| (node masses only)
        n_u = rfull.size
        s1 = 0.0  # without bodies Mb is zero and so is its term (u̇ finite: rn is)
        if bodies[0].size:
            mw = np.empty((N, 6))
            mass_times_add(Mb, aw, np.zeros((N, 6)), mw)
            p1 = np.empty(n_u)
            if nt > 1:
                project_node_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, mw, x, Wtmp, p1)
            else:
                _project_node(parent, child, coord_start, coord_count, S, mw, x, Wtmp, p1)
            s1 = _absmax(p1)
        p2 = np.empty(n_u)
        if nt > 1:
            project_node_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, np.ascontiguousarray(bias), x,
                                 Wtmp, p2)
        else:
            _project_node(parent, child, coord_start, coord_count, S, np.ascontiguousarray(bias), x, Wtmp, p2)
        scale = float(s1 + _absmax(p2) + _absmax(tau)) + 1e-300
    return rn, scale


@njit(cache=True)
def element_matrix(tree, pairs, mbar, diag_pos, diag, fams, outs, scatters, ck, cc, material_only, with_mass, S, x, Mb,
                   data, threads):
    """The iteration matrix's values on CHOLMOD's pattern into ``data`` (IterationMatrix.assemble with
    the beams' fused kernel, same order): M̄'s node-mass pairs (composite-rigid-body algorithm, if
    ``with_mass``), ``diag`` on the diagonal, then every bushing's B_eᵀ Gᵀ (ck K + cc C) G B_e
    (elements/cut_kernels.py), then every beam's B_eᵀ (ck K + cc C + M) B_e (on threads[0] threads:
    elements/beam/kernels.py), the rigid cuts' penalties, the spring-dampers' blocks (S8) or (S10) of
    docs/spring_damper.md (``scatters`` [5], buffer [6]), in the lower triangle only (``scatters`` = (the beams', the bushings',
    a buffer (n, 12, 12) of the bushings' blocks), of ElementScatter.lower_only: the upper one stays 0
    from the elements; CHOLMOD and dense_factor read the lower one; the beams' last entry the (doff,
    dmap) of ElementScatter.thread_plan for threads[0] threads), the same values there bit for bit."""
    parent, child, jpoint, axT, axR, qT, qR, uT, uR, uB, ball, C, coff, coord_start, coord_count = tree
    pa, pb = pairs
    mbar_pos, mbar_src = mbar
    beam, bushing = fams[0], fams[1]
    nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, skip, plan = scatters[0]
    data[:] = 0.0
    if with_mass:
        vals = np.empty(pa.size)
        _composite_pairs(Mb, x, parent, child, coord_start, coord_count, S, pa, pb, vals)
        for t in range(mbar_pos.size):
            data[mbar_pos[t]] += vals[mbar_src[t]]
    for t in range(diag_pos.size):
        data[diag_pos[t]] += diag[t]
    if bushing[0].size:
        blocks = scatters[2]
        bushing_blocks(outs[1][1], bushing[7], bushing[8], ck, cc, blocks)
        bn, banc_ptr, banc_coord, bpos_ptr, bpos, bmax_ne = scatters[1]
        _scatter_elements(bn, banc_ptr, banc_coord, bpos_ptr, bpos, S, x, blocks, bmax_ne, data)
    if beam.a.size:
        beam_kernels.add_element_matrices(outs[0], beam, MatrixWeights(ck, cc, 1.0, material_only),
                                          ScatterMaps(nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, skip), S, x, data,
                                          threads[0], plan)
    if any_cut_or_spring(fams):
        cut_and_spring_matrix(fams, outs, scatters, ck, cc, material_only, S, x, data)
    load_step.node_load_matrix(fams[7], scatters[13], scatters[14], ck, cc, S, x, data)


@njit(cache=True)
def element_newton_step(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, drives, coords, fams, params, q0, balls0,
                        u0, udot0, a, out_state, kin, Mb, wfull, tau, outs, rfull, r, work, pairs, mbar, diag_pos, diag,
                        scatters, factor, newton, info, threads):
    """The whole Newton loop of ``GeneralizedAlpha.step`` for a model of :meth:`ElementStep.applies`
    on the dense factor (flexmb/engine/dense_cholesky.py) or the band factor
    (flexmb/engine/band_cholesky.py) with a fresh factor per step: the loop of the Python step around
    :func:`element_iterate`, :func:`element_matrix`, the factor's factorization and solves, the same
    tests in the same order (the residual test, the predicted convergence, divergence), so the same
    result bit for bit; S's diagonal ``diag`` gets the bearing friction's slope at each factorized
    iterate (friction_diag, engine/friction.py eq. 2). ``factor`` = (band, indptr, indices, values, L, perm, dinv, y): ``band``
    False: the dense factor L of the CSC pattern (indptr, indices), S's values on the pattern in
    ``values``; True: the band factor L with (perm, dinv, y) of BandCholesky, S's values written
    straight into its band storage (``values`` = L's entries in a row, and ``mbar``, ``diag_pos``
    and ``scatters`` the band's positions: ElementStep.band_maps), the same values as loaded from the
    pattern (band_load), bit for bit;
    ``newton`` = (γ', β', rtol, atol_u̇, eps_pos, length scale, max_iter, lazy, with node masses).
    Writes
    ``info`` = (iterations, factorizations, residual, status, column of a failed pivot); status
    LAZY: converged by prediction, the last iterate not evaluated (its state only)."""
    u_to_q, scalar_u, ball_u, free, c_diag, k_diag = coords
    am, af, g, b, h = params
    gp, bp, rtol, atol_udot, eps_pos, length_scale, max_iter, lazy, with_mass, lever = newton
    band, indptr, indices, values, L, perm, dinv, y = factor
    udot1 = out_state[3]
    nf = free.size
    ud = udot0.copy()
    dx = np.empty(nf)
    r_hist = np.empty(int(max_iter) + 1)
    dxs = np.empty(int(max_iter) + 1)
    dxws = np.empty(int(max_iter) + 1)  # the corrections' node motions, for the round-off floor (N1)
    n_dx = n_dxw = 0
    fric = work[8]  # bearing friction: its viscous slope on S's diagonal at each factorized iterate (friction_diag)
    sdiag = diag.copy()
    nfac = 0
    fresh = False
    predicted = False
    scale = dx_tol = vscale = 0.0
    info[3] = OK
    info[4] = -1.0
    for it in range(int(max_iter) + 1):
        evaluate = not (lazy and predicted)
        rn, es_scale = element_iterate(tree, bodies, gravity, springs, jforce_u, jforce_val, loads, drives, coords, fams, params,
                                       q0, balls0, u0, udot0, a, ud, out_state, kin, Mb, wfull, tau, outs, rfull, r, work,
                                       evaluate, it == 0, threads)
        info[0] = it
        info[1] = nfac
        if not evaluate:
            info[2] = np.nan
            info[3] = LAZY
            return
        info[2] = rn
        if not math.isfinite(rn):
            info[3] = NONFINITE
            return
        settled, changed, noise, stuck = True, False, 0.0, False
        if any_with_state(fams):  # the updates of the cuts, actuators, couplings
            settled, changed, noise, stuck = iterate_flags(fams, outs)
        if stuck:  # a cut or actuator stuck (its newton_update raises): the Python step names it
            info[3] = NOT_CONVERGED
            return
        r_hist[it] = rn
        if it == 0:  # GeneralizedAlpha.step: the scale and the tolerances of the corrections
            scale = es_scale
            dx_tol, vscale = newton_tolerances(udot1, u0, free, h, rtol, atol_udot, length_scale)
        if (rn <= max(rtol * scale, 0.0) or predicted) and settled:
            return
        if it == max_iter or newton_diverging(r_hist, it):
            info[3] = NOT_CONVERGED
            return
        if not fresh or changed:
            mdiag = with_motion_diag(springs[5], gp, bp, diag)
            if fric[0].size:
                friction_diag(out_state[2], fric[0], fric[8], fric[5], fric[6], fric[7], fric[10], fric[11], gp, mdiag, sdiag)
                mdiag = sdiag
            element_matrix(tree, pairs, mbar, diag_pos, mdiag, fams, outs, scatters, bp, gp, False, with_mass, kin[4], kin[0],
                           Mb, values, threads)
            if band:
                bad = band_factor_loaded(perm, L, dinv)
            else:
                bad = dense_factor(indptr, indices, values, L)
            if bad >= 0:
                info[3] = NOT_POSITIVE
                info[4] = bad
                return
            nfac += 1
            info[1] = nfac
            fresh = True
            n_dx = n_dxw = 0
        if band:
            band_solve(perm, L, dinv, r, dx, y)
        else:
            dense_solve(L, r, dx)
        dxs[n_dx] = _absmax(dx)
        n_dx += 1
        for j in range(ud.size):
            ud[j] = udot1[j]
        for j in range(nf):
            ud[free[j]] -= dx[j]
        # _predicts_convergence
        theta = dxs[n_dx - 1] / dxs[n_dx - 2] if n_dx > 1 and dxs[n_dx - 2] > 0 else np.inf
        nxt = theta / (1 - theta) * dxs[n_dx - 1] if theta < 0.5 else dxs[n_dx - 1]
        predicted = nxt <= dx_tol or (bp * nxt <= eps_pos and gp * nxt <= 1e-11 * vscale)
        if noise > 0.0:  # a family's round-off floor (GeneralizedAlpha._at_noise)
            m = 0.0
            for j in range(nf):
                m = max(m, abs(dx[j] * lever[j]))
            dxws[n_dxw] = m
            n_dxw += 1
            predicted = predicted or (n_dxw >= 3 and dxws[n_dxw - 1] >= 0.1 * dxws[n_dxw - 3] and bp * dxws[n_dxw - 1] <= noise)
    info[3] = NOT_CONVERGED


def _maps(x: ElementScatter) -> tuple:
    """The arrays of ``x`` that _scatter_elements takes: (nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne)."""
    return x.nodes, x.anc_ptr, x.anc_coord, x.pos_ptr, x.pos, x.max_ne


class ElementStep(CompiledStep):
    """The compiled Newton iterates of one integrator for a model with beams (module docstring).
    Per step :meth:`begin` evaluates what depends on time only and gives new arrays for the step's
    state and evaluation; :meth:`iterate` fills them for an iterate, :meth:`matrix` the iteration
    matrix's values; :meth:`state` and :meth:`evaluation` wrap the current iterate."""

    #: the element families whose forces and blocks the compiled iterates form (elements/beam/kernels.py,
    #: elements/cut_kernels.py); a model with any other family takes the Python iterates
    FAMILIES = ("bushing", "beam", "rigid_cut", "spring_damper", "actuator", "coupling", "rotational_spring_damper",
                "motion_load")

    @staticmethod
    def applies(model: Model, asm, cholmod: bool) -> bool:
        """On a matrix factor, a model of the families :attr:`FAMILIES` (rigid bodies the only node masses) whose
        user functions numba compiles (element_step_refusal)."""
        return not ElementStep.refusal(model, asm, cholmod)

    @staticmethod
    def refusal(model: Model, asm, cholmod: bool) -> str:
        """Why a model takes the Python Newton iterates instead (empty if :meth:`applies`): the
        family, load or setting that keeps it there, named for ``flexmb info`` (element_step_refusal)."""
        return element_step_refusal(model, asm, cholmod, ElementStep.FAMILIES)

    def __init__(self, model: Model, asm, band_dst: np.ndarray | None = None) -> None:
        super().__init__(model, asm)
        self.asm = asm
        i64 = np.int64
        d = model.elements["beam"]  # either family may have no elements: empty arrays then
        self.beam = FAMILIES["beam"].prepare(model, d)  # BeamArrays (elements/beam/kernel_data.py)
        bu = model.elements["bushing"]
        ia, ib = FAMILIES["bushing"].prepare(model, bu)
        self.bushing = (np.asarray(ia, dtype=i64), np.asarray(ib, dtype=i64), bu.sa, bu.Ea, bu.sb, bu.Eb,
                        np.asarray(bu.mode, dtype=i64), bu.K, bu.C)
        self._n_bushing = bu.n
        rc = model.elements["rigid_cut"]
        ra, rb = FAMILIES["rigid_cut"].prepare(model, rc)
        self.rigid = (np.asarray(ra, dtype=i64), np.asarray(rb, dtype=i64), rc.sa, rc.Ea, rc.sb, rc.Eb,
                      np.asarray(rc.mode, dtype=i64), rc.mask, rc.alpha_scale, rc.tol, rc.tol_rot)
        self._n_rigid = rc.n
        sd = model.elements["spring_damper"]
        self.spring = spring_arrays(model, FAMILIES["spring_damper"].prepare(model, sd), self.springs[5][4])  # law_step.py
        self._n_spring = sd.n
        self.coupling, self._n_coupling = coupling_arrays(model), model.elements["coupling"].n
        self.actuator, self._n_actuator = actuator_arrays(model), model.elements["actuator"].n  # actuator_step.py
        self.rotational = rotational_arrays(model, self.springs[5][4])  # the step's time: the torque laws' too
        self._n_rotational = model.elements["rotational_spring_damper"].n
        self.motion_load = load_step.node_load_inputs(model)  # the loads of the motion (flexmb/solvers/motion_load_step.py)
        free = np.asarray(model.free_u, dtype=i64)
        im = asm.matrices.get(free)
        group = {f.name: k for k, (f, _, _) in enumerate(asm.with_blocks)}

        def lower(name: str, m: int) -> ElementScatter:  # the factors read S's lower triangle only
            if name not in group:
                return ElementScatter(np.zeros((0, m), dtype=i64), im.groups[0].anc_ptr, im.groups[0].anc_coord,
                                      np.zeros(1, dtype=i64), np.zeros(0, dtype=im.groups[0].pos.dtype), 1,
                                      np.zeros(0, dtype=i64))
            return im.groups[group[name]].lower_only(im.indices, im.indptr)

        sc, scb, scr, scs, scml = (lower(f, m) for f, m in (("beam", 2), ("bushing", 2), ("rigid_cut", 2), ("spring_damper", 2),
                                                            ("motion_load", 1)))
        scc, sca, scro = lower("coupling", 4), lower("actuator", 2), lower("rotational_spring_damper", 2)
        self.pairs = (asm.matrices.pairs.pa, asm.matrices.pairs.pb)
        self.mbar = (np.asarray(im.mbar_pos, dtype=i64), np.asarray(im.mbar_src, dtype=i64))
        self.diag_pos = np.asarray(im.diag_pos, dtype=i64)
        # on threads each adds its elements' products to S itself but at the seams (ElementScatter.thread_plan)
        nt = parallel.threads_for(d.n)
        plan = sc.thread_plan(nt)
        self.scatters = ((*_maps(sc), sc.skip, (plan.doff, plan.dmap)), _maps(scb), np.empty((bu.n, 12, 12)), _maps(scr),
                         np.empty((rc.n, 12, 12)), _maps(scs), np.empty((sd.n, 12, 12)), _maps(scc),
                         np.empty((self._n_coupling, 24, 24)), _maps(sca), np.empty((self._n_actuator, 12, 12)), _maps(scro),
                         np.empty((self._n_rotational, 12, 12)), _maps(scml), np.empty((len(self.motion_load[1]), 6, 6)))
        # on the band factor the compiled loop writes S straight into its band storage (BandCholesky.dst:
        # pattern position -> band position, -1 in the upper triangle): the same positions remapped
        self.band_maps = None
        if band_dst is not None:
            dst = np.asarray(band_dst, dtype=i64)

            def banded(x: ElementScatter) -> ElementScatter:
                pos = x.pos.astype(i64)
                pos[pos >= 0] = dst[pos[pos >= 0]]  # the lower triangle's positions: all in the band
                return replace(x, pos=pos.astype(x.pos.dtype) if pos.max(initial=0) < 2**31 else pos)

            bsc, bscb, bscr, bscs, bscc, bsca, bsro, bsml = (banded(x) for x in (sc, scb, scr, scs, scc, sca, scro, scml))
            bplan = bsc.thread_plan(nt)
            mpos = dst[self.mbar[0]]  # M̄'s pairs in both triangles: the lower one's
            self.band_maps = ((mpos[mpos >= 0], self.mbar[1][mpos >= 0]), dst[self.diag_pos],
                              ((*_maps(bsc), bsc.skip, (bplan.doff, bplan.dmap)), _maps(bscb), self.scatters[2],
                               _maps(bscr), self.scatters[4], _maps(bscs), self.scatters[6], _maps(bscc),
                               self.scatters[8], _maps(bsca), self.scatters[10], _maps(bsro), self.scatters[12],
                               _maps(bsml), self.scatters[14]))
        self.with_mass = bool(asm.node_mass)
        N, n_u, n = model.n_nodes, model.n_u, d.n
        parent = self.tree[0]  # the joints on ground (parent N) and the others, in tree order (node_twists_threads)
        self.work = (np.empty(n_u), np.empty((int(model.u_is_ball.sum()) // 3, 3)), np.empty((N, 6)), np.empty((N, 6)),
                     np.empty((N, 6)), np.empty((N, 6)), np.flatnonzero(parent == N).astype(i64),
                     np.flatnonzero(parent != N).astype(i64), friction_arrays(model, self.pattern, free))
        self.r, self._n_el = np.empty(free.size), n
        self._sizes = (n, bu.n, rc.n, sd.n, self._n_coupling, self._n_actuator, self._n_rotational)
        self._no_outs: tuple | None = None  # the outputs of families without elements (begin)
        # the beams' passes and the joints on ground on numba's threads from PARALLEL_MIN of them (engine/parallel.py)
        self.threads = (nt, parallel.threads_for(model.n_joints))  # nt: also the plan's

    def begin(self, st: State, a: np.ndarray, h: float, t1: float, params: tuple, elements: dict | None = None,
              reuse: bool = False, inputs: tuple | None = None) -> None:
        """Start a step of size h from (st, a) to t1 with ``params`` = (αm, αf, γ, β, h): the time
        inputs at t1 (``inputs``: those already evaluated at t1, as :meth:`inputs` gives them) and new arrays
        for its iterates; ``elements``: the families' internal state to start the step with
        (ElementFamily.begin_step; the rigid cuts' penalties). ``reuse``: the last step's arrays but the cuts',
        couplings' and actuators' (element_run: their evaluation is used up; kernels write before reading).
        Families without elements share one set of empty outputs (element_families.family_outputs)."""
        drives, jf, loads = self.inputs(np.array([t1])) if inputs is None else inputs
        step_motion(self.springs[5], st, t1)
        load_step.step_node_loads(self.springs[6], self.motion_load, self.model, st, t1)  # follower loads, loads of the motion
        self._st, self._a, self._t1, self._params = st, a, t1, params
        self._drives = (self.driven, drives[0][0], drives[1][0], drives[2][0])
        self._jf, self._loads = jf[0], loads[0]
        els = st.elements if elements is None else elements
        if self._n_actuator:
            set_targets(self.actuator, self.model.elements["actuator"], t1)  # (L, L', L'')(t1) (actuator_step.py)
        if reuse and getattr(self, "outs", None) is not None:  # the cuts', couplings' and actuators' arrays new (their state)
            if self._n_rigid or self._n_coupling or self._n_actuator:
                self.outs = family_outputs(self._sizes, self.spring, self.rotational, els, self.outs, False)
                self._cst0, self._ccst0, self._acst0 = self.outs[2][7].copy(), self.outs[4][8].copy(), self.outs[5].cst.copy()
            return
        n_u = self.model.n_u
        self.out_state = (np.empty_like(st.q), np.empty_like(st.balls), np.empty(n_u), np.empty(n_u), np.empty(n_u))
        self.kin, self.Mb, self.wfull, self.tau, self.rfull = self.buffers(with_sd=False)  # no Sd: the tree solver's
        if self._no_outs is None:  # the outputs of families without elements, shared by every step
            self._no_outs = family_outputs((0,) * 7, self.spring, self.rotational, {}, None, True)
        self.outs = family_outputs(self._sizes, self.spring, self.rotational, els, self._no_outs, True)
        self._cst0, self._ccst0, self._acst0 = self.outs[2][7].copy(), self.outs[4][8].copy(), self.outs[5].cst.copy()

    def restart(self) -> None:
        """The rigid cuts' state back to that of the step's start (a Newton restart with a fresh factor)."""
        if self._n_rigid:
            self.outs[2][7][:] = self._cst0
        if self._n_coupling:
            self.outs[4][8][:] = self._ccst0
        if self._n_actuator:
            self.outs[5].cst[:] = self._acst0

    @property
    def cut_flags(self) -> tuple[bool, bool, float, int]:
        """(settled, changed, position noise, stuck) of the last iterate's rigid cuts, actuators and couplings
        (iterate_flags; stuck 0 where one is stuck, else -1: element_families.stuck_error names it)."""
        settled, changed, noise, stuck = iterate_flags(self.fams, self.outs)
        return bool(settled), bool(changed), float(noise), 0 if stuck else -1

    def elements(self) -> dict:
        """The families' internal state after the last iterate's update (the next iterate's)."""
        out = dict(self._st.elements)
        if self._n_rigid:
            out["rigid_cut"] = self.outs[2][8].copy()
        if self._n_coupling:
            out["coupling"] = self.outs[4][9].copy()
        if self._n_actuator:
            out["actuator"] = self.outs[5].nxt.copy()
        return out

    def iterate(self, udot: np.ndarray, evaluate: bool, first: bool) -> tuple[float, float]:
        """The iterate of accelerations ``udot`` (element_iterate): (max |r| on the free coordinates,
        force scale at the ``first`` iteration)."""
        st = self._st
        rn, scale = element_iterate(self.tree, self.bodies, self.gravity, self.springs, self.jforce_u, self._jf, self._loads,
                                    self._drives, self.coords, self.fams, self._params, st.q,
                                    st.balls, st.u, st.udot, self._a, udot, self.out_state, self.kin, self.Mb, self.wfull,
                                    self.tau, self.outs, self.rfull, self.r, self.work, evaluate, first, self.threads)
        if self._n_spring and self.outs[3][9][0] >= 0.0:  # (S11) or a law not finite: as spring_damper.evaluate
            raise spring_failure(self.model.elements["spring_damper"], self.outs[3], self._t1)
        if self._n_actuator and self.outs[5].flags[SHORT] >= 0.0:  # (S11) for an actuator: as actuator.evaluate
            raise actuator_error(self.model.elements["actuator"], self.actuator, self.outs[5], self._t1)
        if self._n_rotational and self.outs[6][6][0] >= 0.0:  # (R12) or a law not finite (R15): as its evaluate
            raise rotational_failure(self.model.elements["rotational_spring_damper"], self.outs[6], self._t1)
        load_step.node_load_check(self.motion_load, self.model, self._t1)  # a load not finite: as MotionLoads.evaluate
        return rn, scale

    @property
    def fams(self) -> tuple:
        """The compiled families' arrays: beams, bushings, rigid cuts, spring-dampers, couplings, actuators, rotational ones."""
        return self.beam, self.bushing, self.rigid, self.spring, self.coupling, self.actuator, self.rotational, self.motion_load

    def run_arguments(self, chol) -> tuple:
        """element_newton_step's model and buffer arguments for the begun step on the dense or band
        factor ``chol`` (flexmb.solvers.element_run.element_run's ``step``): (tree, bodies, gravity,
        springs, jforce_u, coords, fams, out_state, kin, Mb, wfull, τ, outs, rfull, r, work, pairs,
        mbar, diag_pos, scatters, factor, threads)."""
        mbar, diag_pos, scatters = self.band_maps if chol.kind == "band" else (self.mbar, self.diag_pos, self.scatters)
        factor = self.factor_arrays(chol)
        return (self.tree, self.bodies, self.gravity, self.springs, self.jforce_u, self.coords,
                self.fams, self.out_state, self.kin, self.Mb, self.wfull, self.tau, self.outs,
                self.rfull, self.r, self.work, self.pairs, mbar, diag_pos, scatters, factor, self.threads)

    @staticmethod
    def factor_arrays(chol) -> tuple:
        """element_newton_step's ``factor`` of the dense or band factor ``chol`` (S straight into the band)."""
        if chol.kind == "band":
            return True, _NO_INT, _NO_INT, chol.L.reshape(-1), chol.L, chol.perm, chol.dinv, chol._y
        return False, chol.indptr, chol.indices, chol.values, chol.L, _NO_INT, _NO_FLOAT, _NO_FLOAT

    def newton(self, chol, gp: float, bp: float, diag: np.ndarray, tol: tuple, lazy: bool) -> tuple[int, int, int, float]:
        """The step begun by :meth:`begin`, its whole Newton loop on the dense or band factor ``chol``
        (element_newton_step) with (γ', β'), ``diag`` added to S's diagonal and ``tol`` = (rtol,
        atol_u̇, eps_pos, length scale, max_iter): (status, iterations, factorizations, residual)."""
        st = self._st
        info = np.zeros(5)
        (tree, bodies, gravity, springs, jforce_u, coords, fams, out_state, kin, Mb, wfull, tau, outs, rfull, r, work, pairs,
         mbar, diag_pos, scatters, factor, threads) = self.run_arguments(chol)
        element_newton_step(tree, bodies, gravity, springs, jforce_u, self._jf, self._loads, self._drives, coords, fams,
                            self._params, st.q, st.balls, st.u, st.udot, self._a, out_state, kin, Mb, wfull, tau, outs, rfull,
                            r, work, pairs, mbar, diag_pos, np.ascontiguousarray(diag, dtype=float), scatters, factor,
                            (float(gp), float(bp), *(float(v) for v in tol[:4]), int(tol[4]), bool(lazy), self.with_mass,
                             np.ascontiguousarray(tol[5], dtype=float)),
                            info, threads)
        return int(info[3]), int(info[0]), int(info[1]), float(info[2])

    def end_run(self, st: State, t1: float, loads: np.ndarray) -> None:
        """After steps taken by flexmb.solvers.element_run in this step's buffers: the last one's state
        ``st``, end time ``t1`` and nodal loads, for :meth:`state` and :meth:`evaluation`."""
        self._st, self._t1, self._loads = st, t1, loads

    udot = property(lambda self: self.out_state[3], doc="The current iterate's accelerations (drives applied).")
    a1 = property(lambda self: self.out_state[4], doc="The current iterate's pseudo-acceleration.")

    def matrix(self, gp: float, bp: float, diag: np.ndarray, material_only: bool, out: np.ndarray) -> None:
        """M̄ + γ' C̄ + β' K̄ + diag at the current iterate into ``out`` (element_matrix), with the forces of
        the motion's and the bearing friction's slopes on the diagonal (with_motion_diag, friction_diag)."""
        diag = with_motion_diag(self.springs[5], float(gp), float(bp), np.ascontiguousarray(diag, dtype=float))
        fric = self.work[8]
        if fric[0].size:
            friction_diag(self.out_state[2], fric[0], fric[8], fric[5], fric[6], fric[7], fric[10], fric[11], float(gp),
                          diag.copy(), diag)
        element_matrix(self.tree, self.pairs, self.mbar, self.diag_pos, diag, self.fams, self.outs, self.scatters, float(bp),
                       float(gp), bool(material_only), self.with_mass, self.kin[4], self.kin[0], self.Mb, out, self.threads)

    def state(self) -> State:
        """The current iterate as a State at the step's end (element state carried over)."""
        q1, balls1, u1, udot1, _ = self.out_state
        st = self._st
        return State(self._t1, q1, balls1, u1, udot1, {k: v.copy() for k, v in st.elements.items()})

    def kinematics(self) -> Kinematics:
        """The kinematics of the iterate evaluated last (over this step's arrays: a later step has its own)."""
        x, R, Vs, As, S, Sd, P, V, zeta = self.kin
        return Kinematics(x, R, V, zeta, S, P, Vs, As, self.pattern, Sd if Sd.shape[0] else None)

    def evaluation(self) -> Evaluation:
        """The current iterate's Evaluation (what Assembler.evaluate gives at its state), with eq. (1)
        at its u̇ known (``residual_known``)."""
        kin = self.kinematics()
        family_evals = iterate_evaluations(self, kin)
        ev = self.asm.evaluation(kin, self.Mb, self.wfull, self._loads if self.model.loads else np.zeros_like(self._loads),
                                 self.tau, family_evals)
        ev.residual_known = (self.udot, self.udot.copy(), self.rfull)
        ev.motion = motion_evaluation(self.springs[5], self.model.n_u)
        if self.model.friction_u.size:  # its radial loads those of the iterate's residual (as Evaluation.residual leaves them)
            ev.friction = JointFriction(self.model, kin, self.pattern, self.out_state[2])
            ev.friction.load = self.work[8][10].copy()
        return ev
