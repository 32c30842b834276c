"""The rigid cuts' begin and end of a step, compiled, for the compiled run (issue 38: closed loops at
tree speed; flexmb/solvers/element_run.py).

A step of a model with rigid cuts (elements/rigid_cut.py; docs/rigid_cut.md) starts with the cuts'
penalty for the step size (RigidCuts.begin_step, (AL7)) and ends, after Newton, with the cut forces
stored as multipliers (AL8) and the mass-orthogonal projections of the velocities (AL5) and of the
accelerations (AL6) with the multipliers' update (AL9), up to three passes each
(RigidCuts.end_step). :func:`begin_cuts` and :func:`end_cuts` do that arithmetic in the same
operations and order as the Python family on the per-step path (newton_loop.accept): the
closure rates and wrenches of elements/rigid_cut_kernels.py, the node twists and the projection of
wrenches onto the coordinates (engine/kinematics.py, what ``Evaluation.twists`` and ``project``
run), the kinematics at the projected velocities (the forward pass of ``forward_kinematics``) and
the factor's solve, with the Newton factor refactorized at the converged iterate where it is not
the step's (``solve`` of _accept: the factor key), so a run gives the same numbers bit for bit on
either path (tests/test_element_run.py). A model whose iteration matrix has stiffness or damping
beside the cuts' penalty (bushings, beams, joint springs, actuators: rigid_cut._elastic) projects with the
factor of M̄ + β' K̄_c instead (``solve_projection``, a second factor made at the step's first solve: M̄ with
the beams' mass, K̄_c the blocks of the cuts, actuators and couplings), and its bushings', beams' and spring-dampers'
dissipation is taken at the projected state (:func:`bushings_at`, :func:`beams_at`, :func:`springs_at`).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.beam import kernels as beam_kernels
from flexmb.elements.beam.kernel_data import NodeMotion
from flexmb.elements.cut_kernels import bushing_forces
from flexmb.elements.rigid_cut_kernels import (
    ESCALATION,
    KAPPA,
    PHASE,
    PREV,
    SMAX,
    S,
    closure_rates,
    closure_wrenches,
    gdot_times_v,
)
from flexmb.engine.band_cholesky import band_factor_loaded, band_solve
from flexmb.engine.dense_cholesky import dense_factor, dense_solve
from flexmb.engine.kinematics import _forward, _node_twists, _project_node
from flexmb.engine.tree_data import KinematicsArrays
from flexmb.solvers.element_families import CUT_ALPHA_MAT, CUT_FORCE, CUT_G, CUT_NXT
from flexmb.solvers.element_kernels import element_matrix
from flexmb.solvers.family_tuples import IA, Families
from flexmb.solvers.law_step import SPRING_FLAGS, spring_damper_laws_iterate
from flexmb.solvers.step_args import new_step_args
from flexmb.solvers.tree_step import _absmax

__all__ = ["CutModel", "CutWork", "cut_arrays", "held_cuts", "factor_key", "begin_cuts", "end_cuts", "projection_solve",
           "bushings_at", "beams_at", "springs_at"]

N_STATE = 10
KEY = 9
"""The factor key array of :class:`CutWork`: [valid, γ', β', factorizations in the end steps] of the
current step, then the same after the last step taken, then whether the projection factor is made
for the current step (``elastic``)."""


class CutModel(NamedTuple):
    """The rigid cuts of a model for the compiled end of step: the cuts' ends (node or ground N),
    cut points and frames, modes, held rows and whether each cut's penalty follows (AL7) (not given)."""

    ia: np.ndarray
    ib: np.ndarray
    sa: np.ndarray
    Ea: np.ndarray
    sb: np.ndarray
    Eb: np.ndarray
    mode: np.ndarray
    mask: np.ndarray
    scaled: np.ndarray
    elastic: bool


class CutWork(NamedTuple):
    """Buffers of the compiled end of step: the kinematics at the projected velocities (x, R, Vs, As,
    S, Sd (no rows), P, V, ζ), node twists (N, 6), closure rates and forces (n, 6), node wrenches
    (N+1, 6) and their origin form (N, 6), generalized forces (n_u), the free right-hand side (n_f),
    P Ġ V (n, 6), the penalties β'α (n, 6), the cuts' state at the step's end and after the last step
    taken (n, 10), the factor key (KEY,), and for a model with other stiffness (``elastic``) the
    projection factor (as element_newton_step's ``factor``, of GeneralizedAlpha._pchol), the element
    families of its matrix (the beams: their mass; the rigid cuts, actuators and couplings: their blocks with
    projection_blocks; the bushings, spring-dampers, rotational spring-dampers and loads of the motion left
    out; in the compiled call held in a flexmb.solvers.step_args.StepArgs, :func:`held_cuts`), a zero diagonal
    (n_f) and node wrenches (N+1, 6) for the bushings' forces at the projected state."""

    kin: KinematicsArrays
    twists: np.ndarray
    rates: np.ndarray
    forces: np.ndarray
    wrenches: np.ndarray
    origin: np.ndarray
    gen: np.ndarray
    rhs: np.ndarray
    gdv: np.ndarray
    penalty: np.ndarray
    state: np.ndarray
    accepted: np.ndarray
    key: np.ndarray
    projection: tuple
    fams: Families
    zero_diag: np.ndarray
    scratch: np.ndarray


def cut_arrays(fams: Families, penalty: np.ndarray, elastic: bool, kin: tuple, n_u: int, n_free: int, state: np.ndarray,
               key: tuple[float, float] | None, projection: tuple) -> tuple[CutModel, CutWork]:
    """The CutModel of ElementStep's families (beams, bushings, rigid cuts (ia, ib, sa, Ea, sb, Eb,
    mode, mask, ...), spring-dampers) with the cuts' given penalties (NaN: (AL7)) and whether they project with their
    own factor ``projection`` (``elastic``: rigid_cut._elastic), and new buffers like ``kin`` (the
    step's kinematics arrays), the cuts' state ``state`` of the run's start and the integrator's
    factor key (GeneralizedAlpha._factor_key)."""
    ia, ib, sa, Ea, sb, Eb, mode, mask = fams.rigid_cut[:8]
    model = CutModel(ia, ib, sa, Ea, sb, Eb, mode, mask, np.isnan(np.asarray(penalty, dtype=float)), bool(elastic))
    n, N = ia.size, kin[0].shape[0]
    k = factor_key(np.empty(KEY), key)
    e6 = (n, 6)
    no_bushings = tuple(a[:0] for a in fams.bushing)
    no_springs = tuple(a[:0] for a in fams.spring_damper)  # no mass: not in the projection's matrix (springs_at: their power)
    work = CutWork(KinematicsArrays(*(np.empty_like(a) for a in kin)), np.empty((N, 6)), np.empty(e6), np.empty(e6),
                   np.empty((N + 1, 6)), np.empty((N, 6)), np.empty(n_u), np.empty(n_free), np.empty(e6), np.empty(e6),
                   np.empty((n, N_STATE)), np.array(state, dtype=float).reshape(n, N_STATE), k, projection,
                   fams._replace(bushing=no_bushings, spring_damper=no_springs, rotational=tuple(a[:0] for a in fams.rotational),
                                 motion_load=tuple(a[:0] for a in fams.motion_load)), np.zeros(n_free),
                   np.zeros((N + 1, 6)))
    return model, work


@njit(cache=True)
def held_cuts(cuts: tuple) -> tuple:
    """element_run's ``cuts`` = (CutModel, CutWork, ActuatorWork, CouplingWork) for its steps: the CutWork's
    projection families ``fams`` held in a flexmb.solvers.step_args.StepArgs, read as ``fams.step`` only where the
    projection factor is made (:func:`projection_solve`). The end of a step passes the work to some ten calls, and
    a call that takes a tuple references every array in it (docs/architecture.md P6): a hundred for the families.
    Made inside the call, so the call's argument stays plain named tuples, which numba types from Python by their
    fingerprint (a StructRef among them would have it type the whole argument field by field, about 1 ms per call)."""
    model, w, act, coupling = cuts
    held = CutWork(w.kin, w.twists, w.rates, w.forces, w.wrenches, w.origin, w.gen, w.rhs, w.gdv, w.penalty, w.state,
                   w.accepted, w.key, w.projection, new_step_args(w.fams), w.zero_diag, w.scratch)
    return model, held, act, coupling


def factor_key(k: np.ndarray, key: tuple[float, float] | None) -> np.ndarray:
    """CutWork.key ``k`` (KEY,) set for a call's start from the integrator's factor key (γ', β') or None
    (GeneralizedAlpha._factor_key): the call's factor (0:3) and the last step's (4:7) are it, no counts."""
    k[:] = 0.0
    if key is not None:
        k[0], k[1], k[2] = 1.0, key[0], key[1]
    k[4:7] = k[0:3]
    return k


@njit(cache=True)
def begin_cuts(accepted, scaled, bp, cst) -> None:
    """RigidCuts.begin_step into ``cst``: the state of the last step taken with the step's penalty
    factor S = κ / β' where the penalty is not given (else 1), SMAX = ESCALATION S (AL7, AL11), the
    first iterate's phase and no previous closure."""
    for e in range(cst.shape[0]):
        for j in range(N_STATE):
            cst[e, j] = accepted[e, j]
        s = KAPPA / bp if scaled[e] else 1.0
        cst[e, S] = s
        cst[e, SMAX] = ESCALATION * s
        cst[e, PHASE] = 0.0
        cst[e, PREV] = np.inf


@njit(cache=True)
def _held_max(c, mask) -> float:
    """max |c| over the held rows (0 for none, NaN if one is NaN): np.abs(c[mask]).max(initial=0.0)."""
    m = 0.0
    for e in range(c.shape[0]):
        for i in range(6):
            if mask[e, i]:
                v = c[e, i]
                if v != v:
                    return v
                m = max(m, abs(v))
    return m


@njit(cache=True)
def projection_solve(work, gp, bp, matrix, elastic) -> bool:
    """work.rhs ← S⁻¹ work.rhs with the Newton factor (newton_loop.accept's ``solve``), S first
    refactorized at the converged iterate where the factor is not that of (γ', β') (work.key); with
    ``elastic`` instead with the projection factor of M̄ + β' K̄_c at the converged iterate, made at
    the step's first solve (``solve_projection``: Assembler.iteration_matrix(projection=True): M̄ with the
    beams' mass and the cuts' and actuators' penalty blocks, no diagonal). False where a factorization meets a pivot that is not
    positive. ``matrix`` = (a flexmb.solvers.step_args.StepArgs of (tree, fams, maps, outs, diag, with_mass, kin, Mb,
    factor, threads), the Newton factor's arrays ``factor``): the structure is read (its some 270 arrays referenced)
    only where S or the projection factor is made, not at every solve (docs/architecture.md P6)."""
    held, factor = matrix
    band, indptr, indices, values, L, perm, dinv, y = work.projection if elastic else factor
    key = work.key
    if elastic:
        if key[8] == 0.0:
            (tree, _, maps, outs, _, with_mass, kin, Mb, _, threads) = held.step
            element_matrix(tree, work.fams.step, maps, outs, work.zero_diag, (bp, 0.0, False, with_mass, False), kin, Mb,
                           values, threads)
            bad = band_factor_loaded(perm, L, dinv) if band else dense_factor(indptr, indices, values, L)
            if bad >= 0:
                return False
            key[8] = 1.0
    elif not (key[0] > 0.0 and key[1] == gp and key[2] == bp):
        (tree, fams, maps, outs, diag, with_mass, kin, Mb, _, threads) = held.step
        element_matrix(tree, fams, maps, outs, diag, (bp, gp, False, with_mass, True), kin, Mb, values, threads)
        bad = band_factor_loaded(perm, L, dinv) if band else dense_factor(indptr, indices, values, L)
        if bad >= 0:
            return False
        key[0], key[1], key[2] = 1.0, gp, bp
        key[3] += 1.0
    if band:
        band_solve(perm, L, dinv, work.rhs, work.rhs, y)
    else:
        dense_solve(L, work.rhs, work.rhs)
    return True


@njit(cache=True)
def _correct(tree, kin, cuts, G, work, free, v, gp, bp, matrix) -> bool:
    """v_f ← v_f - S⁻¹ [Bᵀ Gᵀ Pᵀ (β'α c)]_f for the closure rates c in work.rates (AL5, AL6)."""
    f, pen, c = work.forces, work.penalty, work.rates
    for e in range(c.shape[0]):
        for i in range(6):
            f[e, i] = pen[e, i] * c[e, i]
    closure_wrenches(G, cuts.mask, f, cuts.ia, cuts.ib, work.wrenches)
    N = kin[0].shape[0]
    _project_node(tree[0], tree[1], tree[13], tree[14], kin[4], work.wrenches[:N], kin[0], work.origin, work.gen)
    for j in range(free.size):
        work.rhs[j] = work.gen[free[j]]
    if not projection_solve(work, gp, bp, matrix, cuts.elastic):
        return False
    for j in range(free.size):
        v[free[j]] = v[free[j]] - work.rhs[j]
    return True


@njit(cache=True)
def _acceleration_rates(tree, kin, cuts, G, work, udot) -> None:
    """work.rates = P G (B u̇ + ζ) + P Ġ V: the closure's acceleration (AL6), ζ at the projected velocities."""
    tw, zeta = work.twists, work.kin[8]
    _node_twists(tree[0], tree[1], tree[13], tree[14], kin[4], udot, kin[0], tw)
    for i in range(tw.shape[0]):
        for j in range(6):
            tw[i, j] = tw[i, j] + zeta[i, j]
    closure_rates(G, cuts.mask, tw, cuts.ia, cuts.ib, work.rates)
    c, g = work.rates, work.gdv
    for e in range(c.shape[0]):
        for i in range(6):
            c[e, i] = c[e, i] + g[e, i]


@njit(cache=True)
def end_cuts(tree, kin, cuts, work, cut_outs, free, state, gp, bp, matrix, threads) -> bool:
    """RigidCuts.end_step at the converged iterate (its kinematics ``kin``, the cuts' outputs
    ``cut_outs`` of element_newton_step) of ``state`` = (q, balls, u, u̇): the state work.state = the
    iterate's next state with the multipliers the cut forces (AL8) and the accepted phase; the velocities
    ``u`` projected (AL5), the kinematics at them into work.kin, the accelerations ``udot`` projected with
    the multipliers updated (AL6, AL9), each up to three passes, in place. ``matrix``: what solves with and
    refactorizes S (:func:`projection_solve`'s). False where a
    factorization failed (the step is then left to the Python path)."""
    q, balls, u, udot = state
    G, alpha_mat, force, nxt = cut_outs[CUT_G], cut_outs[CUT_ALPHA_MAT], cut_outs[CUT_FORCE], cut_outs[CUT_NXT]
    st, pen, c = work.state, work.penalty, work.rates
    work.key[8] = 0.0  # no projection factor yet for this step
    for e in range(st.shape[0]):
        for j in range(N_STATE):
            st[e, j] = nxt[e, j]
        for i in range(6):
            st[e, i] = force[e, i]  # (AL8)
            pen[e, i] = bp * alpha_mat[e, i]  # the penalties of the last matrix (fe.alpha_next where raised)
        st[e, PHASE] = -1.0
    for _ in range(3):  # (AL5)
        _node_twists(tree[0], tree[1], tree[13], tree[14], kin[4], u, kin[0], work.twists)
        closure_rates(G, cuts.mask, work.twists, cuts.ia, cuts.ib, c)
        if _held_max(c, cuts.mask) <= 1e-14 * (_absmax(u) + 1.0):
            break
        if not _correct(tree, kin, cuts, G, work, free, u, gp, bp, matrix):
            return False
    k2 = work.kin  # forward_kinematics at the projected velocities (GeneralizedAlpha._kinematics)
    k2[5][:] = 0.0
    _forward(tree, q, balls, u, k2, threads[1])
    gdot_times_v(k2[0], k2[1], k2[7], cuts.ia, cuts.ib, cuts.sa, cuts.Ea, cuts.sb, cuts.Eb, cuts.mode, cuts.mask, work.gdv)
    for _ in range(3):  # (AL6), (AL9)
        _acceleration_rates(tree, kin, cuts, G, work, udot)
        if _held_max(c, cuts.mask) <= 1e-14 * (_absmax(udot) + 1.0):
            break
        if not _correct(tree, kin, cuts, G, work, free, udot, gp, bp, matrix):
            return False
        _acceleration_rates(tree, kin, cuts, G, work, udot)
        for e in range(st.shape[0]):
            for i in range(6):
                st[e, i] = st[e, i] + pen[e, i] * c[e, i]
    return True


@njit(cache=True)
def bushings_at(work, bushing, bushing_outs) -> None:
    """The bushings' forces, energies and powers (bushing.evaluate; ``bushing_outs`` (d, G, A, f,
    energy, power)) at the kinematics work.kin of the projected state: the dissipation of the
    evaluation there (newton_loop.accept's ``ev1``, the recorder's power)."""
    if bushing[IA].size:
        k2 = work.kin
        bushing_forces(k2[0], k2[1], k2[7], bushing, work.scratch, bushing_outs)


@njit(cache=True)
def beams_at(work, beam, gravity, beam_outs, threads) -> None:
    """The beams' forces, energies and dissipated powers (beam.evaluate; ``beam_outs`` their BeamResults) at the
    kinematics work.kin of the projected state, on ``threads`` threads: the dissipation of the evaluation there
    (newton_loop.accept's ``ev1``, the recorder's power); their node forces into the scratch work.scratch."""
    if beam.a.size:
        k2 = work.kin
        no_acc = np.zeros((0, 6))
        work.scratch[:] = 0.0
        beam_kernels.residual_and_mass_forces(beam, NodeMotion(k2[0], k2[1], k2[7], k2[8]), gravity, 1.0, work.scratch,
                                              no_acc, no_acc, beam_outs, threads)


@njit(cache=True)
def springs_at(work, spring, spring_outs) -> bool:
    """The spring-dampers' forces, energies and powers, their force laws' too (SpringDampers.evaluate;
    ``spring_outs`` as spring_damper_laws_iterate's) at the kinematics work.kin of the projected state, at the
    step's end time (the laws' time array, set for the step): the dissipation of the evaluation there
    (newton_loop.accept's ``ev1``, the recorder's power). False where an element is shorter than its l_min
    (docs/spring_damper.md (S11)) or a law's value is not finite there (S12): the step is then left to the
    Python path, which names it."""
    if spring[IA].size == 0:
        return True
    k2 = work.kin
    spring_damper_laws_iterate(k2[0], k2[1], k2[7], spring, spring_outs, work.scratch)
    return spring_outs[SPRING_FLAGS][0] < 0.0
