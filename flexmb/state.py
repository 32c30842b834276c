"""The mutable simulation state, kept apart from the immutable Model."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .rotations import expm

__all__ = ["State"]


@dataclass
class State:
    """Time ``t``, scalar coordinates ``q``, ball rotations ``balls`` (n_ball, 3, 3),
    velocities ``u`` and accelerations ``udot`` (both length n_u)."""

    t: float
    q: np.ndarray
    balls: np.ndarray
    u: np.ndarray
    udot: np.ndarray

    def copy(self) -> State:
        return State(self.t, self.q.copy(), self.balls.copy(), self.u.copy(), self.udot.copy())

    def apply_drives(self, model, t: float) -> None:
        """Set the driven coordinates, velocities and accelerations to their values at ``t``."""
        for k, d in zip(model.driven, model.drives):
            qk, vk, ak = d(t)
            self.q[model.u_to_q[k]] = qk
            self.u[k] = vk
            self.udot[k] = ak

    def retract(self, model, dq: np.ndarray) -> State:
        """State moved by the increment ``dq`` (length n_u): ``q + dq`` for scalar coordinates,
        ``R expm(dq)`` for balls (the Lie-group update, increment in body axes)."""
        out = self.copy()
        sc = ~model.u_is_ball
        out.q = self.q + dq[sc]
        if model.n_ball:
            out.balls = self.balls @ expm(dq[model.u_is_ball].reshape(-1, 3))
        return out
