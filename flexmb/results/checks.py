"""Consistency of a result read from a file: output times that are finite and strictly
increasing, every per-row array with one row per output time and the columns its names say,
numbers of the right kind, a drawing that fits the model.
Run by both loaders (flexmb.results.npz, flexmb.results.rundir) before a
:class:`~flexmb.results.result.Result` is made, so a damaged or tampered file is refused with
its name and what is wrong, never later with an internal error in an export or a plot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from flexmb.errors import ResultFileError
from flexmb.results.drawing import check_drawing
from flexmb.results.npz import ArraySpec

__all__ = ["ENERGY_TERMS", "STEP_COLUMNS", "row_shapes", "check_result", "steps_problem", "times_problem"]

ENERGY_TERMS = ("kinetic", "potential", "dissipated", "drive_work", "load_work")
"""Energy terms every result has (``strain`` too, except in results saved by older flexmb)."""


STEP_COLUMNS = {"t": "float64", "h": "float64", "iterations": "int64", "error": "float64", "status": "int64"}
"""The step history's columns (Result.steps) and their dtypes, one entry per step attempt."""


def _arrayish(a: Any) -> bool:
    """An array, or the checked header of one not read yet (a lazy Result's fields)."""
    return isinstance(a, (np.ndarray, ArraySpec))


def steps_problem(steps: Any, prefix: str = "") -> str:
    """What is wrong with a step history (columns of :data:`STEP_COLUMNS`, one length), '' if nothing."""
    if not isinstance(steps, Mapping):
        return "the step history is not a set of columns"
    if not steps:
        return ""
    if set(steps) != set(STEP_COLUMNS):
        return f"the step history has the columns {sorted(steps)}, not {sorted(STEP_COLUMNS)}"
    n = None
    for k, dtype in STEP_COLUMNS.items():
        a = steps[k]
        if not _arrayish(a) or a.dtype != np.dtype(dtype) or len(a.shape) != 1:
            return f"step history column '{prefix}{k}' is not a list of {dtype} numbers"
        if n is None:
            n = a.shape[0]
        elif a.shape[0] != n:
            return f"step history column '{prefix}{k}' has {a.shape[0]} entries, '{prefix}t' has {n}"
    return ""


def times_problem(t: np.ndarray, before: float | None = None, first_row: int = 0) -> str:
    """What is wrong with the output times ``t`` ('' if nothing): every one a finite number,
    each later than the one before (``before``: the time of the row before ``t[0]``, if any).
    The first bad row is named by its number in the run (``first_row``: the number of ``t[0]``)
    and, if ``first_row`` is not 0, its number in ``t`` too (the row of a run folder's chunk)."""
    def row(i: int) -> str:
        return f"output row {first_row + i}" + (f" (row {i} of this file)" if first_row else "")

    t = np.asarray(t)
    if t.dtype.kind != "f":
        return ""  # the dtype is checked with the other arrays
    finite = np.isfinite(t)
    if not finite.all():
        i = int(np.argmin(finite))
        return f"the output time of {row(i)} is {float(t[i])}, not a finite number"
    prev = t if before is None else np.concatenate([[before], t])
    up = np.diff(prev) > 0
    if not up.all():
        k = int(np.argmin(up))  # prev[k + 1] does not follow prev[k]
        i = k + (0 if before is None else -1) + 1
        return (f"the output times do not increase: {row(i)} has t = {float(prev[k + 1])!r} after t = {float(prev[k])!r}"
                " (they must increase strictly)")
    return ""


def row_shapes(n_coordinates: int, n_nodes: int, n_joints: int, n_driven: int, n_elements: int,
               n_cuts: int = 0, n_spring_dampers: int = 0, n_couplings: int = 0,
               n_joint_forces: int = 0, n_motion_loads: int = 0) -> dict[str, tuple]:
    """Shape of one output row of each per-row field, from the numbers of names."""
    return {"t": (), "q": (n_coordinates,), "u": (n_coordinates,), "udot": (n_coordinates,), "x": (n_nodes, 3),
            "R": (n_nodes, 3, 3), "joint_points": (n_joints, 3), "twists": (n_nodes, 6), "drive_forces": (n_driven,),
            "reactions": (n_joints, 6), "newton_iterations": (), "element_forces": (n_elements, 6),
            "element_energy": (n_elements,), "cut_forces": (n_cuts, 6), "cut_forces_global": (n_cuts, 6),
            "spring_dampers": (n_spring_dampers, 3), "couplings": (n_couplings, 3),
            "joint_forces": (n_joint_forces, 2), "motion_loads": (n_motion_loads, 7)}


_NAMES = ("coordinate_names", "node_names", "joint_names", "driven_names", "element_names", "cut_names",
          "spring_damper_names", "coupling_names", "joint_force_names", "motion_load_names")


def names_problem(kw: Mapping[str, Any]) -> str:
    """What is wrong with the name lists of ``kw`` ('' if nothing)."""
    for k in _NAMES:
        v = kw.get(k, ())
        if not isinstance(v, (tuple, list)) or not all(isinstance(s, str) for s in v):
            return f"'{k}' is not a list of names"
    return ""


def check_result(kw: Mapping[str, Any], where: str) -> None:
    """Raise ResultFileError naming ``where`` if the Result fields ``kw`` do not fit together."""
    problem = _problem(kw)
    if problem:
        raise ResultFileError(f"'{where}' is damaged: {problem}",
                              "the file was cut short or changed after flexmb wrote it; run the case again")


def _problem(kw: Mapping[str, Any]) -> str:
    bad = names_problem(kw)
    if bad:
        return bad
    n = {k: len(kw.get(k, ())) for k in _NAMES}
    shapes = row_shapes(*n.values())
    t = kw["t"]
    if not _arrayish(t) or t.ndim != 1:
        return "the output times 't' are not a list of numbers"
    if isinstance(t, np.ndarray) and times_problem(t):
        return times_problem(t)
    nt = t.shape[0]
    for k, s in shapes.items():
        if k not in kw:
            continue
        a = kw[k]
        kind = "iu" if k == "newton_iterations" else "f"
        if not _arrayish(a) or a.dtype.kind not in kind:
            return f"'{k}' is not an array of {'integers' if kind == 'iu' else 'floating-point numbers'}"
        if a.shape != (nt, *s):
            return f"'{k}' has shape {a.shape}, expected {(nt, *s)} ({nt} output rows)"
    energy = kw.get("energy")
    if not isinstance(energy, Mapping):
        return "the energy terms are missing"
    missing = [k for k in ENERGY_TERMS if k not in energy]
    if missing:
        return f"the energy terms {', '.join(missing)} are missing"
    for k, a in energy.items():
        if not _arrayish(a) or a.dtype.kind != "f" or a.shape != (nt,):
            return f"energy term '{k}' is not {nt} floating-point numbers"
    bad = steps_problem(kw.get("steps", {}), "steps__")
    if bad:
        return bad
    if not isinstance(kw.get("status", ""), str):
        return "the status is not a text"
    stats = kw.get("stats", {})
    if not isinstance(stats, Mapping) or not all(isinstance(v, float) for v in stats.values()):
        return "the statistics are not numbers"
    drawing = kw.get("drawing") or {}
    if drawing:
        bad = check_drawing(drawing, n["node_names"], n["joint_names"], n)
        if bad:
            return bad
    return ""
