"""The energy balance of a run, checked for a transient the steps did not resolve.

With the recorded terms (flexmb.solvers.recorder.ENERGY_KEYS) the balance of a row is

    E = T + V + U + D - W_drive - W_load                                    (B1)

(kinetic, potential of gravity and joint springs, elastic strain, dissipated energy, work of
drives and loads). It stays constant in exact dynamics, and the generalized-α method's numerical
dissipation (ρ∞ < 1) can only lower it: for a linear system the method is energy-decaying
(Chung & Hulbert 1993). A large rise of E means the steps did not resolve a fast transient: a
mode far above 1/dt (a very stiff spring, bushing or short beam) started or hit away from
equilibrium. The method's first steps then overshoot in velocity by about ω dt, so the kinetic
energy, and the dissipation integrated from those velocities, grow as (ω dt)². Examples: a
1 kg rod on a pin (1/3 kg·m² about it) released 1 rad from the rest of a 1e10 N m/rad spring at
dt = 1e-3 (ω dt ≈ 170) reaches 3.3 times its start energy in the first 9 steps; an elastic cut of 1e8 N/m loaded by a
step load at dt = 1e-3 (ω dt ≈ 8) books six times the load's work as dissipated. Both still end
at the right equilibrium, and both rises vanish as dt goes below 1/ω, or with dt="auto" (the
error-controlled steps shrink at the transient: 1.5e-7 and 0.058 of the scale).

:class:`EnergyCheck` follows every recorded row (however many the run keeps in memory) and
measures

    growth = max_k (E_k - E_0),                                             (B2)
    scale  = max_k (T_k + U_k + |V_k - V_0| + |D_k| + |W_drive,k| + |W_load,k|),   (B3)

the largest rise of (B1) over its first row against the largest energy the run moved. It warns
(:class:`EnergyWarning`) when growth > :data:`GROWTH_RATIO` × scale and above the round-off of
the sum (B1), :data:`ROUNDOFF` × the largest sum of |terms|. Measured (growth / scale): the seed
mechanisms of cases/ at most 3e-4; short runs of the test suite's models with step loads, friction
locks or halved steps up to 0.25; the pendulum above 0.58 (0.023 with a spring of 1e9, 0 with
1e8); the elastic cut above 0.72; a four-bar whose crank alone starts moving against a stiff
bushing cut 0.999. Only the rows are checked: a rise between two rows is seen as far as it lasts.

The warning names the stiff parts the step does not resolve (:func:`stiff_parts`): joint springs
with ω = √(k / M̄_ii) at the start (M̄_ii ≥ the coordinate's effective mass, so this ω is a lower
bound) and loop-cut bushings with ω = √(k / m_eff) per held direction (elements/bushing.py
constrained_mask; flexmb.builder.cut_defaults D2, as ``flexmb info`` lists them), where ω·dt > 1,
the largest first. Beams are not listed: their shortest modes are far above 1/dt in most flexible
models, and harmless when they start relaxed.

A balance that rises by orders of magnitude is no result: the run **fails** (status ``failed:
energy balance grew from ... to ... J``, and the warning as above) when the rise exceeds
:data:`FAIL_RATIO` times what the model had and was given,

    supply = max_k (T_0 + U_0 + max(V_0 - V_k, 0) + max(W_drive,k, 0) + max(W_load,k, 0)),   (B4)

and :data:`FAIL_RATIO` times the model's own energy scale (:func:`model_energy`),

    E_model = M L (|g| + L / T²),                                                           (B5)

M the model's mass, L its length scale (the integrator's, max(1 m, max |X0|)), T the run's time:
gravity's work across the model, and the kinetic energy of crossing it once in the run. In exact
dynamics T_k + U_k <= (B4) at every row, so a rise of FAIL_RATIO = 100 times it means speeds ten
times above any the model's energy allows: nothing in the rows is motion of the model any longer.
(B5) keeps a run that starts with (almost) nothing to release from failing on a rise that is
negligible for the model (a rod at rest held by a spring of 1e14 N m/rad, dt = 1e-3: 3.4e-9 J
created, against a supply of 1.2e-13 J and E_model = 410 J). Measured (rise / supply): the rod
above released from 1 rad, dt = 1e-3, 0.05 s: k = 1e10 2.45 (it ends at the right equilibrium;
warns), 1e12 281, 1e14 2.8e4 (both fail); a spring of 1.7e308 at rest: 6.7e265 J from 0 J (fails).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flexmb.elements import elastic_cut_rows
from flexmb.elements.cut_family import DIRECTIONS
from flexmb.model import Model

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.assembly import Evaluation

__all__ = ["EnergyCheck", "EnergyWarning", "FAIL_RATIO", "GROWTH_RATIO", "ROUNDOFF", "model_energy", "stiff_parts"]

GROWTH_RATIO = 0.4
"""The balance may rise by this fraction of the run's energy scale (B3) before a warning."""
ROUNDOFF = 1e-9
"""Rises below this fraction of the largest |term| are round-off of the sum (B1)."""
FAIL_RATIO = 100.0
"""A run fails when its balance rose by more than this many times its supply (B4) and the model's energy (B5)."""

_TERMS = ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work")


class EnergyWarning(UserWarning):
    """A run's energy balance rose far: a fast transient the steps did not resolve (module docstring)."""


class EnergyCheck:
    """Running (B2) and (B3) over the rows of one run (module docstring)."""

    def __init__(self) -> None:
        self.rows = 0
        self.growth = 0.0  # (B2)
        self.scale = 0.0  # (B3)
        self.supply = 0.0  # (B4)
        self.magnitude = 0.0  # the largest sum of |terms| of a row (the round-off of B1)
        self.t_growth = math.nan  # the time of the largest rise
        self.terms_growth: tuple[float, ...] = ()  # the terms' changes since the first row, at that time
        self._first: tuple[float, ...] = ()
        self._e0 = 0.0

    def add(self, t: float, kinetic: float, potential: float, strain: float, dissipated: float, drive_work: float,
            load_work: float) -> None:
        """Take the energy terms of the row at time ``t`` (finite numbers)."""
        e = kinetic + potential + strain + dissipated - drive_work - load_work
        if not self.rows:
            self._first = (kinetic, potential, strain, dissipated, drive_work, load_work)
            self._e0 = e
        self.rows += 1
        mag = abs(kinetic) + abs(potential) + abs(strain) + abs(dissipated) + abs(drive_work) + abs(load_work)
        if mag > self.magnitude:
            self.magnitude = mag
        moved = kinetic + strain + abs(potential - self._first[1]) + abs(dissipated) + abs(drive_work) + abs(load_work)
        if moved > self.scale:
            self.scale = moved
        k0, v0, u0 = self._first[0], self._first[1], self._first[2]
        supply = k0 + u0 + max(v0 - potential, 0.0) + max(drive_work, 0.0) + max(load_work, 0.0)
        if supply > self.supply:
            self.supply = supply
        if e - self._e0 > self.growth:
            self.growth = e - self._e0
            self.t_growth = t
            f = self._first  # the terms' changes, written out (no generator per row where the balance rises)
            self.terms_growth = (kinetic - f[0], potential - f[1], strain - f[2], dissipated - f[3], drive_work - f[4],
                                 load_work - f[5])

    @property
    def ratio(self) -> float:
        """growth / scale (0 without a scale)."""
        return self.growth / self.scale if self.scale > 0.0 else 0.0

    def created(self) -> bool:
        """Whether the balance rose far (module docstring's test)."""
        return self.growth > GROWTH_RATIO * self.scale and self.growth > ROUNDOFF * self.magnitude

    def failed(self, model_scale: float) -> bool:
        """Whether the balance rose by orders of magnitude: a warning's rise above FAIL_RATIO times
        the supply (B4) and ``model_scale`` (B5, :func:`model_energy`)."""
        return self.created() and self.growth > FAIL_RATIO * max(self.supply, model_scale)

    def failure(self, model_scale: float, h: float, auto: bool = False, suspects: list[str] | None = None) -> str:
        """The status text of a run that :meth:`failed` (without ``failed: ``), what to do included."""
        step = f"dt = {h:g} does" if not auto else f"the steps (up to {h:.3g} s) do"
        return (f"energy balance grew from {self._e0:.3g} J to {self._e0 + self.growth:.3g} J by t = {self.t_growth:.6g} s, "
                f"{self.growth / max(self.supply, model_scale):.3g} times the larger of what the model had and was given "
                f"({self.supply:.3g} J) and its energy scale ({model_scale:.3g} J): {step} not resolve a part far too "
                "stiff for it"
                + (f" ({'; '.join(suspects)})" if suspects else "")
                + "; the rows are not the model's motion. Reduce dt below 1/omega of the stiffest part, use dt='auto', "
                "or soften the part.")

    def stats(self) -> dict[str, float]:
        """``energy_growth`` (B2, J), ``energy_scale`` (B3, J) for ``result.stats``."""
        return {"energy_growth": float(self.growth), "energy_scale": float(self.scale)}

    def message(self, h: float, auto: bool = False, suspects: list[str] | None = None) -> str:
        """What the warning says: how much, when, which term changed most, the ``suspects``
        (:func:`stiff_parts`), what to do; ``h``: the step (``auto``: the largest step taken)."""
        k = max(range(len(_TERMS)), key=lambda i: abs(self.terms_growth[i]))
        step = f"dt = {h:g} does" if not auto else f"the steps (up to {h:.3g} s) do"
        return (f"the energy balance (kinetic + potential + strain + dissipated - work of drives and loads) rose by "
                f"{self.growth:.3g} J by t = {self.t_growth:.6g} s, {self.ratio:.3g} of the {self.scale:.3g} J the run "
                f"moved (the {_TERMS[k]} energy changed most, by {self.terms_growth[k]:.3g} J): {step} not resolve "
                "a fast transient before that time, usually a spring, bushing or beam far too stiff for it started or "
                "hit away from equilibrium"
                + (f" (stiff for the step: {'; '.join(suspects)})" if suspects else "")
                + "; the overshoot and its numerical damping there are not the model's physics. "
                "If that transient matters, reduce dt below 1/omega of the stiffest part, or use dt='auto' (its steps "
                "shrink there), soften the part, or start at equilibrium (flexmb.solvers.statics.static_equilibrium, "
                "flexmb.solvers.initial.consistent_state).")


def model_energy(model: Model, ev: Evaluation, length: float, duration: float) -> float:
    """(B5): M L (|g| + L / T²) with M the model's mass (the node masses and the element masses
    along x, at the evaluation ``ev``), L = ``length``, T = ``duration`` (module docstring)."""
    a = np.zeros((ev.Mb.shape[0], 6))
    a[:, 0] = 1.0  # every node accelerated by 1 m/s² along x: the forces sum to the mass
    mass = float(ev.Mb[:, 0, 0].sum() + ev.element_mass_forces(a)[:, 0].sum())
    return max(mass, 0.0) * length * (float(np.linalg.norm(model.gravity)) + length / duration**2)


def stiff_parts(model: Model, mbar_diag: np.ndarray, h: float, limit: int = 3) -> list[str]:
    """Joint springs and loop-cut bushings with ω·h > 1 (module docstring), the largest ω·h first,
    at most ``limit``: "joint spring on 'pin.q' (omega*dt = 173)". ``mbar_diag``: M̄'s diagonal on
    all coordinates at the start (0 where a coordinate is not free)."""
    found: list[tuple[float, str]] = []
    for u, k in zip(np.asarray(model.spring_u), np.asarray(model.spring_k)):
        m = float(mbar_diag[u])
        if m > 0.0 and k > 0.0:
            found.append((math.sqrt(k / m) * h, f"joint spring on '{model.coordinate_names[u]}'"))
    on_loop = {e for lp in model.loops for e in lp.elements}
    for cuts in elastic_cut_rows(model):
        for c, cut in enumerate(cuts.names):
            if cut not in on_loop:
                continue
            for i in np.flatnonzero(cuts.held[c]):
                k, m = float(cuts.k[c, i]), float(cuts.m_eff[c, i])
                if math.isfinite(m) and m > 0.0:
                    found.append((math.sqrt(k / m) * h, f"{cuts.label} '{cut}' {DIRECTIONS[i]}"))
    found = sorted((x for x in found if x[0] > 1.0), key=lambda x: -x[0])[:limit]
    return [f"{what} (omega*dt = {odt:.3g})" for odt, what in found]
