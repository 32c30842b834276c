"""The compiled element step's rigid cuts and spring-dampers (flexmb/solvers/element_step.py): their
forces into the node wrenches of an iterate and their blocks into the iteration matrix, in the
order of the Python evaluation (registry order: rigid cuts, then spring-dampers), so a step is the
same bit for bit (elements/rigid_cut_kernels.py, elements/spring_damper_kernels.py,
docs/spring_damper.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from numba import njit

from flexmb.elements import FAMILIES
from flexmb.elements.rigid_cut_kernels import closure_scales, penalty_blocks, rigid_cut_forces, rigid_cut_update
from flexmb.elements.spring_damper_kernels import MATERIAL, TIME_STEP, spring_damper_blocks, spring_damper_iterate
from flexmb.engine.iteration_matrix import _scatter_elements

if TYPE_CHECKING:
    from flexmb.model import Model

__all__ = ["cut_and_spring_forces", "cut_and_spring_matrix", "element_step_refusal"]


@njit(cache=True)
def _rigid_cuts(x, R, rigid, out, wfull):
    """The rigid cuts of an iterate (rigid_cut.evaluate, then rigid_cut.newton_update): forces into wfull
    with the state ``cst`` this iterate was started with, then the next state ``nxt`` (copied into
    ``cst`` for the next iterate), the penalties of the next matrix ``alpha_mat`` and ``flags`` =
    (strain energy, position noise, settled, changed, stuck cut or -1). ``rigid`` = (ia, ib, sa, Ea,
    sb, Eb, mode, mask, alpha_scale, tol, tol_rot); ``out`` = (d, G, A, phi, alpha, lam, force, cst,
    nxt, alpha_mat, scale, flags)."""
    ia, ib, sa, Ea, sb, Eb, mode, mask, alpha_scale, tol, tol_rot = rigid
    d, G, A, phi, alpha, lam, force, cst, nxt, alpha_mat, scal, flags = out
    energy, noise = rigid_cut_forces(x, R, ia, ib, sa, Ea, sb, Eb, mode, mask, alpha_scale, cst, wfull, d, G, A, phi, alpha,
                                     lam, force)
    closure_scales(x, R, ia, ib, sa, sb, scal)
    settled, changed, stuck = rigid_cut_update(cst, lam, phi, mask, alpha_scale, tol, tol_rot, scal, nxt, alpha_mat)
    if not changed:
        alpha_mat[:] = alpha
    flags[0], flags[1], flags[4] = energy, noise, float(stuck)
    flags[2] = 1.0 if settled else 0.0
    flags[3] = 1.0 if changed else 0.0
    cst[:] = nxt  # the next iterate's state


@njit(cache=True)
def cut_and_spring_forces(x, R, V, rigid, spring, outs, wfull) -> bool:
    """The rigid cuts' forces and update (``rigid``, ``outs[2]``: _rigid_cuts), then the
    spring-dampers' (``spring``, ``outs[3]``: spring_damper_iterate) into ``wfull``; True where a
    spring-damper is shorter than its l_min (docs/spring_damper.md (S11)): the iterate fails."""
    if rigid[0].size:  # the rigid cuts (rigid_cut.evaluate) with their state of this iterate, then their update
        _rigid_cuts(x, R, rigid, outs[2], wfull)
    if spring[0].size:  # the spring-dampers (spring_damper.evaluate), last in the registry
        spring_damper_iterate(x, R, V, spring, outs[3], wfull)
        return outs[3][9][0] >= 0.0
    return False


@njit(cache=True)
def cut_and_spring_matrix(rigid, spring, outs, scatters, ck, cc, material_only, S, x, data):
    """The rigid cuts' penalty blocks (``scatters`` [3], buffer [4]), then the spring-dampers' blocks
    (S8), or (S10) if ``material_only`` (``scatters`` [5], buffer [6]), added to S's values ``data``."""
    if rigid[0].size:  # the cuts' penalties, those of the next iterate where the last update raised them (AL2, AL11)
        cblocks = scatters[4]
        penalty_blocks(outs[2][1], outs[2][9], ck, cblocks)
        rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, rmax_ne = scatters[3]
        _scatter_elements(rn_, ranc_ptr, ranc_coord, rpos_ptr, rpos, S, x, cblocks, rmax_ne, data)
    if spring[0].size:
        sd, sblocks = outs[3], scatters[6]
        spring_damper_blocks(sd[0], sd[1], sd[2], sd[3], sd[4], sd[6], spring[4], spring[5], ck, cc,
                             MATERIAL if material_only else TIME_STEP, sblocks)
        sn, sanc_ptr, sanc_coord, spos_ptr, spos, smax_ne = scatters[5]
        _scatter_elements(sn, sanc_ptr, sanc_coord, spos_ptr, spos, S, x, sblocks, smax_ne, data)


def element_step_refusal(model: Model, asm, cholmod: bool, compiled: tuple[str, ...]) -> str:
    """Why a model takes the Python Newton iterates instead of the compiled element step
    (ElementStep.refusal; empty if it takes them): no matrix factor (``cholmod`` False), no unknowns,
    the exact tangent, spring-damper force laws, follower loads, or a family not among ``compiled``
    (or with element state other than rigid cuts', or node masses other than rigid bodies'). Bearing
    friction is compiled (flexmb/engine/friction.py, friction_loads)."""
    if not cholmod:
        return "the O(n) tree factor takes it" if asm.rigid_tree else "no matrix factor"
    if model.free_u.size == 0:
        return "no unknowns"
    if asm.exact_tangent:
        return "the exact tangent (exact_tangent=True) is formed in Python"
    sd = model.elements.get("spring_damper")
    if sd is not None and sd.laws is not None and sd.laws.size:
        return "spring-damper force laws (Python functions, docs/spring_damper.md (S12)) are evaluated in Python"
    if any(ld.follower for ld in model.loads):
        return "follower loads (their forces turn with the nodes) are evaluated in Python"
    if not asm.families:
        return "no element family"
    other = sorted({f.name for f, _, _ in asm.families if f.name not in compiled}
                   | {f.name for f, _, _ in asm.with_state if f.name != "rigid_cut"}
                   | {f.name for f, _, _ in asm.node_mass if f is not FAMILIES["body"]})
    if other:
        return f"element famil{'y' if len(other) == 1 else 'ies'} {', '.join(repr(n) for n in other)} not compiled"
    if asm.with_blocks != asm.families:
        return "a family without stiffness blocks"
    return ""
