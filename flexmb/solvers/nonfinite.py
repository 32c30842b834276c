"""Where a NaN or inf first appears: the state, one evaluation of eq. (1) (docs/equations_of_motion.md §3) or an output
row, named by the coordinate, node, body, joint or element it belongs to. The solvers call these
checks so that a run never goes on, or says ``finished``, with a non-finite number.

Evaluation order (:func:`evaluation_source`): coordinates q, u → node poses and twists → node
masses (bodies) → joint forces τ (springs, applied joint forces) → nodal loads → element forces
(beams, bushings) → node wrenches (bias) → residual of eq. (1) → accelerations. The first stage
with a non-finite entry is the cause; the later ones only inherit it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numba import njit

from flexmb.elements import FAMILIES, recorded_fields
from flexmb.errors import SolverError

if TYPE_CHECKING:  # type hints only
    from flexmb.engine.assembly import Evaluation
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["state_source", "evaluation_source", "row_source", "nonfinite_error", "all_finite", "check_finite"]

_MAX_NAMED = 3


def _first(mask: np.ndarray) -> np.ndarray:
    """Indices of the first rows of ``mask`` (any non-finite entry per row), at most a few."""
    m = np.asarray(mask)
    if m.size == 0:
        return np.zeros(0, int)
    if m.ndim > 1:
        m = m.reshape(m.shape[0], -1).any(axis=1)
    return np.flatnonzero(m)[:_MAX_NAMED]


def _bad(a) -> np.ndarray:
    return ~np.isfinite(np.asarray(a, dtype=float))


def _list(names) -> str:
    return ", ".join(f"'{n}'" for n in names)


def _node_items(model: Model, nodes: np.ndarray) -> str:
    """Nodes with the bodies and elements attached to them, e.g. "node 'n1' (body 'rod')"."""
    parts = []
    for n in nodes:
        att = [f"{fam.label} '{e}'" for name, fam in FAMILIES.items() if name in model.elements
               for e in fam.node_roles(model, model.elements[name]).get(int(n), [])]
        att += [f"load '{ld.name}'" for ld in model.loads if ld.node == n]
        parts.append(f"node '{model.node_names[n]}'" + (f" ({', '.join(att[:4])})" if att else ""))
    return ", ".join(parts)


def _coords(model: Model, idx: np.ndarray) -> str:
    return "coordinate" + ("s " if len(idx) > 1 else " ") + _list(model.coordinate_names[i] for i in idx)


def state_source(model: Model, st: State) -> str | None:
    """The first non-finite part of a state (``q``, ball rotations, ``u``, ``udot``) named by its
    coordinates, or None when all is finite."""
    q = np.full(model.n_u, 0.0)
    sc = ~model.u_is_ball
    q[sc] = st.q
    bad_q = _bad(q)
    if model.n_ball:
        bad_ball = _bad(st.balls).reshape(model.n_ball, -1).any(axis=1)
        bad_q[np.flatnonzero(model.u_is_ball).reshape(-1, 3)[bad_ball].ravel()] = True
    for arr, what in ((bad_q, "position"), (_bad(st.u), "velocity"), (_bad(st.udot), "acceleration")):
        if arr.any():
            return f"{what} of {_coords(model, _first(arr))}"
    return None


def evaluation_source(model: Model, st: State, ev: Evaluation, udot: np.ndarray | None = None) -> str | None:
    """The first stage of one evaluation ``ev`` at state ``st`` (module docstring) with a non-finite
    value, named by what it belongs to (the residual with ``udot``, default ``st.udot``), or None."""
    s = state_source(model, st)
    if s is not None:
        return s
    kin = ev.kin
    for arr, what in ((kin.x, "position"), (kin.R, "rotation"), (kin.V, "twist"), (kin.zeta, "velocity-product term")):
        bad = _first(_bad(arr))
        if bad.size:
            return f"{what} of {_node_items(model, bad)}"
    bad = _first(_bad(ev.Mb))
    if bad.size:
        return f"mass matrix of {_node_items(model, bad)}"
    bad = _first(_bad(ev.tau))
    if bad.size:
        return f"joint spring/force on {_coords(model, bad)}"
    bad = _first(_bad(ev.loads))
    if bad.size:
        return f"nodal load on {_node_items(model, bad)}"
    for name, fe in ev.elements.items():  # each element family's evaluation: its energies
        if not (np.isfinite(fe.strain_energy) and np.isfinite(fe.dissipation)):
            return f"strain energy or damping power of the {FAMILIES[name].plural}"
    if not np.isfinite(ev.strain_energy):
        return "element strain energy"
    bad = _first(_bad(ev.bias))
    if bad.size:
        return f"forces on {_node_items(model, bad)} (inertia, gravity, loads and elements)"
    r = ev.residual(st.udot if udot is None else udot)
    bad = _first(_bad(r))
    if bad.size:
        return f"equation of motion of {_coords(model, bad)}"
    return None


def row_source(model: Model, row: dict) -> str | None:
    """The first non-finite quantity of an output row (simulate's recorder), named by what it belongs
    to: e.g. "drive force of coordinate 'pin.q'", "reaction of joint 'pin'", "energy 'kinetic'"."""
    named = (
        ("q", "position of", lambda i: _coords(model, i)),
        ("u", "velocity of", lambda i: _coords(model, i)),
        ("udot", "acceleration of", lambda i: _coords(model, i)),
        ("x", "position of", lambda i: _node_items(model, i)),
        ("R", "rotation of", lambda i: _node_items(model, i)),
        ("twists", "twist of", lambda i: _node_items(model, i)),
        ("joint_points", "point of joint", lambda i: _list(model.joint_names[j] for j in i)),
        ("drive_forces", "drive force of", lambda i: _coords(model, model.driven[i])),
        ("reactions", "reaction of joint", lambda i: _list(model.joint_names[j] for j in i)),
    )
    # the element families' recorded outputs (e.g. the beams' section forces), named by element
    named += tuple((field, f"{by_family[0][1].name.replace('_', ' ')} of " + " or ".join(FAMILIES[n].label for n, _ in by_family),
                    lambda i, names=tuple(e for n, _ in by_family for e in model.elements[n].names): _list(names[j] for j in i))
                   for field, by_family in recorded_fields(model).items())
    for key, what, name in named:
        if key in row:
            bad = _first(_bad(row[key]))
            if bad.size:
                return f"{what} {name(bad)}"
    for key, v in row.items():
        if key.startswith("energy__") and not np.isfinite(v):
            return f"energy '{key[len('energy__'):]}' ({v})"
    return None


def nonfinite_error(t: float, source: str, in_step: bool = True) -> SolverError:
    """The SolverError for a NaN/inf first found in ``source`` at the time ``t`` (in a time step, or
    ``in_step`` False at the start)."""
    advice = "check the inputs there (masses, centres of mass, stiffness, loads, drives)"
    return SolverError(f"t = {t:.6g}: non-finite value (NaN or inf), first in the {source}; "
                       + (f"reduce the time step or {advice}." if in_step else f"{advice}."), t)


@njit(cache=True)
def all_finite(q, u, udot, balls) -> bool:
    """Whether every entry of the state's arrays is finite (one compiled pass)."""
    for arr in (q, u, udot):
        for v in arr:
            if not np.isfinite(v):
                return False
    for v in balls.flat:
        if not np.isfinite(v):
            return False
    return True


def check_finite(st: State, model: Model, in_step: bool = True) -> None:
    """Raise the SolverError naming where the state ``st`` is first not finite (:func:`state_source`)."""
    if all_finite(st.q, st.u, st.udot, st.balls):
        return  # the named search only when something is not finite
    source = state_source(model, st)
    if source is not None:
        raise nonfinite_error(st.t, source, in_step)
