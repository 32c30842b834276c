"""The compiled element step's rigid cuts, spring-dampers, actuators, couplings and rotational
spring-dampers (flexmb/solvers/element_step.py): their forces into the node wrenches of an iterate and
their blocks into the iteration matrix, in the order of the Python evaluation (registry order: rigid
cuts, spring-dampers, actuators, couplings, rotational spring-dampers), so a step is the same bit for
bit (elements/rigid_cut_kernels.py, elements/spring_damper_kernels.py, docs/spring_damper.md,
flexmb/solvers/actuator_step.py, docs/actuator.md, elements/coupling_kernels.py, docs/coupling.md,
elements/rotational_spring_damper_kernels.py, docs/rotational_spring_damper.md)."""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from flexmb.elements import FAMILIES
from flexmb.elements.beam.kernel_data import beam_results
from flexmb.elements.coupling import CouplingEvaluation
from flexmb.elements.coupling_kernels import N_STATE, coupling_blocks, coupling_forces, coupling_rows, coupling_update
from flexmb.elements.family import FamilyEvaluation
from flexmb.elements.rigid_cut_kernels import closure_scales, penalty_blocks, rigid_cut_forces, rigid_cut_update
from flexmb.elements.rotational_spring_damper import kernel_arrays
from flexmb.elements.rotational_spring_damper_kernels import rotational_blocks, rotational_forces
from flexmb.elements.spring_damper_kernels import MATERIAL, TIME_STEP, spring_damper_blocks
from flexmb.engine.iteration_matrix import _scatter_elements
from flexmb.engine.kinematics import Kinematics
from flexmb.engine.pair_scatter import scatter_pairs
from flexmb.model import Model
from flexmb.solvers.actuator_step import (
    STUCK,
    actuator_error,
    actuator_evaluation,
    actuator_iterate,
    actuator_matrix,
    actuator_outputs,
)
from flexmb.solvers.family_tuples import IA, FamilyOutputs
from flexmb.solvers.law_step import SPRING_FLAGS, compile_torque_laws, law_refusal, spring_damper_laws_iterate, spring_outputs
from flexmb.solvers.motion_load_step import node_load_evaluation, node_load_refusal
from flexmb.solvers.motion_step import _call, compile_motion

__all__ = ["cut_and_spring_forces", "cut_and_spring_matrix", "any_cut_or_spring", "any_with_state", "coupling_arrays",
           "coupling_outputs", "cut_outputs", "family_outputs", "iterate_evaluations", "iterate_flags", "flag_arrays",
           "flags_of", "stuck_error", "element_step_refusal", "rotational_arrays", "rotational_outputs", "set_reference",
           "BUSHING_G", "BUSHING_POWER",
           "CUT_G", "CUT_FORCE", "CUT_CST", "CUT_NXT", "CUT_ALPHA_MAT", "CUT_FLAGS", "COUPLING_G", "COUPLING_POWER",
           "COUPLING_CST", "COUPLING_NXT", "COUPLING_FLAGS", "COUPLING_ALPHA_MAT", "ROT_POWER", "ROT_FLAGS"]

# The positions in the families' output tuples (FamilyOutputs' fields: family_outputs) that other kernels read
BUSHING_G, BUSHING_POWER = 1, 5  # outs.bushing: BushingResults' fields (d, G, A, f, energy, power)
CUT_G, CUT_FORCE, CUT_CST, CUT_NXT, CUT_ALPHA_MAT, CUT_FLAGS = 1, 6, 7, 8, 9, 11  # outs.rigid_cut: cut_outputs
COUPLING_G, COUPLING_POWER, COUPLING_CST, COUPLING_NXT, COUPLING_FLAGS, COUPLING_ALPHA_MAT = 0, 7, 8, 9, 10, 11  # outs.coupling
ROT_POWER, ROT_FLAGS = 5, 6  # outs.rotational: rotational_outputs


@njit(cache=True)
def _rigid_cuts(x, R, rigid, out, wfull):
    """The rigid cuts of an iterate (rigid_cut.evaluate, then rigid_cut.newton_update): forces into wfull
    with the state ``cst`` this iterate was started with, then the next state ``nxt`` (copied into
    ``cst`` for the next iterate), the penalties of the next matrix ``alpha_mat`` and ``flags`` =
    (strain energy, position noise, settled, changed, stuck cut or -1). ``rigid``: the fields of a
    RigidCutArrays (ia, ib, sa, Ea, sb, Eb, mode, mask, alpha_scale, tol, tol_rot); ``out`` = (d, G, A,
    phi, alpha, lam, force: a RigidCutResults' fields, then cst, nxt, alpha_mat, scale, flags)."""
    ia, ib, sa, Ea, sb, Eb, mode, mask, alpha_scale, tol, tol_rot = rigid
    d, G, A, phi, alpha, lam, force, cst, nxt, alpha_mat, scal, flags = out
    energy, noise = rigid_cut_forces(x, R, rigid, cst, wfull, (d, G, A, phi, alpha, lam, force))
    closure_scales(x, R, ia, ib, sa, sb, scal)
    settled, changed, stuck = rigid_cut_update(cst, lam, phi, mask, alpha_scale, tol, tol_rot, scal, nxt, alpha_mat)
    if not changed:
        alpha_mat[:] = alpha
    flags[0], flags[1], flags[4] = energy, noise, float(stuck)
    flags[2] = 1.0 if settled else 0.0
    flags[3] = 1.0 if changed else 0.0
    cst[:] = nxt  # the next iterate's state


@njit(cache=True)
def _couplings(S, x, q, u, cp, out, wfull):
    """The couplings of an iterate (Couplings.evaluate, then Couplings.newton_update, same kernels): rows
    G (C7), forces into wfull with the state ``cst`` of this iterate (C2)-(C4), (C11), then the next state
    ``nxt`` (coupling_update: (AL3), (AL4), (AL11), (AL13); copied into ``cst``), the penalties of the next
    matrix ``alpha_mat`` and ``flags`` = (strain energy, dissipated power, settled (C14), position noise
    (C16), stuck coupling or -1, changed). ``cp``: coupling_arrays; ``out``: coupling_outputs."""
    qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes, tree_child, t_idx, n_t, r_idx, n_r, own_t, own_pos, tol, lever = cp
    G, g, gdot, force, lam, alpha, energy, power, cst, nxt, flags, alpha_mat, ell = out
    coupling_rows(S, x, nodes, tree_child, t_idx, n_t, r_idx, n_r, own_t, own_pos, ratio, G)
    E, P, noise = coupling_forces(q, u, (qa, qb, ua, ub, ratio, offset, k, c, rigid, nodes, lever), cst, G, wfull,
                                  (g, gdot, force, lam, alpha, energy, power, ell))
    settled, changed, stuck = coupling_update(cst, lam, g, ell, rigid, tol, nxt, alpha_mat)
    if not changed:
        alpha_mat[:] = alpha
    flags[0], flags[1], flags[3], flags[4] = E, P, noise, float(stuck)
    flags[2] = 1.0 if settled else 0.0
    flags[5] = 1.0 if changed else 0.0
    cst[:] = nxt


@njit(inline="always")
def any_cut_or_spring(fams) -> bool:
    """Whether ``fams`` has rigid cuts, spring-dampers, actuators, couplings or rotational spring-dampers: the
    callers skip :func:`cut_and_spring_forces` and :func:`cut_and_spring_matrix` without (a call that passes the
    families' arrays costs about a microsecond even where it does nothing). Inlined into the caller."""
    return (fams.rigid_cut[IA].size > 0 or fams.spring_damper[IA].size > 0 or fams.actuator.ia.size > 0
            or fams.coupling[IA].size > 0 or fams.rotational[IA].size > 0)


@njit(inline="always")
def any_with_state(fams) -> bool:
    """Whether ``fams`` has rigid cuts, actuators or couplings, the families :func:`iterate_flags` reads (without
    them its flags are (True, False, 0.0, False): the caller skips the call). Inlined into the caller."""
    return fams.rigid_cut[IA].size > 0 or fams.actuator.ia.size > 0 or fams.coupling[IA].size > 0


@njit(cache=True)
def cut_and_spring_forces(x, R, V, S, q, u, fams, outs, wfull) -> bool:
    """The rigid cuts' forces and update (``fams.rigid_cut``, ``outs.rigid_cut``: _rigid_cuts), then the
    spring-dampers' (``fams.spring_damper``, ``outs.spring_damper``: spring_damper_laws_iterate, their force laws
    too), then the actuators' ((A4), (A5) of docs/actuator.md; ``fams.actuator``, ``outs.actuator``: actuator_iterate),
    then the couplings' (``fams.coupling``, ``outs.coupling``: _couplings), then the rotational spring-dampers'
    (``fams.rotational``, ``outs.rotational``: rotational_forces) into ``wfull`` (``fams``: a family_tuples.Families,
    ``outs``: a FamilyOutputs); True where a spring-damper or actuator is shorter than its l_min
    (docs/spring_damper.md (S11)) or a force law's value is not finite (S12), or a rotational spring-damper's angle
    is undefined (docs/rotational_spring_damper.md (R12), ``outs.rotational[ROT_FLAGS][0]`` its index): the iterate
    fails."""
    rigid, spring = fams.rigid_cut, fams.spring_damper
    if rigid[IA].size:  # the rigid cuts (rigid_cut.evaluate) with their state of this iterate, then their update
        _rigid_cuts(x, R, rigid, outs.rigid_cut, wfull)
    if spring[IA].size:  # the spring-dampers (spring_damper.evaluate)
        spring_damper_laws_iterate(x, R, V, spring, outs.spring_damper, wfull)
        if outs.spring_damper[SPRING_FLAGS][0] >= 0.0:
            return True
    if fams.actuator.ia.size and actuator_iterate(x, R, V, fams.actuator, outs.actuator, wfull):  # (actuator.evaluate)
        return True
    if fams.coupling[IA].size:  # the couplings (coupling.evaluate), last in the registry
        _couplings(S, x, q, u, fams.coupling, outs.coupling, wfull)
    rot = fams.rotational
    if rot[IA].size:  # the rotational spring-dampers (rotational_spring_damper.evaluate), after the couplings
        ro = outs.rotational
        bad = rotational_forces(R, V, rot[:12], wfull, (ro[0], ro[1], ro[2], ro[3], ro[4], ro[5]))
        ro[ROT_FLAGS][0], ro[ROT_FLAGS][1] = float(bad), 0.0
        if bad >= 0 or not _torque_laws(rot, ro, wfull):
            return True
    return False


@njit(cache=True)
def iterate_flags(fams, outs) -> tuple:
    """(settled, changed, position noise, stuck) of an iterate's families with element state (the
    Assembler's newton_update and Evaluation.position_noise): the rigid cuts' (``outs.rigid_cut``), the
    actuators' (``outs.actuator``) and the couplings' (``outs.coupling``, (C14), (C16) of docs/coupling.md, (AL11)):
    :func:`flags_of` the :func:`flag_arrays`."""
    return flags_of(flag_arrays(fams, outs))


@njit(cache=True)
def flag_arrays(fams, outs) -> tuple:
    """The flags arrays :func:`flags_of` reads: the rigid cuts' (``outs.rigid_cut[CUT_FLAGS]``), the actuators'
    (``outs.actuator.flags``), the couplings' (``outs.coupling[COUPLING_FLAGS]``), each empty where the model has
    none of the family. A Newton loop takes them once per step and reads its iterates' flags from these three arrays
    alone (a call that takes ``fams`` and ``outs`` references their some 180 arrays: docs/architecture.md P6)."""
    none = np.zeros(0)
    return (outs.rigid_cut[CUT_FLAGS] if fams.rigid_cut[IA].size else none,
            outs.actuator.flags if fams.actuator.ia.size else none,
            outs.coupling[COUPLING_FLAGS] if fams.coupling[IA].size else none)


@njit(cache=True)
def flags_of(flags) -> tuple:
    """:func:`iterate_flags` from the flags arrays ``flags`` of :func:`flag_arrays`."""
    rigid, act, coupling = flags
    settled, changed, noise, stuck = True, False, 0.0, False
    if rigid.size:
        f = rigid
        settled, changed, noise, stuck = f[2] > 0.0, f[3] > 0.0, f[1], f[4] >= 0.0
    if act.size:
        f = act
        settled, changed, noise = settled and f[2] > 0.0, changed or f[3] > 0.0, max(noise, f[1])
        stuck = stuck or f[STUCK] >= 0.0
    if coupling.size:
        f = coupling
        settled, changed, noise = settled and f[2] > 0.0, changed or f[5] > 0.0, max(noise, f[3])
        stuck = stuck or f[4] >= 0.0
    return settled, changed, noise, stuck


@njit(cache=True)
def _torque_laws(rot, ro, wfull) -> bool:
    """The rotational spring-dampers' torque laws (R15) after the linear elements, as RotationalSpringDampers.evaluate
    (same arithmetic): T = f(φ, φ', t), its power, moments (R7) and tangents k, c; False (``ro[6]`` = (the element,
    1.0)) where a law's value is not finite. ``rot[12:]`` = (the laws' addresses, their elements, the step's time)."""
    ia, ib, addr, laws, t = rot[0], rot[1], rot[12], rot[13], rot[14][0]
    g, angle, rate, torque, power, kk, cc = ro[0], ro[1], ro[2], ro[3], ro[5], ro[7], ro[8]
    for i in range(laws.size):
        e = laws[i]
        f = _call(addr[i], 0, angle[e], rate[e], t, 0.0)
        if not np.isfinite(f):
            ro[6][0], ro[6][1] = float(e), 1.0
            return False
        kk[e] = _call(addr[i], 1, angle[e], rate[e], t, 0.0)
        cc[e] = _call(addr[i], 2, angle[e], rate[e], t, 0.0)
        torque[e] = f
        power[e] = f * rate[e]
        for j in range(3):  # (R7); row N (ground) is discarded
            wfull[ia[e], 3 + j] -= g[e, j] * f
        for j in range(3):
            wfull[ib[e], 3 + j] += g[e, j] * f
    return True


@njit(cache=True)
def cut_and_spring_matrix(fams, outs, scatters, ck, cc, material_only, S, x, data):
    """The rigid cuts' penalty blocks (``scatters`` [3], buffer [4]), then the spring-dampers' blocks
    (S8), or (S10) if ``material_only`` (``scatters`` [5], buffer [6]), then the actuators' (A7) of
    docs/actuator.md (``scatters`` [9], buffer [10]), then the couplings' (C9) of docs/coupling.md
    (``scatters`` [7], buffer [8]), then the rotational spring-dampers' (R13) of docs/rotational_spring_damper.md
    (``scatters`` [11], buffer [12]), added to S's values ``data``."""
    rigid, spring, coupling, rot = fams.rigid_cut, fams.spring_damper, fams.coupling, fams.rotational
    if rigid[IA].size:  # the cuts' penalties, those of the next iterate where the last update raised them (AL2, AL11)
        cblocks = scatters[4]
        penalty_blocks(outs.rigid_cut[CUT_G], outs.rigid_cut[CUT_ALPHA_MAT], ck, cblocks)
        rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, rmax_ne = scatters[3]
        _scatter_elements(rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, S, x, cblocks, rmax_ne, data)
    if spring[IA].size:
        sd, sblocks = outs.spring_damper, scatters[6]
        spring_damper_blocks(sd[0], sd[1], sd[2], sd[3], sd[4], sd[6], sd[10], sd[11], ck, cc,
                             MATERIAL if material_only else TIME_STEP, sblocks)
        sn, sanc_ptr, sanc_coord, spos_ptr, spos, smax_ne = scatters[5]
        scatter_pairs(sn, sanc_ptr, sanc_coord, spos_ptr, spos, S, x, sblocks, smax_ne, data)  # over the path (S16)
    if fams.actuator.ia.size:  # (A7), the next iterate's penalties where the last update raised them (AL11)
        actuator_matrix(outs.actuator, scatters[9], scatters[10], ck, S, x, data)
    if coupling[IA].size:  # (C9): exact, the same in every mode
        out, cblocks = outs.coupling, scatters[8]
        coupling_blocks(out[0], coupling[6], coupling[7], out[11], coupling[8], ck, cc, cblocks)  # next penalties (AL11)
        cn, canc_ptr, canc_coord, cpos_ptr, cpos, cmax_ne = scatters[7]
        _scatter_elements(cn, canc_ptr, canc_coord, cpos_ptr, cpos, S, x, cblocks, cmax_ne, data)
    if rot[IA].size:  # (R13): the time step's and the material blocks are the same
        ro, rblocks = outs.rotational, scatters[12]
        rotational_blocks(ro[9], ro[10], rot, (ro[7], ro[8]), ro[0], ro[3], ck, cc, MATERIAL if material_only else TIME_STEP,
                          rblocks)
        rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, rmax_ne = scatters[11]
        _scatter_elements(rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, S, x, rblocks, rmax_ne, data)


def coupling_arrays(model: Model) -> tuple:
    """The couplings' arrays of the compiled iterates (_couplings' ``cp``; empty without couplings)."""
    d = model.elements["coupling"]
    p = FAMILIES["coupling"].prepare(model, d)
    return (p.qa, p.qb, p.ua, p.ub, d.ratio, d.offset, d.k, d.c, d.rigid, p.nodes, p.tree_child, p.t_idx, p.n_t, p.r_idx,
            p.n_r, p.own_t, p.own_pos, d.tol, p.lever)


def coupling_outputs(n: int, elements: dict) -> tuple:
    """New arrays for the couplings' iterates (_couplings' ``out``: G, g, ġ, f, λ, α, energy, power, ``cst``, ``nxt``,
    flags, ``alpha_mat``, ell), their state ``cst`` that of ``elements``."""
    cst = np.array(elements["coupling"], dtype=float) if n else np.zeros((0, N_STATE))
    return (np.empty((n, 24)), *(np.empty(n) for _ in range(7)), cst, np.empty_like(cst), np.zeros(6), np.empty(n),
            np.empty(n))


def cut_outputs(n: int, elements: dict) -> tuple:
    """New arrays for the rigid cuts' iterates (_rigid_cuts' ``out``), their state ``cst`` that of ``elements``."""
    cst = np.array(elements["rigid_cut"], dtype=float) if n else np.zeros((0, 10))
    e6 = (n, 6)
    return (np.empty(e6), np.empty((n, 6, 12)), np.empty((n, 3, 3)), np.empty(e6), np.empty(e6), np.empty(e6),
            np.empty(e6), cst, np.empty_like(cst), np.empty(e6), np.empty(n), np.zeros(5))


def family_outputs(n: tuple, spring: tuple, rotational: tuple, elements: dict, keep: FamilyOutputs | None,
                   fresh: bool) -> FamilyOutputs:
    """The families' outputs ``outs`` (a family_tuples.FamilyOutputs) of a step of the compiled element step
    (element_step.ElementStep.begin): ``n`` their element counts (beams, bushings, rigid cuts, spring-dampers,
    couplings, actuators, rotational spring-dampers). New arrays where ``keep`` is None, else for a family with elements
    where ``fresh`` or where it has element state (rigid cuts, couplings, actuators: their ``cst`` that of
    ``elements``); ``keep``'s otherwise (the last step's, or for a family without elements one set of empty outputs
    shared by every step: nothing writes them). The rotational spring-dampers' reference angles (R3) are set from
    ``elements`` (:func:`set_reference`)."""
    nb = n[1]
    new = (lambda: beam_results(n[0]),
           lambda: (np.empty((nb, 6)), np.empty((nb, 6, 12)), np.empty((nb, 3, 3)), np.empty((nb, 6)), np.empty(nb),
                    np.empty(nb)),
           lambda: cut_outputs(n[2], elements), lambda: spring_outputs(spring), lambda: coupling_outputs(n[4], elements),
           lambda: actuator_outputs(n[5], elements), lambda: rotational_outputs(n[6], rotational[7], rotational[8]))
    state = (False, False, True, False, True, True, False)
    set_reference(rotational, elements)  # the step's reference angles (R3), from its element state
    return FamilyOutputs(*(make() if keep is None or (n[k] and (fresh or state[k])) else keep[k]
                           for k, make in enumerate(new)))


def rotational_arrays(model: Model, time: np.ndarray) -> tuple:
    """The rotational spring-dampers' arrays of the compiled iterates: (ia, ib, mode, ea, ua, ub, C, k, c, rest, T0,
    ref: the reference angles of (R3), set per step from the element state by :func:`set_reference`, the torque
    laws' addresses (n_law,), their elements (n_law,), the time (1,): the step's, ``time``)."""
    d = model.elements["rotational_spring_damper"]
    addr = compile_torque_laws(model)[0]
    laws = np.array(d.laws if addr is not None and addr.size else (), dtype=np.int64)
    return (*kernel_arrays(d, FAMILIES["rotational_spring_damper"].prepare(model, d)),
            addr if addr is not None else np.zeros(0, dtype=np.int64), laws, time)


def set_reference(rot: tuple, elements: dict) -> None:
    """The step's reference angles of (R3) (``elements``' rotational spring-damper state, the last accepted step's
    angles) into ``rot`` (rotational_arrays), as RotationalSpringDampers.evaluate reads them."""
    st = elements.get("rotational_spring_damper")
    if st is not None and rot[11].size:
        rot[11][:] = np.asarray(st)[:, 0]


def rotational_outputs(n: int, k: np.ndarray, c: np.ndarray) -> tuple:
    """New arrays for the rotational spring-dampers' iterates: (g (n, 3), angle, rate, torque, energy, power, flags
    (2,): the element whose angle is undefined or whose torque law is not finite, or -1, and 1.0 for a law, k, c: the
    blocks' tangents, R and V unused by the time step's blocks (empty))."""
    return (np.empty((n, 3)), *(np.empty(n) for _ in range(5)), np.zeros(2), np.array(k, dtype=float),
            np.array(c, dtype=float), np.empty((0, 3, 3)), np.empty((0, 6)))


def iterate_evaluations(es: Any, kin: Kinematics) -> dict:
    """The families' evaluations of the compiled step ``es``'s current iterate (ElementStep.evaluation), by
    name, from its outputs: what each family's evaluate gives at that state."""
    family_evals = {f.name: FamilyEvaluation() for f, _, _ in es.asm.node_mass}
    if es._n_bushing:
        ia, ib = es.bushing[0], es.bushing[1]
        _, G, A, f, energy, power = es.outs.bushing
        family_evals["bushing"] = FAMILIES["bushing"].evaluation(es.model, ia, ib, kin.x, kin.R, G, A, f, energy, power)
    if es._n_el:
        family_evals["beam"] = FAMILIES["beam"].evaluation(*es.outs.beam)
    if es._n_rigid:
        d, G, A, phi, alpha, lam, force, cst, nxt, alpha_mat, scal, flags = es.outs.rigid_cut
        fe = FAMILIES["rigid_cut"].evaluation(kin.x, kin.R, es.rigid[0], es.rigid[1], flags[0], flags[1], phi, G, A,
                                              alpha, lam, force)
        if flags[3] > 0.0:  # the last update raised the penalties (RigidCuts.newton_update)
            fe.alpha_next = alpha_mat
        family_evals["rigid_cut"] = fe
    if es._n_spring:
        G, nv, ra, rb, l, ldot, F, energy, power, _, k, c = es.outs.spring_damper  # k, c: the force laws' tangents too (S13)
        family_evals["spring_damper"] = FAMILIES["spring_damper"].evaluation(G, nv, ra, rb, l, ldot, F, energy, power, k, c)
    if es._n_actuator:
        family_evals["actuator"] = actuator_evaluation(es.actuator, es.outs.actuator)
    if es._n_coupling:
        G, g, gdot, force, lam, alpha, energy, power, _, _, flags, alpha_mat, ell = es.outs.coupling
        fe = CouplingEvaluation(strain_energy=float(flags[0]), dissipation=float(flags[1]), position_noise=float(flags[3]),
                                g=g, gdot=gdot, force=force, lam=lam, alpha=alpha, G=G, ell=ell)
        if flags[5] > 0.0:  # the last update raised the penalties (Couplings.newton_update)
            fe.alpha_next = alpha_mat
        family_evals["coupling"] = fe
    if es.motion_load[0].size:  # the loads of the motion (flexmb/solvers/motion_load_step.py)
        family_evals["motion_load"] = node_load_evaluation(es.motion_load, es.model, kin.V, es._st)
    if es._n_rotational:
        g, angle, rate, torque, energy, power, _, k, c = es.outs.rotational[:9]
        family_evals["rotational_spring_damper"] = FAMILIES["rotational_spring_damper"].evaluation(
            kin.R, kin.V, g, angle, rate, torque, energy, power, k, c)
    return family_evals


def stuck_error(es: Any, t: float) -> Exception:
    """The SolverError of the compiled step ``es``'s rigid cut, actuator or coupling (the first in registry order, as
    the Python step's newton_update raises it) stuck at its largest penalty at the last iterate
    (RigidCuts.newton_update, Actuators.newton_update, Couplings.newton_update)."""
    cut_flags, coupling_flags = es.outs.rigid_cut[CUT_FLAGS], es.outs.coupling[COUPLING_FLAGS]
    if es._n_rigid and cut_flags[4] >= 0.0:
        return FAMILIES["rigid_cut"].stuck_error(es.model, es.evaluation().elements["rigid_cut"], int(cut_flags[4]), t)
    err = actuator_error(es.model.elements["actuator"], es.actuator, es.outs.actuator, t) if es._n_actuator else None
    if err is None and es._n_coupling and coupling_flags[4] >= 0.0:
        fe = iterate_evaluations(es, es.kinematics())["coupling"]
        return FAMILIES["coupling"].stuck_error(es.model.elements["coupling"], fe, int(coupling_flags[4]), t)
    return err


def element_step_refusal(model: Model, asm, cholmod: bool, compiled: tuple[str, ...]) -> str:
    """Why a model takes the Python Newton iterates instead of the compiled element step
    (ElementStep.refusal; empty if it takes them): no matrix factor (``cholmod`` False), no unknowns,
    the exact tangent, a force law, force or load of the motion numba does not compile, or a
    family not among ``compiled`` (or with element state other than rigid cuts', actuators', couplings' and rotational
    spring-dampers', or node masses
    other than rigid bodies'). Prescribed-length actuators' user functions of time are evaluated once per step in Python
    (flexmb/solvers/actuator_step.py): they need not compile. Bearing
    friction is compiled (flexmb/engine/friction.py, friction_loads)."""
    if not cholmod:
        return "the O(n) tree factor takes it" if asm.rigid_tree or asm.tree_pairs is not None else "no matrix factor"
    if model.free_u.size == 0:
        return "no unknowns"
    if asm.exact_tangent:
        return "the exact tangent (exact_tangent=True) is formed in Python"
    if model.mforce_u.size and compile_motion(model)[0] is None:  # a force numba does not compile: it and why
        return compile_motion(model)[1]
    if law_refusal(model):  # a spring-damper force law numba does not compile: it and why
        return law_refusal(model)
    if node_load_refusal(model):  # a load of the motion numba does not compile: it and why
        return node_load_refusal(model)
    if not asm.families:
        return "no element family"
    other = sorted({f.name for f, _, _ in asm.families if f.name not in compiled}
                   | {f.name for f, _, _ in asm.with_state if f.name not in ("rigid_cut", "actuator", "coupling",
                                                             "rotational_spring_damper")}
                   | {f.name for f, _, _ in asm.node_mass if f is not FAMILIES["body"]})
    if other:
        return f"element famil{'y' if len(other) == 1 else 'ies'} {', '.join(repr(n) for n in other)} not compiled"
    if asm.with_blocks != asm.families:
        return "a family without stiffness blocks"
    return ""
