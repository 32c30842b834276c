"""The augmented-Lagrangian constraints in statics: rigid cuts, prescribed-length actuators and rigid
couplings held by penalties and multiplier updates (docs/statics.md §2, eqs. (ST4)-(ST9)).

The three families keep, in ``State.elements``, a multiplier λ, a penalty factor s (α = s × the row's
scale) and a Newton phase. The time step sets s = κ/β' and updates λ at every iterate (docs/rigid_cut.md
(AL3), (AL7)); statics has no β' and no inertia, so :class:`StaticConstraints` sets the families' state
itself: the phase 0, in which a family's force is λ + αΦ with λ held (no update inside the evaluation),
and a penalty from the model's own stiffness along each constraint row (ST6), so that the static
residual at fixed λ is

    r(q; λ) = r_0(q) + Σ Φ_qᵀ (λ + α Φ)                                                      (ST4)

and, after each Newton solve of r = 0, the method of multipliers

    λ ← λ + α Φ(q)                                                                            (ST5)

until every row is closed to its family's tolerance (1e-10 times the model's size, rotations 1e-10 rad,
docs/rigid_cut.md (AL4)). The accepted state carries λ = the last λ + αΦ in the phase -1 (the force is
λ), so its residual is that of the converged iterate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from flexmb.elements.actuator_kernels import MREF as A_MREF
from flexmb.elements.coupling_kernels import LAM as C_LAM
from flexmb.elements.coupling_kernels import MREF as C_MREF
from flexmb.elements.rigid_cut_kernels import LAM, PHASE, PREV, SMAX, S
from flexmb.engine.assembly import Assembler, Evaluation
from flexmb.errors import ModelError
from flexmb.model import Model
from flexmb.state import State

__all__ = ["KAPPA_STATIC", "MAX_GROWTH", "MAX_UPDATES", "SLOW", "StaticConstraints"]

#: (ST6): the penalty's stiffness along a row over the load scale, α |Φ_q|² = κ_s F
KAPPA_STATIC = 1e4
#: (ST7): the penalties grow tenfold where an update leaves the closure above this fraction of the last one
SLOW = 0.1
#: (ST7): ... up to this factor, after which a slow closure refuses the solve
MAX_GROWTH = 1e6
#: (ST5): multiplier updates per load step before the solve is refused
MAX_UPDATES = 30

#: (ST6): a row whose penalty stiffness would be below this fraction of its element's largest is moved by no
#: free coordinate (a redundant row: out of a planar loop's plane) and does not set the penalty
ROW_CUTOFF = 1e-12

#: the families statics holds by (ST4)-(ST5); any other family with internal state is refused
HELD = ("rigid_cut", "actuator", "coupling")
#: families whose internal state only carries a reference from step to step (a rotational spring-damper's turns,
#: docs/rotational_spring_damper.md (R3)): statics evaluates them with the state it is given
TRACKED = ("rotational_spring_damper",)


@dataclass
class _Rows:
    """One family's constraint rows at an evaluation: G (n_el, r, 6m) over the node twists of ``nodes``
    (n_el, m; N = ground), the held rows ``held`` (n_el, r), closure ``phi``, tolerance ``tol`` and force
    ``force`` (n_el, r)."""

    G: np.ndarray
    nodes: np.ndarray
    held: np.ndarray
    phi: np.ndarray
    tol: np.ndarray
    force: np.ndarray

    def rates(self, V: np.ndarray) -> np.ndarray:
        """Φ_q u of every row (n_el, r) for node twists V (N, 6) (ground: zero)."""
        Ve = np.concatenate([V, np.zeros((1, 6))])[self.nodes]  # (n_el, m, 6)
        return np.einsum("erk,ek->er", self.G, Ve.reshape(len(self.nodes), -1))


def _rows(name: str, model: Model, data, prep, fe) -> _Rows:
    """The constraint rows of family ``name`` (one of HELD) at its evaluation ``fe``."""
    if name == "rigid_cut":
        ia, ib = prep
        tol = np.where(np.arange(6) < 3, data.tol[:, None], data.tol_rot[:, None])
        return _Rows(fe.G, np.stack([ia, ib], axis=1), data.mask, fe.phi, tol, fe.force)
    if name == "actuator":
        ia, ib = prep
        return _Rows(fe.G[:, None, :], np.stack([ia, ib], axis=1), np.ones((data.n, 1), bool), fe.phi[:, :1],
                     data.tol[:, None], fe.force[:, :1])
    return _Rows(fe.G[:, None, :], prep.nodes, np.asarray(data.rigid)[:, None], fe.g[:, None], data.tol[:, None],
                 fe.force[:, None])


def _scales(name: str, data) -> np.ndarray:
    """α per unit penalty factor of every row (n_el, r): the rigid cuts' alpha_scale (docs/rigid_cut.md
    (AL7)); 1 for actuators and couplings, whose reference mass statics sets to 1."""
    if name == "rigid_cut":
        return np.asarray(data.alpha_scale, dtype=float)
    return np.ones((data.n, 1))


def _with_penalty(name: str, data, st: np.ndarray, s: np.ndarray) -> np.ndarray:
    """The internal state ``st`` with the penalty factors ``s`` (n_el) and the phase 0 (force λ + αΦ, λ held)."""
    out = np.array(st, dtype=float, copy=True)
    if name == "coupling":
        rigid = np.asarray(data.rigid)
        s = np.where(rigid, s, 0.0)
        out[:, C_MREF] = np.where(rigid, 1.0, out[:, C_MREF])
        out[:, S], out[:, SMAX], out[:, PHASE], out[:, PREV] = s, s, np.where(rigid, 0.0, -1.0), np.inf
        return out
    out[:, S], out[:, SMAX], out[:, PHASE], out[:, PREV] = s, s, 0.0, np.inf
    if name == "actuator":
        out[:, A_MREF] = 1.0
    return out


def _with_multipliers(name: str, data, st: np.ndarray, force: np.ndarray, phase: float) -> np.ndarray:
    """The internal state ``st`` with the multipliers ``force`` (n_el, r) (ST5) and the phase ``phase``."""
    out = np.array(st, dtype=float, copy=True)
    if name == "coupling":
        rigid = np.asarray(data.rigid)
        out[:, C_LAM] = np.where(rigid, force[:, 0], 0.0)
        out[:, PHASE] = np.where(rigid, phase, -1.0)
        return out
    if name == "actuator":
        out[:, 0] = force[:, 0]
    else:
        out[:, LAM] = np.where(data.mask, force, 0.0)
    out[:, PHASE] = phase
    return out


def _in_phase0(name: str, data, st: np.ndarray) -> np.ndarray:
    """The internal state ``st`` in the phase 0 (force λ + αΦ, λ held), all else kept."""
    out = np.array(st, dtype=float, copy=True)
    if name == "coupling":
        out[:, PHASE] = np.where(np.asarray(data.rigid), 0.0, -1.0)
    else:
        out[:, PHASE] = 0.0
    return out


class StaticConstraints:
    """The augmented-Lagrangian families of ``model`` in a static solve (module docstring): the penalties
    (ST6), the closure test (ST7), the multiplier update (ST5) and the forces reported (ST9)."""

    def __init__(self, model: Model, asm: Assembler) -> None:
        self.model = model
        for f, d, _ in asm.with_state:
            if f.name not in HELD and f.name not in TRACKED and d.n:
                raise ModelError(f"static_equilibrium: element family '{f.name}' ({d.names[0]!r} ...) keeps an internal "
                                 "state that statics does not know how to hold; run the time integrator "
                                 "(flexmb.simulate) for this model.")
        self.families = tuple((f, d, prep) for f, d, prep in asm.families
                              if f.name in HELD and d.n and (f.name != "coupling" or np.any(d.rigid)))

    @property
    def active(self) -> bool:
        """Whether the model has rigid cuts, prescribed-length actuators or rigid couplings."""
        return bool(self.families)

    def names(self) -> tuple[str, ...]:
        """The families held, in registry order."""
        return tuple(f.name for f, _, _ in self.families)

    def _map(self, st: State, fn: Callable[[str, object, np.ndarray], np.ndarray]) -> State:
        out = st.copy()
        elements = dict(out.elements)
        for f, d, _ in self.families:
            cur = elements.get(f.name)
            elements[f.name] = fn(f.name, d, d.initial_state() if cur is None else cur)
        out.elements = elements
        return out

    def switched_off(self, st: State) -> State:
        """``st`` with every penalty and multiplier zero: the model without its constraints (for (ST6))."""
        zero = {f.name: np.zeros(d.n) for f, d, _ in self.families}
        st = self._map(st, lambda n, d, s: _with_penalty(n, d, s, zero[n]))
        return self._map(st, lambda n, d, s: _with_multipliers(n, d, s, np.zeros((d.n, 6 if n == "rigid_cut" else 1)), 0.0))

    def resumed(self, st: State) -> State:
        """``st`` (an accepted state, phase -1) in the phase 0 again, its multipliers and penalties kept."""
        return self._map(st, _in_phase0)

    def with_penalties(self, st: State, ev0: Evaluation, free: np.ndarray, force_scale: float) -> State:
        """``st`` with the penalty of every element chosen by (ST6) from the generalized force scale of the
        model's loads and its rows' Jacobian at ``ev0``; its multipliers kept (a warm start), the phase 0."""
        factors = {}
        for (f, d, prep), c in zip(self.families, self.jacobian(ev0, free)):
            held = _rows(f.name, self.model, d, prep, ev0.elements[f.name]).held
            c2 = np.einsum("erj,erj->er", c, c)
            # rows no free coordinate moves (beside round-off: a planar loop's out-of-plane rows) are left out
            weight = np.where(held, c2 * _scales(f.name, d), 0.0)
            ok = weight > ROW_CUTOFF * weight.max(axis=1, initial=0.0)[:, None]
            target = np.where(ok, KAPPA_STATIC * force_scale / np.where(ok, c2, 1.0), 0.0)
            s = (target / _scales(f.name, d)).max(axis=1, initial=0.0)
            factors[f.name] = np.where(s > 0.0, s, 1.0)
        return self._map(st, lambda n, d, s: _with_penalty(n, d, s, factors[n]))

    def escalated(self, st: State, factor: float) -> State:
        """(ST7): ``st`` with every penalty ``factor`` times larger (where the multiplier updates converge slowly)."""
        def grow(name: str, data, s: np.ndarray) -> np.ndarray:
            out = np.array(s, dtype=float, copy=True)
            out[:, S] *= factor
            out[:, SMAX] *= factor
            return out
        return self._map(st, grow)

    def jacobian(self, ev: Evaluation, free: np.ndarray) -> list[np.ndarray]:
        """Φ_q over the coordinates ``free`` of every family's rows at ``ev``: (n_el, r, n_f) each."""
        rows = [_rows(f.name, self.model, d, prep, ev.elements[f.name]) for f, d, prep in self.families]
        out = [np.zeros(r.phi.shape + (free.size,)) for r in rows]
        u = np.zeros(self.model.n_u)
        for j, k in enumerate(free):
            u[k] = 1.0
            V = ev.twists(u)
            for r, o in zip(rows, out):
                o[:, :, j] = np.where(r.held, r.rates(V), 0.0)
            u[k] = 0.0
        return out

    def closure(self, ev: Evaluation) -> tuple[float, str]:
        """(ST7): the largest |Φ| over its tolerance of all held rows at ``ev``, and the worst row's
        description (element, closure, tolerance)."""
        worst, text = 0.0, ""
        for f, d, prep in self.families:
            r = _rows(f.name, self.model, d, prep, ev.elements[f.name])
            rel = np.where(r.held, np.abs(r.phi) / r.tol, 0.0)
            e, i = np.unravel_index(int(np.argmax(rel)), rel.shape)
            if rel[e, i] > worst:
                worst = float(rel[e, i])
                text = (f"{f.label} '{d.names[e]}'" + (f" (row {i})" if rel.shape[1] > 1 else "")
                        + f" open by {abs(r.phi[e, i]):.3e} (tolerance {r.tol[e, i]:.3g})")
        return worst, text

    def updated(self, st: State, ev: Evaluation, accept: bool = False) -> State:
        """(ST5): ``st`` with every multiplier set to this iterate's force λ + αΦ; ``accept``: in the phase
        -1 (the force is λ: the accepted state, ST8), else 0 (the next solve)."""
        forces = {f.name: _rows(f.name, self.model, d, prep, ev.elements[f.name]).force for f, d, prep in self.families}
        return self._map(st, lambda n, d, s: _with_multipliers(n, d, s, forces[n], -1.0 if accept else 0.0))

    def forces(self, asm: Assembler, ev: Evaluation) -> dict[str, dict[str, np.ndarray | float]]:
        """(ST9): per family held, the force of every element at ``ev`` by name: a rigid cut's wrench on its
        end b in the cut's axes (6,) (as Result.cut_force; under ``"rigid_cut_global"`` in global axes), an
        actuator's tension [N], a coupling's f (C2)."""
        out: dict[str, dict[str, np.ndarray | float]] = {}
        for f, d, _ in self.families:
            fe = ev.elements[f.name]
            if f.name == "rigid_cut":
                w = asm.element_output(ev, f.name, "cut_force")
                wg = asm.element_output(ev, f.name, "cut_force_global")
                out[f.name] = {n: np.array(w[e]) for e, n in enumerate(d.names)}
                out[f.name + "_global"] = {n: np.array(wg[e]) for e, n in enumerate(d.names)}
            elif f.name == "actuator":
                out[f.name] = {n: float(fe.force[e, 0]) for e, n in enumerate(d.names)}
            else:
                out[f.name] = {n: float(fe.force[e]) for e, n in enumerate(d.names)}
        return out

