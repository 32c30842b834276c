"""A sweep's table, ``summary.csv``: the columns of a run's row (generic outputs every run gets,
the chosen outputs) and the file's writing and reading (without pandas).

One row per run: ``run``, the varied parameters, ``status`` (finished / stopped / failed /
error) and ``reason`` (the monitor's reason for a stopped run, the failure's for the others),
the generic outputs (:data:`GENERIC_COLUMNS`), the case's postprocess summary and the chosen
outputs. Floats are written as their shortest exact text, so a table reads back bit for bit.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.errors import ModelError, StudyError
from flexmb.results.files import write_text
from flexmb.results.names import resolve

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model
    from flexmb.results.result import Result

__all__ = ["GENERIC_COLUMNS", "TIMING_COLUMNS", "generic_outputs", "named_outputs", "scalar", "write_table", "read_table"]

GENERIC_COLUMNS = ("status", "reason", "wall_time_s", "steps", "newton_iterations", "final_time_s",
                   "energy_balance_error_J", "peak_axial_force_N", "peak_axial_force_element")
TIMING_COLUMNS = ("wall_time_s",)  # the only columns that differ between two runs of the same sweep


def scalar(v: Any) -> Any:
    """``v`` as a table cell value: bool, int, float or str (anything else as its repr)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, str):
        return v
    return repr(v)


def generic_outputs(res) -> dict[str, Any]:
    """Outputs every run gets: statistics, final time, energy balance error, peak axial force."""
    s = res.stats
    out: dict[str, Any] = {"wall_time_s": float(s.get("wall_time", float("nan"))), "steps": int(s.get("steps", 0)),
                           "newton_iterations": int(s.get("newton_iterations", 0)),
                           "final_time_s": float(res.t[-1]) if res.t.size else float("nan")}
    e = res.total_energy
    ok = np.isfinite(e)
    out["energy_balance_error_J"] = float(np.abs(e[ok] - e[ok][0]).max()) if ok.any() else float("nan")
    f = res.element_forces
    if f.size:
        n = np.abs(f[:, :, 0])
        n = np.where(np.isfinite(n), n, -1.0)
        _, k = np.unravel_index(int(np.argmax(n)), n.shape)
        out["peak_axial_force_N"] = float(n[:, k].max())
        out["peak_axial_force_element"] = res.element_names[k]
    else:
        out["peak_axial_force_N"], out["peak_axial_force_element"] = float("nan"), ""
    return out


def named_outputs(res: Result, model: Model, params: dict, outputs: Sequence[Any]) -> dict[str, Any]:
    """The chosen outputs: ``"node:NAME"`` final position (columns NAME.x/.y/.z), ``"coordinate:NAME"``
    final value (``NAME.u``: rate, ``NAME.udot``: acceleration), ``"final:NAME"`` final value of any
    quantity Result.history reads (column NAME; coordinates, their rates, spring-damper
    ``NAME.length/.rate/.force``, cut ``NAME.fx``..., beam ``NAME.N``...: docs/results_by_name.md),
    ``"peak:NAME"`` its largest magnitude (column ``peak[NAME]``), ``"peak_force:PATTERN"`` peak
    |axial force| over the beam elements and peak force magnitude |F| over the loop cuts (bushings,
    rigid cuts: Result.cut_force) matching the glob PATTERN (column ``peak_N[PATTERN]``), a bare
    name (node, coordinate, quantity by name or element pattern, found in that order), or a
    callable ``f(result, model, params) -> dict``."""
    out: dict[str, Any] = {}
    for spec in outputs:
        if callable(spec):
            out.update({str(k): scalar(v) for k, v in dict(spec(res, model, params)).items()})
            continue
        kind, _, name = str(spec).partition(":")
        if not name:
            kind, name = ("node" if spec in res.node_names else "coordinate" if spec in res.coordinate_names
                          else "final" if _is_history(res, spec) else "peak_force"), str(spec)
        if kind == "node":
            x = res.node_position(name)[-1]
            out.update({f"{name}.{a}": float(v) for a, v in zip("xyz", x)})
        elif kind in ("coordinate", "final", "peak"):
            try:
                h = res.coordinate(name) if kind == "coordinate" else res.history(name)
            except ModelError as exc:
                raise KeyError(f"output '{spec}': {exc}") from None
            if kind == "peak":
                out[f"peak[{name}]"] = float(np.nanmax(np.abs(h))) if h.size else float("nan")
            else:
                out[name] = float(h[-1]) if h.size else float("nan")
        elif kind == "peak_force":
            idx = [i for i, e in enumerate(res.element_names) if fnmatch.fnmatchcase(e, name)]
            cuts = [i for i, e in enumerate(getattr(res, "cut_names", ())) if fnmatch.fnmatchcase(e, name)]
            if not idx and not cuts:
                raise KeyError(f"output '{spec}': no node, coordinate, beam element or loop cut matches '{name}'")
            peaks = [np.abs(res.element_forces[:, idx, 0])] if idx else []
            if cuts:  # a cut's force magnitude |F| (elements/bushing.py eq. (3))
                peaks.append(np.linalg.norm(res.cut_forces_global[:, cuts, :3], axis=-1))
            out[f"peak_N[{name}]"] = float(max(np.nanmax(p) for p in peaks)) if res.t.size else float("nan")
        else:
            raise KeyError(f"output '{spec}': unknown kind '{kind}' (node:, coordinate:, final:, peak:, peak_force:)")
    return out


def _is_history(res: Result, name: str) -> bool:
    """Whether ``name`` is a quantity Result.history reads (docs/results_by_name.md)."""
    try:
        resolve(res, name)
    except ModelError:
        return False
    return True


def _columns(rows: list[dict], varied: list[str]) -> list[str]:
    cols = ["run", *varied, *GENERIC_COLUMNS]
    for r in rows:
        cols += [k for k in r if k not in cols]
    return cols


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v)  # shortest exact round trip
    if isinstance(v, (list, tuple, dict)):
        return json.dumps(v)
    return str(v)


def write_table(path: Path, rows: list[dict], varied: list[str]) -> Path:
    """Write ``rows`` (dicts) as CSV with the parameter columns ``varied`` first (atomic)."""
    cols = _columns(rows, varied)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    return write_text(path, buf.getvalue())


def _column(cells: list[str]) -> np.ndarray | list:
    if all(c == "" for c in cells):
        return list(cells)
    if all(c in ("True", "False") for c in cells):
        return np.array([c == "True" for c in cells])
    try:
        return np.array([int(c) for c in cells], dtype=np.int64)
    except ValueError:
        pass
    try:
        return np.array([float(c) if c != "" else np.nan for c in cells], dtype=float)
    except ValueError:
        return list(cells)


def read_table(path: str | Path) -> dict[str, np.ndarray | list]:
    """Read a sweep's ``summary.csv`` (or a sweep directory) without pandas: a dict column ->
    numpy array (int64 if every cell is an integer, bool for True/False, float with NaN for
    empty cells) or a list of str (text columns such as ``status``, ``reason``, ``run``, and
    columns with no value at all)."""
    p = Path(path)
    if p.is_dir():
        p = p / "summary.csv"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise StudyError(f"cannot read the sweep table '{p}': {exc.strerror}",
                         "give a summary.csv or a sweep directory") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise StudyError(f"'{p}' is empty", "give the summary.csv written by a sweep")
    head, body = rows[0], rows[1:]
    return {c: _column([r[i] if i < len(r) else "" for r in body]) for i, c in enumerate(head)}
