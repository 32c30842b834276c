"""The prescribed-length actuators in the compiled element step (flexmb/solvers/element_step.py; the
family elements/actuator.py, equations (A1)-(A9) of docs/actuator.md): an iterate's forces (A4) with
the multiplier of (A5) and the augmented-Lagrangian update of the rigid cuts ((AL3), (AL4), (AL11) of
docs/rigid_cut.md, elements/rigid_cut_kernels.rigid_cut_update), and the penalty blocks (A7), with
the kernels and in the order of Actuators.evaluate, Actuators.newton_update and Actuators.blocks, so
a step is the same bit for bit.

The prescribed lengths (L, L', L'')(t) are user functions of time: they are evaluated in Python once
per step, at the step's end time (ElementStep.begin: :func:`set_targets`), as the Python step
evaluates them at every iterate of that step (the same values), and passed in as arrays; the
step's start and end (begin_step's penalty, the projections (A8) of end_step) stay the family's,
in Python, on the per-step path; the whole-run call takes them compiled
(flexmb/solvers/actuator_projection.py).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import njit

from flexmb.elements.actuator import FAMILY, ActuatorData, ActuatorEvaluation
from flexmb.elements.actuator_kernels import MREF, N_STATE, actuator_blocks, actuator_forces
from flexmb.elements.family import ordered_sum
from flexmb.elements.rigid_cut_kernels import rigid_cut_update
from flexmb.engine.iteration_matrix import _scatter_elements
from flexmb.errors import SolverError
from flexmb.model import Model

__all__ = ["ActuatorArrays", "ActuatorOutputs", "actuator_arrays", "actuator_outputs", "actuator_iterate",
           "actuator_matrix", "set_targets", "actuator_evaluation", "actuator_error", "ENERGY", "NOISE", "SETTLED",
           "CHANGED", "STUCK", "SHORT"]

#: the columns of ActuatorOutputs.flags: strain energy, position noise, settled, changed, stuck actuator
#: or -1, actuator shorter than its l_min or -1
ENERGY, NOISE, SETTLED, CHANGED, STUCK, SHORT = range(6)


class ActuatorArrays(NamedTuple):
    """The actuators' arrays of the compiled iterates (``fams.actuator`` of element_step.py): end nodes (ground
    as node N) and points (A1), l_min (S11), the closure tolerance (AL4), the row mask and rotation
    tolerance the rigid cuts' update takes (column 0 held, ones), and the step's prescribed length L
    (n,) and (L, L', L'') (n, 3), written per step by :func:`set_targets`."""

    ia: np.ndarray
    ib: np.ndarray
    sa: np.ndarray
    sb: np.ndarray
    l_min: np.ndarray
    tol: np.ndarray
    mask: np.ndarray
    tol_rot: np.ndarray
    length: np.ndarray
    target: np.ndarray


class ActuatorOutputs(NamedTuple):
    """An iterate's actuator arrays (``outs.actuator``): the geometry G (n, 12), nv, ra, rb (n, 3), l, l'
    (A1)-(A2); phi, alpha, lam, force (n, 6) (column 0, as Actuators.evaluate); ell (n,); the update's
    scale (n, 6); the state ``cst`` this iterate starts from, the next ``nxt``, the penalties of the next
    matrix ``alpha_mat`` and ``flags`` (ENERGY ... SHORT)."""

    G: np.ndarray
    nv: np.ndarray
    ra: np.ndarray
    rb: np.ndarray
    l: np.ndarray
    ldot: np.ndarray
    phi: np.ndarray
    alpha: np.ndarray
    lam: np.ndarray
    force: np.ndarray
    ell: np.ndarray
    scale: np.ndarray
    cst: np.ndarray
    nxt: np.ndarray
    alpha_mat: np.ndarray
    flags: np.ndarray


def actuator_arrays(model: Model) -> ActuatorArrays:
    """The actuators' arrays of ``model`` (empty without actuators), writable copies of one type for every model."""
    d = model.elements[FAMILY.name]
    ia, ib = FAMILY.prepare(model, d)
    mask = np.zeros((d.n, 6), dtype=np.bool_)
    mask[:, 0] = True
    return ActuatorArrays(np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64), np.array(d.sa, dtype=float).reshape(-1, 3),
                          np.array(d.sb, dtype=float).reshape(-1, 3), np.array(d.l_min, dtype=float),
                          np.array(d.tol, dtype=float), mask, np.ones(d.n), np.zeros(d.n), np.zeros((d.n, 3)))


def set_targets(act: ActuatorArrays, data: ActuatorData, t: float) -> None:
    """(L, L', L'')(t) of every actuator into ``act`` (Actuators.targets: a SolverError naming one not finite)."""
    if data.n:
        act.target[:] = FAMILY.targets(data, t)
        act.length[:] = act.target[:, 0]


def actuator_outputs(n: int, elements: dict) -> ActuatorOutputs:
    """New arrays for a step's actuator iterates, their state ``cst`` that of ``elements`` (begin_step's)."""
    cst = np.array(elements[FAMILY.name], dtype=float) if n else np.zeros((0, N_STATE))
    e6 = (n, 6)
    return ActuatorOutputs(np.empty((n, 12)), np.empty((n, 3)), np.empty((n, 3)), np.empty((n, 3)), np.empty(n),
                           np.empty(n), np.empty(e6), np.empty(e6), np.empty(e6), np.empty(e6), np.empty(n),
                           np.zeros(e6), cst, np.empty_like(cst), np.empty(e6), np.zeros(6))


@njit(cache=True)
def actuator_iterate(x, R, V, act, out, wfull) -> bool:
    """The actuators of an iterate (Actuators.evaluate, then Actuators.newton_update, same arithmetic):
    the forces λ + αΦ (A4) with this iterate's multiplier (A5) into ``wfull`` from the state ``out.cst``,
    then the next state (AL3), (AL4), (AL11) into ``out.nxt`` (copied into ``cst`` for the next iterate)
    and the penalties of the next matrix into ``out.alpha_mat``. True where an actuator is shorter than
    its l_min (its direction undefined, docs/actuator.md §1): the iterate fails (``flags[SHORT]``)."""
    flags, cst = out.flags, out.cst
    short, energy, noise = actuator_forces(x, R, V, (act.ia, act.ib, act.sa, act.sb), act.length, act.l_min, cst, wfull,
                                           (out.G, out.nv, out.ra, out.rb, out.l, out.ldot),
                                           (out.phi, out.alpha, out.lam, out.force, out.ell))
    flags[ENERGY], flags[NOISE], flags[SHORT], flags[STUCK] = energy, noise, float(short), -1.0
    if short >= 0:
        return True
    for e in range(cst.shape[0]):
        out.scale[e, 0] = cst[e, MREF]
    settled, changed, stuck = rigid_cut_update(cst, out.lam, out.phi, act.mask, out.scale, act.tol, act.tol_rot, out.ell,
                                               out.nxt, out.alpha_mat)
    if not changed:
        out.alpha_mat[:] = out.alpha
    flags[SETTLED] = 1.0 if settled else 0.0
    flags[CHANGED] = 1.0 if changed else 0.0
    flags[STUCK] = float(stuck)
    cst[:] = out.nxt
    return False


@njit(cache=True)
def actuator_matrix(out, scatter, blocks, ck, S, x, data) -> None:
    """The actuators' penalty blocks ck α GᵀG (A7), with the next iterate's penalties (AL11), into ``blocks``
    and added to S's values ``data`` through ``scatter`` (ElementScatter's arrays)."""
    actuator_blocks(out.G, out.alpha_mat, ck, blocks)
    nodes, anc_ptr, anc_coord, pos_ptr, pos, max_ne = scatter
    _scatter_elements(nodes, anc_ptr, anc_coord, pos_ptr, pos, S, x, blocks, max_ne, data)


def actuator_evaluation(act: ActuatorArrays, out: ActuatorOutputs) -> ActuatorEvaluation:
    """The ActuatorEvaluation of the compiled iterate in ``out`` (what Actuators.evaluate gives, with the
    next iterate's penalties as Actuators.newton_update leaves them)."""
    fe = ActuatorEvaluation(strain_energy=float(out.flags[ENERGY]), position_noise=float(out.flags[NOISE]),
                            drive_power=float(ordered_sum(-out.force[:, 0] * out.ldot)), G=out.G, nv=out.nv, ra=out.ra,
                            rb=out.rb, l=out.l, ldot=out.ldot, target=act.target.copy(), phi=out.phi, alpha=out.alpha,
                            lam=out.lam, force=out.force, ell=out.ell)
    if out.flags[CHANGED] > 0.0:
        fe.alpha_next = out.alpha_mat.copy()
    return fe


def actuator_error(data: ActuatorData, act: ActuatorArrays, out: ActuatorOutputs, t: float) -> SolverError | None:
    """The SolverError the Python step raises at this iterate (an actuator too short: Actuators.evaluate;
    one stuck at its largest penalty: Actuators.newton_update), or None."""
    if out.flags[SHORT] >= 0.0:
        return FAMILY.short_error(data, int(out.flags[SHORT]), out.l, t)
    if out.flags[STUCK] >= 0.0:
        return SolverError(FAMILY._locked(data, actuator_evaluation(act, out), int(out.flags[STUCK]), t), t)
    return None
