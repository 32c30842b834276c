"""The constraint rows of the prescribed-length actuators (flexmb.elements.actuator; docs/actuator.md
(A2), (A8), (A9)) as operators on node twists and wrenches: :class:`Line` for the actuators alone
(their rows G, products G V and Gᵀ f, Ġ V, the Schur complement G M̄⁻¹ Gᵀ), :class:`Rows` for the
actuators' rows stacked over the rigid cuts' held rows (elements/rigid_cut.py), which the start and
dense output close together: each family closing its own constraints in turn would leave the other's
open (an actuator's velocity projection by M̄⁻¹Gᵀ alone moves a rigid loop's cut).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import actuator_kernels as kernels
from flexmb.elements import rigid_cut
from flexmb.elements.rigid_cut_kernels import LAM as CUT_LAM

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["Line", "Rows", "schur"]


def schur(rows: Line | Rows, m: int, ev: Any, solve: Any, free: np.ndarray, n_u: int) -> tuple[np.ndarray, np.ndarray]:
    """Z = M̄⁻¹ Jᵀ over the free coordinates (n_f, m) and W = J Z (m, m), symmetrized, of the ``m`` rows
    J of ``rows`` (their ``wrenches`` Jᵀ f and ``rate`` J V): column j of Z from a unit force on row j,
    M̄⁻¹ = ``solve`` on the evaluation ``ev``'s projected wrenches; ``n_u`` coordinates in all."""
    Z, W, u = np.zeros((free.size, m)), np.zeros((m, m)), np.zeros(n_u)
    for j in range(m):
        f = np.zeros(m)
        f[j] = 1.0
        Z[:, j] = solve(ev.project(rows.wrenches(f))[free])
    for j in range(m):
        u[free] = Z[:, j]
        W[:, j] = rows.rate(ev.twists(u))
    return Z, 0.5 * (W + W.T)


class Line:
    """G and Gᵀ of the actuators at one configuration (evaluation ``fe``), as products with node twists
    and wrenches, Ġ V (A8) and the Schur complement W = G M̄⁻¹ Gᵀ."""

    def __init__(self, model: Model, prep: tuple[np.ndarray, np.ndarray], fe: Any) -> None:
        self.N, self.fe = model.n_nodes, fe
        self.ia, self.ib = prep

    def rate(self, V: np.ndarray) -> np.ndarray:
        """G (V_a, V_b) (n_el,) for node twists or accelerations V (N, 6)."""
        out = np.empty(self.ia.size)
        kernels.length_rates(self.fe.G, np.ascontiguousarray(V, dtype=float), self.ia, self.ib, out)
        return out

    def wrenches(self, f: np.ndarray) -> np.ndarray:
        """Node wrenches (N, 6) Gᵀ f of actuator forces f (n_el,)."""
        w = np.zeros((self.N + 1, 6))
        np.add.at(w, self.ia, self.fe.G[:, :6] * f[:, None])
        np.add.at(w, self.ib, self.fe.G[:, 6:] * f[:, None])
        return w[:-1]

    def gdot_v(self, V: np.ndarray) -> np.ndarray:
        """Ġ V (n_el,) at the node twists V (A8)."""
        out = np.empty(self.ia.size)
        fe = self.fe
        kernels.velocity_product(np.ascontiguousarray(V, dtype=float), self.ia, self.ib, fe.nv, fe.ra, fe.rb, fe.l, out)
        return out

    def schur(self, ev: Any, solve: Any, free: np.ndarray, n_u: int) -> tuple[np.ndarray, np.ndarray]:
        """Z = M̄⁻¹ Gᵀ over the free coordinates (n_f, n_el) and W = G Z (n_el, n_el), symmetrized."""
        return schur(self, self.ia.size, ev, solve, free, n_u)


class Rows:
    """The actuators' rows (:class:`Line`), then the held rows of the model's rigid cuts (their
    ``_Closure``), at the evaluation ``ev``: stacked closure Φ, rates, wrenches, Ġ V, Schur complement;
    prescribed targets padded with zeros for the cuts' rows. Without rigid cuts, the actuators' alone."""

    def __init__(self, model: Model, prep: tuple[np.ndarray, np.ndarray], ev: Any, name: str) -> None:
        self.fe = ev.elements[name]
        self.line = Line(model, prep, self.fe)
        self.n_a = self.line.ia.size
        rc = model.elements.get(rigid_cut.FAMILY.name)
        fc = ev.elements.get(rigid_cut.FAMILY.name)
        self.cut = None
        if rc is not None and rc.n and fc is not None:
            self.cut = (rigid_cut._Closure(model, rc, rigid_cut.FAMILY.prepare(model, rc), fc.G), rc, fc)

    def _stack(self, a: np.ndarray, c: np.ndarray | None) -> np.ndarray:
        return a if self.cut is None else np.concatenate([a, c[self.cut[1].mask]])

    def pad(self, a: np.ndarray) -> np.ndarray:
        """The actuators' targets ``a`` (n_a,) followed by zeros for the cuts' rows."""
        return a if self.cut is None else np.concatenate([a, np.zeros(int(self.cut[1].mask.sum()))])

    def closure(self) -> np.ndarray:
        """Φ: the actuators' l - L, then the cuts' held rows."""
        return self._stack(self.fe.phi[:, 0], None if self.cut is None else self.cut[2].phi)

    def cut_closure(self) -> float:
        """The cuts' largest closure relative to their tolerance (0 without cuts)."""
        if self.cut is None:
            return 0.0
        return float(rigid_cut.relative_closure(self.cut[1], self.cut[2].phi).max(initial=0.0))

    def rate(self, V: np.ndarray) -> np.ndarray:
        """J V: the rows times node twists or accelerations V (N, 6)."""
        return self._stack(self.line.rate(V), None if self.cut is None else self.cut[0].rate(V))

    def wrenches(self, f: np.ndarray) -> np.ndarray:
        """Node wrenches (N, 6) Jᵀ f of row forces f (n_a + cut rows)."""
        w = self.line.wrenches(f[:self.n_a])
        if self.cut is not None:
            fc = np.zeros((self.cut[1].n, 6))
            fc[self.cut[1].mask] = f[self.n_a:]
            w = w + self.cut[0].wrenches(fc)
        return w

    def gdot_v(self, kin: Kinematics) -> np.ndarray:
        """J̇ V at the kinematics ``kin``: (A8)'s Ġ V, then the cuts' P Ġ V."""
        return self._stack(self.line.gdot_v(kin.V), None if self.cut is None else self.cut[0].gdot_v(kin))

    def schur(self, ev: Any, solve: Any, free: np.ndarray, n_u: int) -> tuple[np.ndarray, np.ndarray]:
        """Z = M̄⁻¹ Jᵀ over the free coordinates and W = J Z, symmetrized."""
        return schur(self, self.n_a + (0 if self.cut is None else int(self.cut[1].mask.sum())), ev, solve, free, n_u)

    def cut_state(self, state: State) -> np.ndarray | None:
        """The rigid cuts' internal state in ``state`` (a copy put in its place, to be set), or None."""
        if self.cut is None or rigid_cut.FAMILY.name not in state.elements:
            return None
        st = np.array(state.elements[rigid_cut.FAMILY.name], dtype=float, copy=True)
        state.elements = {**state.elements, rigid_cut.FAMILY.name: st}
        return st

    def set_cut_multipliers(self, st: np.ndarray, lam: np.ndarray) -> None:
        """The cuts' multipliers λ of the held rows into their internal state ``st`` (zero elsewhere)."""
        full = np.zeros((self.cut[1].n, 6))
        full[self.cut[1].mask] = lam
        st[:, CUT_LAM] = full
