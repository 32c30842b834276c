"""The compiled kernels of the element step: one Newton iterate, the iteration matrix's values and the whole
Newton loop (issue 14: the lean Newton iteration; issue 35: kernels that take named structures).

:func:`element_iterate` does one iteration's work of ``GeneralizedAlpha.step`` in one compiled call: the
update formulas (Arnold & Brüls eq. 13–16), the trial state, the drives, forward kinematics, the bodies'
masses and forces (elements/rigid_body eq. 1–2), the beams' forces and inertia (elements/beam eq. 5–7),
eq. (1) of engine/assembly.py on the free coordinates with the bearing friction's torques
(engine/friction.py eq. 1) and, at the first iteration, the force scale of Newton's test;
:func:`element_matrix` writes the iteration matrix's values M̄ + γ' C̄ + β' K̄ on the factor's pattern;
:func:`element_newton_step` runs the Python step's Newton loop around them on the dense or band factor.
All call the same kernels in the same order as the Python evaluation, so a step's result is the same bit
for bit (tests/test_element_step.py). :class:`flexmb.solvers.element_step.ElementStep` builds their
arguments.

The arguments are named structures (docs/architecture.md P6): :class:`IterateModel` (the model's arrays
an iterate reads), :class:`MatrixMaps` (where the iteration matrix's values go), :class:`StepModel` (both
and the factor's arrays: what :class:`flexmb.solvers.step_args.StepArgs` holds, one pointer per call from
Python), :class:`StepBuffers` (the arrays a step writes: new per step on the step-by-step path, their State
and Evaluation keep them), :class:`StepStart` (the step's time inputs and start state) and
:class:`NewtonSettings`.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.beam import kernels as beam_kernels
from flexmb.elements.beam.kernel_data import MatrixWeights, NodeMotion, ScatterMaps
from flexmb.elements.cut_kernels import bushing_blocks, bushing_forces
from flexmb.engine.band_cholesky import band_factor_loaded, band_solve
from flexmb.engine.dense_cholesky import dense_factor, dense_solve
from flexmb.engine.friction import friction_diag, friction_loads
from flexmb.engine.iteration_matrix import _composite_pairs, _scatter_elements
from flexmb.engine.kinematics import (
    _node_twists,
    _project_node,
    mass_times_add,
    node_twists_threads,
    project_node_threads,
    zero_mass_times_add,
)
from flexmb.engine.tree_data import Coordinates, DriveValues, KinematicsArrays, StepInputs, StepState, TreeOutputs
from flexmb.engine.tree_data import StepModel as TreeStepModel
from flexmb.solvers.element_families import (
    BUSHING_G,
    any_cut_or_spring,
    any_with_state,
    cut_and_spring_forces,
    cut_and_spring_matrix,
    flag_arrays,
    flags_of,
)
from flexmb.solvers.family_tuples import IA, Families, FamilyOutputs
from flexmb.solvers.motion_load_step import node_load_matrix, node_loads_iterate
from flexmb.solvers.motion_step import with_motion_diag
from flexmb.solvers.tree_step import (
    NONFINITE,
    NOT_CONVERGED,
    NOT_POSITIVE,
    OK,
    _absmax,
    _evaluate,
    newton_diverging,
    newton_tolerances,
    trial_state,
    trial_state_threads,
)

__all__ = ["LAZY", "IterateModel", "MatrixMaps", "StepModel", "StepBuffers", "StepStart", "NewtonSettings",
           "element_iterate", "element_matrix", "element_newton_step", "newton_loop"]

LAZY = 4  # element_newton_step: converged by prediction, the last iterate not evaluated


class IterateModel(NamedTuple):
    """The model's arrays an iterate reads: the tree (parent, child, ..., coord_start, coord_count), the
    bodies, gravity, the joint springs and motion (``springs``), the applied joint forces' coordinates,
    the coordinates (u_to_q, scalar_u, ball_u, free, c_diag, k_diag), the families' arrays ``fams`` (a
    family_tuples.Families: beams, bushings, rigid cuts, spring-dampers, couplings, actuators, rotational ones, loads
    of the motion) and ``threads`` =
    (the beams' passes', the joints on ground's) threads (flexmb/engine/parallel.py)."""

    tree: tuple
    bodies: tuple
    gravity: np.ndarray
    springs: tuple
    jforce_u: np.ndarray
    coords: tuple
    fams: Families
    threads: tuple


class MatrixMaps(NamedTuple):
    """Where the iteration matrix's values go (ElementStep's ``maps`` or ``band_maps``): M̄'s node-mass pairs
    (pa, pb), their positions and sources ``mbar``, the diagonal's positions and the families' scatter plans."""

    pairs: tuple
    mbar: tuple
    diag_pos: np.ndarray
    scatters: tuple


class StepModel(NamedTuple):
    """What stays the same over a run's steps on one factor: :class:`IterateModel`, :class:`MatrixMaps` and
    the factor's arrays ``factor`` = (band, indptr, indices, values, L, perm, dinv, y)
    (ElementStep.factor_arrays)."""

    model: IterateModel
    maps: MatrixMaps
    factor: tuple


class StepBuffers(NamedTuple):
    """The arrays a step's iterates write: the trial state ``out_state`` = (q, balls, u, u̇, a1), the
    kinematics ``kin`` = (x, R, Vs, As, S, Sd, P, V, ζ), Mb, the node wrenches ``wfull`` (N+1, 6), τ, the
    families' outputs ``outs`` (a family_tuples.FamilyOutputs), eq. (1) on all coordinates ``rfull`` and the free
    ones ``r``, and ``work`` (ending with the bearing friction's arrays, engine/friction.py friction_arrays)."""

    out_state: tuple
    kin: tuple
    Mb: np.ndarray
    wfull: np.ndarray
    tau: np.ndarray
    outs: FamilyOutputs
    rfull: np.ndarray
    r: np.ndarray
    work: tuple


class StepStart(NamedTuple):
    """A step's time inputs at its end (the applied joint forces' values ``jf``, the nodal loads (N, 6),
    the drives (driven, q, q̇, q̈)), ``params`` = (αm, αf, γ, β, h) and its start (q, balls, u, u̇, a)."""

    jf: np.ndarray
    loads: np.ndarray
    drives: tuple
    params: tuple
    q0: np.ndarray
    balls0: np.ndarray
    u0: np.ndarray
    udot0: np.ndarray
    a: np.ndarray


class NewtonSettings(NamedTuple):
    """Newton's settings of a step: (γ', β'), the tolerances (rtol, atol_u̇, eps_pos, length scale), the
    iteration limit, whether a step may end lazily, whether the model has node masses and the coordinates'
    levers (the round-off floor (N1))."""

    gp: float
    bp: float
    rtol: float
    atol_udot: float
    eps_pos: float
    length_scale: float
    max_iter: int
    lazy: bool
    with_mass: bool
    lever: np.ndarray


@njit(cache=True)
def _project(tree, nt, ground, rest, S, wrench, x, Wtmp, p) -> None:
    """p = Bᵀ ``wrench`` (the node wrenches projected on the coordinates), on ``nt`` of the joints' threads."""
    if nt > 1:
        project_node_threads(ground, rest, nt, tree[0], tree[1], tree[13], tree[14], S, wrench, x, Wtmp, p)
    else:
        _project_node(tree[0], tree[1], tree[13], tree[14], S, wrench, x, Wtmp, p)


@njit(cache=True)
def element_iterate(arrays, bufs, start, udot_in, evaluate, first):
    """One Newton iterate of ``GeneralizedAlpha.step`` (module docstring) of the model's arrays ``arrays``
    (:class:`IterateModel`) in the step ``start`` (:class:`StepStart`): from the accelerations ``udot_in``
    the pseudo-acceleration, trial state and drives into bufs.out_state (:class:`StepBuffers`); with
    ``evaluate`` also the kinematics, Mb, the node wrenches, τ, the families' outputs, eq. (1) on all
    coordinates and on the free ones (the bearing friction's torques and radial loads written into
    bufs.work's friction arrays, engine/friction.py eq. 1). Returns (max |r|, force scale; the scale only
    at the ``first`` iteration, else 0; both 0 without ``evaluate``; inf where a spring-damper is too
    short, (S11) of docs/spring_damper.md, or a load of the motion not finite: ElementStep.iterate names it).
    Each named tuple is unpacked once here and the callees get the arrays they use: a read of a tuple's
    field in compiled code takes (and later drops) a reference to each of its arrays, some hundreds for
    ``fams`` and ``outs`` (benchmarks/results/2026-11-28-element_step_structref.md)."""
    tree, bodies, gravity, springs, jforce_u, coords, fams, threads = arrays
    out_state, kin, Mb, wfull, tau, outs, rfull, r, work = bufs
    jf, loads, drives, params, q0, balls0, u0, udot0, a = start
    parent, child, coord_start, coord_count = tree[0], tree[1], tree[13], tree[14]
    drive_values, coordinates = DriveValues(*drives), Coordinates(*coords)  # the same arrays, named (engine/tree_data.py)
    free = coordinates.free
    q1, balls1, u1, udot1, a1 = out_state
    x, R, Vs, As, S, Sd, P, V, zeta = kin
    hdq, phi, aw, w, Wtmp, mf, ground, rest, fric = work
    nt = threads[1]  # the per-node passes on the joints' threads (their joints on ground split: node_twists_threads)
    step_start, state = StepState(q0, balls0, u0, udot0, a), StepState(q1, balls1, u1, udot1, a1)
    if nt > 1:
        trial_state_threads(nt, step_start, udot_in, params, coordinates, drive_values, hdq, phi, state)
    else:
        trial_state(step_start, udot_in, params, coordinates, drive_values, hdq, phi, state)
    if not evaluate:
        return 0.0, 0.0
    # Assembler.evaluate: the tree and the bodies, then the bushings (bushing.evaluate), then the beams (beam.evaluate)
    _evaluate(TreeStepModel(tree, bodies, gravity, springs, jforce_u, coordinates), StepInputs(jf, loads, drive_values), state,
              KinematicsArrays(x, R, Vs, As, S, Sd, P, V, zeta), TreeOutputs(Mb, wfull, tau, rfull), nt)
    if fams.bushing[IA].size:
        bushing_forces(x, R, V, fams.bushing, wfull, outs.bushing)
    # Evaluation.residual: r = Bᵀ (Mb B u̇ + bias + M_e B u̇) - τ; the beams' M_e B u̇ in their residual's pass
    if nt > 1:
        node_twists_threads(ground, rest, nt, parent, child, coord_start, coord_count, S, udot1, x, aw)
    else:
        _node_twists(parent, child, coord_start, coord_count, S, udot1, x, aw)
    mf[:] = 0.0
    beam = fams.beam
    if beam.a.size:
        beam_kernels.residual_and_mass_forces(beam, NodeMotion(x, R, V, zeta), gravity, 1.0, wfull, aw, mf, outs.beam,
                                              threads[0])
    if any_cut_or_spring(fams) and cut_and_spring_forces(x, R, V, S, q1, u1, fams, outs, wfull):
        return np.inf, 0.0  # a spring-damper below l_min (S11): fails
    if node_loads_iterate(fams.motion_load, x, R, V, wfull):  # the loads of the motion, last (M12); one not finite
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
    _project(tree, nt, ground, rest, S, w, x, Wtmp, rfull)
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
    if not first:
        return rn, 0.0
    return rn, _force_scale(tree, nt, (ground, rest, S, x, Wtmp), Mb, aw, bias, tau, bodies[0].size > 0)


@njit(cache=True)
def _force_scale(tree, nt, projection, Mb, aw, bias, tau, with_bodies) -> float:
    """GeneralizedAlpha._scale at the first iterate of a step: |Bᵀ Mb B u̇| + |Bᵀ bias| + |τ| (node masses
    only: without bodies Mb is zero and so is its term; u̇ is finite where r is), with ``projection`` =
    (ground, rest, S, x, Wtmp) of :func:`_project` and the node accelerations ``aw``."""
    ground, rest, S, x, Wtmp = projection
    N = x.shape[0]
    s1 = 0.0
    if with_bodies:
        mw = np.empty((N, 6))
        mass_times_add(Mb, aw, np.zeros((N, 6)), mw)
        p1 = np.empty(tau.size)
        _project(tree, nt, ground, rest, S, mw, x, Wtmp, p1)
        s1 = _absmax(p1)
    p2 = np.empty(tau.size)
    _project(tree, nt, ground, rest, S, np.ascontiguousarray(bias), x, Wtmp, p2)
    return float(s1 + _absmax(p2) + _absmax(tau)) + 1e-300


@njit(cache=True)
def element_matrix(tree, fams, maps, outs, diag, terms, kin, Mb, data, threads) -> None:
    """The iteration matrix's values on the factor's pattern into ``data`` (IterationMatrix.assemble with
    the beams' fused kernel, same order), ``terms`` = (ck, cc, material_only, with_mass, beam_stiffness) (without
    ``beam_stiffness`` the beams add their mass alone, B_eᵀ M B_e: the projection matrix M̄ + β' K̄_c of
    cut_projection.projection_solve, Assembler.iteration_matrix(projection=True)): M̄'s node-mass
    pairs (composite-rigid-body algorithm, if ``with_mass``), ``diag`` on the diagonal, then every
    bushing's B_eᵀ Gᵀ (ck K + cc C) G B_e (elements/cut_kernels.py), then every beam's
    B_eᵀ (ck K + cc C + M) B_e (on threads[0] threads: elements/beam/kernels.py), the rigid cuts'
    penalties, the other families' blocks ((S8) or (S10) of docs/spring_damper.md), in the lower triangle
    only (``maps``: :class:`MatrixMaps`, of ElementScatter.lower_only: the upper one stays 0 from the
    elements; CHOLMOD and dense_factor read the lower one; the beams' scatter plan ends with the (doff,
    dmap) of ElementScatter.thread_plan for threads[0] threads), the same values there bit for bit; S and
    x of the kinematics ``kin``."""
    ck, cc, material_only, with_mass, beam_stiffness = terms
    S, x = kin[4], kin[0]
    parent, child, coord_start, coord_count = tree[0], tree[1], tree[13], tree[14]
    pa, pb = maps.pairs
    mbar_pos, mbar_src = maps.mbar
    diag_pos, scatters = maps.diag_pos, maps.scatters
    beam, bushing = fams.beam, fams.bushing
    nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, skip, plan = scatters[0]
    data[:] = 0.0
    if with_mass:
        vals = np.empty(pa.size)
        _composite_pairs(Mb, x, parent, child, coord_start, coord_count, S, pa, pb, vals)
        for t in range(mbar_pos.size):
            data[mbar_pos[t]] += vals[mbar_src[t]]
    for t in range(diag_pos.size):
        data[diag_pos[t]] += diag[t]
    if bushing[IA].size:
        blocks = scatters[2]
        bushing_blocks(outs.bushing[BUSHING_G], bushing[7], bushing[8], ck, cc, blocks)  # G, K, C
        bn, banc_ptr, banc_coord, bpos_ptr, bpos, bmax_ne = scatters[1]
        _scatter_elements(bn, banc_ptr, banc_coord, bpos_ptr, bpos, S, x, blocks, bmax_ne, data)
    if beam.a.size:
        bk, bc = (ck, cc) if beam_stiffness else (0.0, 0.0)
        beam_kernels.add_element_matrices(outs.beam, beam, MatrixWeights(bk, bc, 1.0, material_only),
                                          ScatterMaps(nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne, skip), S, x, data,
                                          threads[0], plan)
    if any_cut_or_spring(fams):
        cut_and_spring_matrix(fams, outs, scatters, ck, cc, material_only, S, x, data)
    node_load_matrix(fams.motion_load, scatters[13], scatters[14], ck, cc, S, x, data)


@njit(cache=True)
def _solve(factor, r, dx) -> None:
    """dx = S⁻¹ r with the dense or band factor ``factor``."""
    band, indptr, indices, values, L, perm, dinv, y = factor
    if band:
        band_solve(perm, L, dinv, r, dx, y)
    else:
        dense_solve(L, r, dx)


@njit(cache=True)
def _predicts(dxs, n_dx, dx_tol, gp, bp, eps_pos, vscale) -> bool:
    """GeneralizedAlpha._predicts_convergence from the corrections' sizes ``dxs[:n_dx]``."""
    theta = dxs[n_dx - 1] / dxs[n_dx - 2] if n_dx > 1 and dxs[n_dx - 2] > 0 else np.inf
    nxt = theta / (1 - theta) * dxs[n_dx - 1] if theta < 0.5 else dxs[n_dx - 1]
    return nxt <= dx_tol or (bp * nxt <= eps_pos and gp * nxt <= 1e-11 * vscale)


@njit(cache=True)
def _at_noise(dx, lever, dxws, n_dxw, bp, noise) -> bool:
    """A family's round-off floor (GeneralizedAlpha._at_noise, (N1)): the correction's node motion
    max |dx lever| into dxws[n_dxw]; whether the last three stall below ``noise``."""
    m = 0.0
    for j in range(dx.size):
        m = max(m, abs(dx[j] * lever[j]))
    dxws[n_dxw] = m
    return n_dxw >= 2 and dxws[n_dxw] >= 0.1 * dxws[n_dxw - 2] and bp * dxws[n_dxw] <= noise


@njit(cache=True)
def element_newton_step(args, bufs, start, diag, newton, info) -> None:
    """The whole Newton loop of ``GeneralizedAlpha.step`` (:func:`newton_loop`) with the model's arrays of ``args``,
    a flexmb.solvers.step_args.StepArgs of the :class:`StepModel` (one pointer from Python; its field read once)."""
    model, maps, factor = args.step
    newton_loop(model, maps, factor, bufs, start, diag, newton, info)


@njit(cache=True)
def newton_loop(arrays, maps, factor, bufs, start, diag, newton, info) -> None:
    """The whole Newton loop of ``GeneralizedAlpha.step`` for a model of ElementStep.applies on the dense
    factor (flexmb/engine/dense_cholesky.py) or the band factor (flexmb/engine/band_cholesky.py) with a
    fresh factor per step: the loop of the Python step around :func:`element_iterate`,
    :func:`element_matrix`, the factor's factorization and solves, the same tests in the same order (the
    residual test, the predicted convergence, divergence), so the same result bit for bit; S's diagonal
    ``diag`` gets the motion's and the bearing friction's slopes at each factorized iterate (with_motion_diag,
    friction_diag, engine/friction.py eq. 2). ``arrays``: :class:`IterateModel`; ``maps``: :class:`MatrixMaps` (on
    the band factor S's values go straight into its band storage: the band's positions, ElementStep.band_maps, the
    same values as loaded from the pattern, bit for bit); ``factor``: ElementStep.factor_arrays; ``bufs``:
    :class:`StepBuffers`; ``start``: :class:`StepStart`; ``newton``: :class:`NewtonSettings`. Writes ``info`` =
    (iterations, factorizations, residual, status, column of a failed pivot); status LAZY: converged by
    prediction, the last iterate not evaluated (its state only). The named tuples are unpacked once
    (element_iterate's docstring says why)."""
    tree, springs, free, fams, threads = arrays.tree, arrays.springs, arrays.coords[3], arrays.fams, arrays.threads
    out_state, kin, Mb, outs, r, fric = bufs.out_state, bufs.kin, bufs.Mb, bufs.outs, bufs.r, bufs.work[8]
    gp, bp, rtol, atol_udot, eps_pos, length_scale, max_iter, lazy, with_mass, lever = newton
    band, indptr, indices, values, L, perm, dinv, y = factor
    udot1, nf = out_state[3], free.size
    ud, dx, sdiag = start.udot0.copy(), np.empty(nf), diag.copy()
    r_hist, dxs = np.empty(int(max_iter) + 1), np.empty(int(max_iter) + 1)
    dxws = np.empty(int(max_iter) + 1)  # the corrections' node motions, for the round-off floor (N1)
    with_state, flags = any_with_state(fams), flag_arrays(fams, outs)  # once per step (flag_arrays: why)
    n_dx = n_dxw = nfac = 0
    fresh = predicted = False
    scale = dx_tol = vscale = 0.0
    info[3], info[4] = OK, -1.0
    for it in range(int(max_iter) + 1):
        evaluate = not (lazy and predicted)
        rn, es_scale = element_iterate(arrays, bufs, start, ud, evaluate, it == 0)
        info[0], info[1] = it, nfac
        if not evaluate:
            info[2], info[3] = np.nan, LAZY
            return
        info[2] = rn
        if not math.isfinite(rn):
            info[3] = NONFINITE
            return
        settled, changed, noise, stuck = True, False, 0.0, False
        if with_state:  # the updates of the cuts, actuators, couplings
            settled, changed, noise, stuck = flags_of(flags)
        if stuck:  # a cut or actuator stuck (its newton_update raises): the Python step names it
            info[3] = NOT_CONVERGED
            return
        r_hist[it] = rn
        if it == 0:  # GeneralizedAlpha.step: the scale and the tolerances of the corrections
            scale = es_scale
            dx_tol, vscale = newton_tolerances(udot1, start.u0, free, start.params[4], rtol, atol_udot, length_scale)
        if (rn <= max(rtol * scale, 0.0) or predicted) and settled:
            return
        if it == max_iter or newton_diverging(r_hist, it):
            info[3] = NOT_CONVERGED
            return
        if not fresh or changed:  # S at the iterate with the motion's and the friction's slopes, factorized
            mdiag = with_motion_diag(springs[5], gp, bp, diag)
            if fric[0].size:
                friction_diag(out_state[2], fric[0], fric[8], fric[5], fric[6], fric[7], fric[10], fric[11], gp, mdiag, sdiag)
                mdiag = sdiag
            element_matrix(tree, fams, maps, outs, mdiag, (bp, gp, False, with_mass, True), kin, Mb, values, threads)
            bad = band_factor_loaded(perm, L, dinv) if band else dense_factor(indptr, indices, values, L)
            if bad >= 0:
                info[3], info[4] = NOT_POSITIVE, bad
                return
            nfac += 1
            info[1] = nfac
            fresh = True
            n_dx = n_dxw = 0
        _solve(factor, r, dx)
        dxs[n_dx] = _absmax(dx)
        n_dx += 1
        for j in range(ud.size):
            ud[j] = udot1[j]
        for j in range(nf):
            ud[free[j]] -= dx[j]
        predicted = _predicts(dxs, n_dx, dx_tol, gp, bp, eps_pos, vscale)
        if noise > 0.0:  # a family's round-off floor (GeneralizedAlpha._at_noise)
            predicted = _at_noise(dx, lever, dxws, n_dxw, bp, noise) or predicted
            n_dxw += 1
    info[3] = NOT_CONVERGED
