"""The loop cuts as ``flexmb info`` lists them (issue 12.1; flexmb.builder.cut_defaults): per elastic
cut (a bushing that closes a loop, or a flexible link on a loop) each held direction's stiffness k,
effective mass m_eff at the start, local frequency ω = √(k / m_eff), damping c (and whether the
compiler chose it), and ω·dt for the case's step (a direction that moves no free coordinate at the
start — out of a planar loop's plane, or the degenerate direction of a singular start — has no ω; its
default damping uses the loop's mass, cut_defaults (D8)); then the warnings:

* ``rings``: a held direction without damping (c = 0). Its local mode is not damped: where ω·dt ≥
  ``RESOLVED`` (0.3) the step does not resolve it and only the integrator's numerical dissipation
  (ρ∞ < 1) holds it, so the cut forces depend on dt; below it the ringing is resolved and stays.
* ``soft``: the cut's static give under the rigid-equivalent force it carries at the start,
  |F_start| / k, exceeds ``CLOSURE_TOLERANCE`` (1e-3) times the model's size: the loop does not
  close to that tolerance; stiffen it or use a rigid cut (ModelBuilder.add_rigid_cut).
"""

from __future__ import annotations

import numpy as np

from flexmb.elements import elastic_cut_rows
from flexmb.elements.cut_contract import ElasticCutRows
from flexmb.elements.cut_family import DIRECTIONS
from flexmb.model import Model

__all__ = ["cut_table", "RESOLVED", "CLOSURE_TOLERANCE"]

#: ω·dt from which a cut's local mode is not resolved by the step
RESOLVED = 0.3
#: the closure tolerance of an elastic cut, relative to the model's size
CLOSURE_TOLERANCE = 1e-3


def cut_table(model: Model, dt: float | None = None) -> list[str]:
    """``flexmb info``'s lines for the model's elastic cuts (module docstring); [] without cuts."""
    m = model
    on_loop = {e for lp in m.loops for e in lp.elements}
    size = max(float(np.ptp(m.X0, axis=0).max(initial=0.0)), 1e-300)
    tol = CLOSURE_TOLERANCE * size
    out: list[str] = []
    warn: list[str] = []
    for cuts in elastic_cut_rows(m):
        for c, name in enumerate(cuts.names):
            if name in on_loop:
                _cut_lines(cuts, c, dt, tol, out, warn)
    beams = m.elements["beam"]
    if beams.n:
        for link in dict.fromkeys(beams.link):
            sel = np.flatnonzero(np.asarray(beams.link) == link)
            if not np.isfinite(beams.m_axial[sel[0]]):
                continue
            k_ax = 1.0 / float(np.sum(1.0 / beams.Kl[sel, 0, 0]))
            om = np.sqrt(k_ax / beams.m_axial[sel[0]])
            how = "chosen by flexmb (zeta = 0.5, axial mode)" if beams.auto_damping[sel[0]] else "given"
            odt = f"{om * dt:.3g}" if dt is not None else "-"
            out.append(f"  flexible link {link} (closes a loop): axial k = {k_ax:.4g} N/m, m = {beams.m_axial[sel[0]]:.4g} kg, "
                       f"omega = {om:.4g} rad/s, damping alpha = {beams.alpha[sel[0]]:.4g} s ({how}), omega*dt = {odt}")
            if beams.alpha[sel[0]] == 0:
                warn.append(f"  flexible link {link} rings: undamped axial mode at omega = {om:.4g} rad/s; leave damping=None "
                            "for the default")
    if not out:
        return []
    head = "loop cuts (elastic)" + (f", dt = {dt:g} s" if dt is not None else "") + ":"
    return [head] + out + (["warnings:"] + warn if warn else [])


def _cut_lines(cuts: ElasticCutRows, c: int, dt: float | None, tol: float, out: list[str], warn: list[str]) -> None:
    """The table lines (into ``out``) and warnings (into ``warn``) of cut ``c`` of ``cuts``."""
    K, C, label, name = cuts.k[c], cuts.c[c], cuts.label, cuts.names[c]
    how = "damping chosen by flexmb (zeta = 0.5 per local mode)" if cuts.auto_damping[c] else "damping given"
    out.append(f"  {label} {name}: {how}")
    for i in np.flatnonzero(cuts.held[c]):
        me = float(cuts.m_eff[c, i])
        unit = ("N/m", "kg", "N s/m", "m") if i < 3 else ("N m/rad", "kg m^2", "N m s/rad", "rad")
        if np.isinf(me):  # moves no free coordinate at the start: out of a planar loop's plane, or a singular start
            out.append(f"    {DIRECTIONS[i]}: k = {K[i]:.4g} {unit[0]}, moves no free coordinate at the start (out of the "
                       f"loop's plane, or a singular configuration), c = {C[i]:.4g} {unit[2]} (mass capped at the loop's)")
            continue
        om = np.sqrt(K[i] / me) if np.isfinite(me) and me > 0 else np.nan
        odt = f"{om * dt:.3g}" if dt is not None and np.isfinite(om) else "-"
        out.append(f"    {DIRECTIONS[i]}: k = {K[i]:.4g} {unit[0]}, m_eff = {me:.4g} {unit[1]}, omega = {om:.4g} rad/s, "
                   f"c = {C[i]:.4g} {unit[2]}, omega*dt = {odt}")
        if C[i] == 0 and np.isfinite(om):
            resolved = dt is not None and om * dt < RESOLVED
            warn.append(f"  {label} {name} {DIRECTIONS[i]} rings: undamped at omega = {om:.4g} rad/s"
                        + (f" (omega*dt = {om * dt:.3g} < {RESOLVED}: resolved, it keeps ringing)" if resolved else
                           f" (omega*dt {'= ' + format(om * dt, '.3g') if dt else ''} >= {RESOLVED}: only the integrator's "
                           "numerical dissipation holds it; the cut forces depend on dt)")
                        + "; leave damping=None for the default")
        f0 = cuts.start_force[c, i]
        give = abs(float(f0)) / K[i] if np.isfinite(f0) else 0.0
        if i < 3 and give > tol:
            warn.append(f"  {label} {name} {DIRECTIONS[i]} soft: it gives {give:.3g} m under its start force "
                        f"{abs(f0):.4g} N, more than the closure tolerance {tol:.3g} m "
                        f"({CLOSURE_TOLERANCE:g} x the model's size); stiffen it or use add_rigid_cut")
