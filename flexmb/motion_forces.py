"""Joint forces that depend on the motion: ``f(t, q, u)`` on one joint coordinate (docs/motion_forces.md).

A joint force given to ``ModelBuilder.add_joint_force`` as a function of time, the coordinate and
its rate, ``f(t, q, u)``, enters τ of eq. (1) of engine/assembly.py like a joint spring; its tangents
``k = -∂f/∂q`` and ``c = -∂f/∂u`` (docs/motion_forces.md (M2)) enter the iteration matrix's diagonal
as a spring's stiffness and damping do (M3). They come from the user's ``tangent(t, q, u)`` or by the
complex step (M4), or by central differences for a function that does not take complex input (M5).
With a ``period`` the force is a sampled controller (M6): its value is computed at the sample times
from the state there and held until the next sample (:func:`sample_hold`); it has no tangent.
The force as a function with its tangents is flexmb/motion_functions.py (MotionForce, which the model
holds); this module is what the forces do at a state of a model (their samples, values, recorded rows).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flexmb.motion_functions import MotionForce, force_arity, motion_tangents  # re-exported: the builder's and tests' imports

if TYPE_CHECKING:  # type hints only (flexmb.model imports flexmb/motion_functions.py, not this module)
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["MotionForce", "HOLD_KEY", "force_arity", "motion_tangents", "initial_hold", "sample_hold",
           "motion_values", "force_names", "recorded_forces", "initial_load_hold"]

#: the key of the sampled forces' held outputs in State.elements (docs/motion_forces.md (M6))
HOLD_KEY = "motion_hold"


def initial_hold(mforce: tuple[MotionForce, ...], mforce_q: np.ndarray, mforce_u: np.ndarray, t: float,
                 q: np.ndarray, u: np.ndarray) -> np.ndarray | None:
    """The held outputs of the sampled forces at the first sample (docs/motion_forces.md (M6)):
    (4, n_mforce), row 0 the values, row 1 the time of each force's next sample (inf: not sampled),
    row 2 the values that acted over the step ending at the state (before its sample: the work
    over that step, (M7)), row 3 the time the held value was sampled (NaN: not sampled; (M14));
    None without sampled forces. It is kept in ``State.elements[HOLD_KEY]``."""
    if not any(mf.sampled for mf in mforce):
        return None
    hold = np.zeros((4, len(mforce)))
    hold[1], hold[3] = np.inf, np.nan
    hold = _sample(hold, mforce, mforce_q, mforce_u, t, q, u, force_all=True)
    hold[2] = hold[0]
    return hold


def _sample(hold: np.ndarray, mforce: tuple[MotionForce, ...], mforce_q: np.ndarray, mforce_u: np.ndarray, t: float,
            q: np.ndarray, u: np.ndarray, force_all: bool = False) -> np.ndarray:
    """A new hold with every sampled force whose sample time has come (t >= next sample time, to
    1e-9 of its period) sampled at (t, q, u) (M6); ``force_all``: every sampled force."""
    out = hold.copy()
    out[2] = hold[0]
    for i, mf in enumerate(mforce):
        if not mf.sampled:
            continue
        P = mf.period
        if force_all or t >= hold[1, i] - 1e-9 * P:
            out[0, i] = mf.value(t, float(q[mforce_q[i]]), float(u[mforce_u[i]]))
            out[1, i] = P * (math.floor((t + 1e-9 * P) / P) + 1.0)
            out[3, i] = t
    return out


def initial_load_hold(model: Model, st: State) -> None:
    """The sampled node loads' first sample at the initial state ``st`` (docs/motion_forces.md (M15);
    flexmb.motion_loads.sample_loads)."""
    from flexmb.motion_loads import sample_loads  # the node loads' module reads the kinematics: below the model

    sample_loads(model, st, initial=True)


def sample_hold(model: Model, st: State) -> bool:
    """After an accepted step ending at ``st``: the sampled forces due there take their sample from
    ``st`` (docs/motion_forces.md (M6)), and the sampled node loads theirs (M15); ``st.elements`` gets a
    new hold (the old state's is not changed). Returns whether a held value changed there: the
    accelerations of ``st`` then jump with it (M16, ``GeneralizedAlpha.sample_jump``)."""
    from flexmb.motion_loads import sample_loads  # the sampled node loads too (M15)

    changed = sample_loads(model, st)
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    if hold is None:
        return changed
    qi = np.asarray(model.u_to_q)[np.asarray(model.mforce_u)]
    new = _sample(hold, model.mforce, qi, model.mforce_u, st.t, st.q, st.u)
    st.elements = {**st.elements, HOLD_KEY: new}
    return changed or not np.array_equal(new[0], new[2])


def motion_values(model: Model, st: State) -> tuple[np.ndarray, np.ndarray]:
    """The joint forces of the motion at ``st`` (n_mforce): the values acting from ``st`` on, and
    those that acted over the step ending at ``st`` (they differ for a sampled force sampled at
    ``st``: its work over the step takes the old value, docs/motion_forces.md (M7))."""
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    now = np.empty(len(model.mforce))
    for i, (j, mf) in enumerate(zip(model.mforce_u, model.mforce)):
        now[i] = hold[0, i] if mf.sampled else mf.value(st.t, float(st.q[model.u_to_q[j]]), float(st.u[j]))
    before = now.copy()
    if hold is not None:
        before[[mf.sampled for mf in model.mforce]] = hold[2, [mf.sampled for mf in model.mforce]]
    return now, before


def force_names(model: Model) -> tuple[str, ...]:
    """The names of the joint forces of the motion in a Result (``Result.joint_force_names``,
    docs/motion_forces.md (M14)): the joint's name for a one-coordinate joint, else the coordinate's
    (``"cyl.t0"``)."""
    names = [model.coordinate_names[j] for j in model.mforce_u]
    return tuple(n[:-2] if n.endswith(".q") else n for n in names)


def recorded_forces(model: Model, st: State) -> np.ndarray:
    """The row of ``Result.joint_forces`` at ``st`` (n_mforce, 2) (docs/motion_forces.md (M14)): each
    force's value acting from ``st`` on (a sampled force's held value) and the time of the state it was
    computed from: for a sampled force the time of the sample it holds, for a continuous one ``st.t``."""
    out = np.full((len(model.mforce), 2), float(st.t))
    out[:, 0] = motion_values(model, st)[0]
    hold = st.elements.get(HOLD_KEY) if st.elements else None
    if hold is not None:
        sampled = np.array([mf.sampled for mf in model.mforce])
        out[sampled, 1] = hold[3, sampled]
    return out
