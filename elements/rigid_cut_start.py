"""The rigid cuts' choices at the start (``RigidCuts.cut_defaults``; elements/rigid_cut.py (AL7),
(AL12); docs/cut_damping.md): the penalty scale of every held row from the effective masses of its
cut, the number of held rows that depend on the others (an overconstrained loop), and the refusal
of a rigid cut that the drives open on a loop nothing can move."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from flexmb.element_data import ElementData
from flexmb.elements.cut_contract import CutStart, prescribed_path
from flexmb.elements.cut_family import DIRECTIONS
from flexmb.elements.family import frozen_arrays
from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only: the element library reads the model
    from flexmb.model import Model

__all__ = ["rigid_cut_defaults", "check_prescribed_cuts"]

def rigid_cut_defaults(model: Model, data: ElementData, start: CutStart) -> ElementData:
    """The rigid cuts' ``data`` (RigidCutData of elements/rigid_cut.py, which imports this module) with
    (AL7) each held row's penalty per unit factor, m_ref = the largest effective mass (D2) of the cut's
    rows of its kind that move an undriven coordinate (translations; rotations, or m_t L² with L the
    model's size), the loop's cap (D8) where none moves, the user's penalty where given; and (AL12) the
    rows that depend on the others at the start (rank of the closure Jacobian, rotations scaled by L)."""
    check_prescribed_cuts(model, data, start)
    me = start.m_eff
    fin = np.where(start.regular & data.mask, me, 0.0)
    m_t = fin[:, :3].max(axis=1)
    m_r = fin[:, 3:].max(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        size = np.float64(model.size)
        m_t = np.where(m_t > 0, m_t, start.caps[:, 0])
        m_r = np.where(m_r > 0, m_r, m_t * size**2)
    scale_rows = np.where(np.arange(6) < 3, m_t[:, None], m_r[:, None])
    given = ~np.isnan(data.penalty)
    scale_rows[given] = data.penalty[given, None]
    if not np.isfinite(scale_rows).all():
        c = int(np.argmax(~np.isfinite(scale_rows).all(axis=1)))
        raise start.overflow(c, f"its penalty scale (the mass of its loop {start.caps[c].tolist()}, times the square of "
                                f"the model's size {size:.3g} m for the rotations)")
    # held rows that depend on the others at the start (an overconstrained loop, e.g. Bricard's): no singular
    # configuration is reached when the closure Jacobian has this many near-zero singular values (AL12)
    n_rows = len(start.rows)
    Jr = start.Jf * np.where(start.rows[:, 1] >= 3, model.size, 1.0)[:, None]
    redundancy = int(n_rows - np.linalg.matrix_rank(Jr, tol=1e-10 * max(np.abs(Jr).max(initial=0.0), 1e-300))) \
        if Jr.size else int(n_rows)
    return dataclasses.replace(data, redundancy=redundancy, **frozen_arrays(dict(m_eff=me, alpha_scale=scale_rows)))


def check_prescribed_cuts(model: Model, data: ElementData, start: CutStart) -> None:
    """Refuse a rigid cut on a loop whose joints are all fixed or driven (no coordinate can yield to
    it) when the drives open it at the start: its closure above its tolerance, or its rate or
    acceleration (J u' of the drives plus J' u) not zero to round-off. Such a loop is held by its
    drives alone: a cut that the drives keep closed is redundant and allowed (its multipliers stay
    at what its closure's round-off gives, about zero), except in a model with no undriven coordinate
    at all, where the rigid cuts' projections (elements/rigid_cut.py (AL5), (AL6)) have nothing to
    solve for: refused, a bushing holds such a loop instead (its force from its stiffness)."""
    names, rows = data.names, start.rows
    if not model.free_u.size:
        name = names[0]
        raise ModelError(
            f"compile: rigid cut '{name}': every coordinate of the model is fixed or driven (inverse dynamics), so "
            "nothing can yield to the cut: it holds no motion, its force is not determined by the equations, and its "
            "projections, which solve for the undriven coordinates, have none. Cut the loop with "
            f"ModelBuilder.add_bushing('{name}', ...) instead (its stiffness then gives the cut force), or leave a "
            "coordinate undriven.")
    with np.errstate(over="ignore", invalid="ignore"):
        size = max(1.0, float(np.ptp(model.X0, axis=0).max(initial=0.0)))
        st = model.initial_state()
        u_max = np.abs(st.u).max(initial=0.0)
        a_max = np.abs(st.udot).max(initial=0.0) + u_max**2
    for c in range(data.n):
        sel = np.flatnonzero(rows[:, 0] == c)
        joints = prescribed_path(model, int(data.a[c]), int(data.b[c])) if sel.size else None
        if joints is None:
            continue
        ref = np.where(rows[sel, 1] < 3, size, 1.0)  # round-off scale of a translation [m] or rotation [rad] row
        for what, val, limit, unit in (("open by", start.closure[sel], np.full(sel.size, data.tol[c]), ("m", "rad")),
                                       ("opening at the rate", start.rate[sel], 1e-9 * ref * u_max, ("m/s", "rad/s")),
                                       ("opening with the acceleration", start.acceleration[sel], 1e-6 * ref * a_max,
                                        ("m/s²", "rad/s²"))):
            over = np.flatnonzero(np.abs(val) > limit)
            if over.size:
                k = int(over[np.argmax(np.abs(val[over]))])
                dr = int(rows[sel[k], 1])
                tol = f" (its tolerance: {data.tol[c]:.3g} {unit[dr >= 3]})" if what == "open by" else ""
                via = f"the joints {joints}, all fixed or driven," if joints else "no joint"
                raise ModelError(
                    f"compile: rigid cut '{names[c]}' closes a loop through {via} so no coordinate can move to "
                    f"close it, and at t = 0 the drives and initial coordinates leave it {what} {abs(val[k]):.4g} "
                    f"{unit[dr >= 3]} in direction {DIRECTIONS[dr]}{tol}. Give drives (and q0 of the fixed and driven "
                    "joints) that keep the cut closed, leave a joint of the loop undriven, or cut the loop with "
                    f"ModelBuilder.add_bushing('{names[c]}', ...) (elastic).")
