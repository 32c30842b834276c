"""The mutable simulation state, kept apart from the immutable Model."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from numba import njit

from flexmb.rotations import expm_factors

__all__ = ["CoordinateLayout", "State"]


class CoordinateLayout(Protocol):
    """What a State needs of the model to move: where each velocity coordinate's position sits
    and which are balls, and the drives. :class:`flexmb.model.Model` is one; typed by its shape,
    so the state stands below the model that builds it (docs/architecture.md, the layers)."""

    u_to_q: np.ndarray  # index in q of each velocity coordinate, -1 for ball coordinates (n_u)
    u_is_ball: np.ndarray  # True for the three velocity coordinates of a ball (bool)   (n_u)
    n_ball: int  # number of ball (3-D rotation) coordinates
    driven: np.ndarray  # driven velocity coordinates (indices in u)                  (n_driven)
    drives: Sequence[Callable[[float], tuple[float, float, float]]]  # q, q', q'' of t   (n_driven)


@dataclass
class State:
    """Time ``t``, scalar coordinates ``q``, ball rotations ``balls`` (n_ball, 3, 3),
    velocities ``u`` and accelerations ``udot`` (both length n_u), and the internal state of the
    element families that keep one, by family name (``elements``; e.g. the multipliers of an
    augmented-Lagrangian cut, (n_el, k); flexmb.elements, ElementFamily.newton_update)."""

    t: float
    q: np.ndarray
    balls: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    elements: dict[str, np.ndarray] = field(default_factory=dict)

    def copy(self) -> State:
        """A deep copy (arrays copied)."""
        return State(self.t, self.q.copy(), self.balls.copy(), self.u.copy(), self.udot.copy(),
                     {k: v.copy() for k, v in self.elements.items()})

    def apply_drives(self, layout: CoordinateLayout, t: float) -> None:
        """Set the driven coordinates, velocities and accelerations to their values at ``t``."""
        for k, d in zip(layout.driven, layout.drives):
            qk, vk, ak = d(t)
            self.q[layout.u_to_q[k]] = qk
            self.u[k] = vk
            self.udot[k] = ak

    def retract(self, layout: CoordinateLayout, dq: np.ndarray) -> State:
        """State moved by the increment ``dq`` (length n_u): ``q + dq`` for scalar coordinates,
        ``R expm(dq)`` for balls (the Lie-group update, increment in body axes); the element
        families' internal state is carried over unchanged."""
        out = self.copy()
        sc = ~layout.u_is_ball
        out.q = self.q + dq[sc]
        if layout.n_ball:
            out.balls = np.empty_like(self.balls)
            _retract_balls(self.balls, np.ascontiguousarray(dq[layout.u_is_ball]).reshape(-1, 3), out.balls)
        return out


@njit(cache=True)
def _retract_balls(balls, phi, out):
    """out_i = balls_i expm(phi_i) (Rodrigues, rotations.expm_factors), for every ball."""
    E = np.empty((3, 3))
    for n in range(balls.shape[0]):
        p0, p1, p2 = phi[n, 0], phi[n, 1], phi[n, 2]
        a, b = expm_factors(p0 * p0 + p1 * p1 + p2 * p2)
        E[0, 0] = 1.0 - b * (p1 * p1 + p2 * p2)
        E[1, 1] = 1.0 - b * (p0 * p0 + p2 * p2)
        E[2, 2] = 1.0 - b * (p0 * p0 + p1 * p1)
        E[0, 1], E[1, 0] = -a * p2 + b * p0 * p1, a * p2 + b * p0 * p1
        E[0, 2], E[2, 0] = a * p1 + b * p0 * p2, -a * p1 + b * p0 * p2
        E[1, 2], E[2, 1] = -a * p0 + b * p1 * p2, a * p0 + b * p1 * p2
        for i in range(3):
            for j in range(3):
                out[n, i, j] = balls[n, i, 0] * E[0, j] + balls[n, i, 1] * E[1, j] + balls[n, i, 2] * E[2, j]
