"""Output rows of a run (simulate's recorder): poses, velocities, drive forces, joint reactions,
element outputs, the energy balance, and the step history.

A row is written in place into a preallocated block: one float64 matrix (rows x every float
field side by side, each field a view of it) and one int64 matrix (Newton iterations), so a
row costs its own arithmetic and one copy per field, and one ``isfinite`` pass over the whole
row proves it finite (the naming of a non-finite value, flexmb.solvers.nonfinite.row_source,
runs only when that pass fails). The joint reactions' subtree sums run compiled
(:func:`_reactions_into`, the same operations in the same order as
flexmb.engine.assembly.Assembler.reactions: equal bit for bit). A block holds at most
``flush_rows`` rows and :data:`BLOCK_BYTES`; when it is full, or the writer's ``flush_seconds``
have passed, it is written as one chunk of the run directory (flexmb.results.rundir) together
with the step history since the last chunk, and then kept in memory as ``keep`` says:

* ``"all"``: every row (the default without ``out=``);
* ``"none"``: no row (the default with ``out=``: memory is bounded by the model and one block,
  whatever the run's length; simulate then returns the result read lazily from the directory);
* an int N: the last N rows (and the steps since the first of them).

The work of dampers, drives and loads is integrated over every step (trapezoidal rule), whatever
the output interval; a row between steps (dense output, flexmb.solvers.step_control) integrates
the last step's part up to its time.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from flexmb.elements import recorded_fields
from flexmb.errors import SettingsError, SolverError
from flexmb.model import Model
from flexmb.motion_forces import force_names, motion_values, recorded_forces
from flexmb.motion_loads import LOAD_HOLD_KEY
from flexmb.results.checks import STEP_COLUMNS
from flexmb.results.drawing import drawing_of
from flexmb.results.result import Result
from flexmb.results.rundir import RunWriter
from flexmb.rotations import logm_into
from flexmb.solvers.energy_check import EnergyCheck
from flexmb.solvers.nonfinite import evaluation_source, row_source
from flexmb.state import State

__all__ = ["Recorder", "StepLog", "BLOCK_BYTES", "ENERGY_KEYS", "check_keep", "step_powers"]

ENERGY_KEYS = ("kinetic", "potential", "strain", "dissipated", "drive_work", "load_work")
BLOCK_BYTES = 8 * 2**20
"""Largest block of rows held before it is written (a 4000-element link's row is 1.8 MB: 4 rows)."""
_BLOCK_ROWS = 500  # rows of a block without a writer


def check_keep(keep, streamed: bool):
    """``keep`` as ``"all"``, ``"none"`` or an int >= 1 (None: "none" when ``streamed``, else "all")."""
    if keep is None:
        return "none" if streamed else "all"
    if keep in ("all", "none"):
        return keep
    if isinstance(keep, (int, np.integer)) and not isinstance(keep, (bool, np.bool_)) and keep >= 1:
        return int(keep)
    raise SettingsError(f"simulate: keep = {keep!r} must be 'all', 'none' or a number of rows >= 1 (the last rows "
                        "kept in memory)")


class StepLog:
    """The step history: one entry per step attempt (columns of flexmb.results.checks.STEP_COLUMNS:
    where it ended, its size, Newton iterations (-1: it failed), the error estimate err (E3 of
    flexmb.solvers.step_control; NaN where none was computed) and its status, 0 accepted, 1
    rejected by the error, 2 Newton failed or a non-finite value).

    The entries are written in place into preallocated columns (doubled when full), one attempt by
    :meth:`add` or the accepted steps of a compiled call by :meth:`add_accepted`, in the order added:
    no tuple, dict or array per entry (a run with a row every step adds one entry per call)."""

    def __init__(self, capacity: int = 256) -> None:
        self._cols = {k: np.empty(max(1, capacity), dtype=d) for k, d in STEP_COLUMNS.items()}
        self._n = 0
        self.counts = [0, 0, 0]  # attempts by status, over the whole run

    def _reserve(self, k: int) -> tuple[np.ndarray, ...]:
        """The columns with room for ``k`` more entries (each doubled, its entries kept, when they have not)."""
        need = self._n + k
        cap = next(iter(self._cols.values())).size
        if need > cap:
            size = max(need, 2 * cap)
            for key, col in self._cols.items():
                grown = np.empty(size, dtype=col.dtype)
                grown[:self._n] = col[:self._n]
                self._cols[key] = grown
        return tuple(self._cols.values())

    def add(self, t: float, h: float, iterations: int, error: float, status: int) -> None:
        """One step attempt."""
        ct, ch, ci, ce, cs = self._reserve(1)
        n = self._n
        ct[n], ch[n], ci[n], ce[n], cs[n] = t, h, iterations, error, status
        self._n = n + 1
        self.counts[status] += 1

    def add_accepted(self, t: np.ndarray, h: np.ndarray, iterations: np.ndarray, error: np.ndarray) -> None:
        """Add accepted steps given as columns (flexmb.solvers.tree_run, element_run: no tuple per step)."""
        k = t.size
        ct, ch, ci, ce, cs = self._reserve(k)
        n = self._n
        ct[n:n + k], ch[n:n + k], ci[n:n + k], ce[n:n + k], cs[n:n + k] = t, h, iterations, error, 0
        self._n = n + k
        self.counts[0] += k

    def __len__(self) -> int:
        return self._n

    def take(self) -> dict[str, np.ndarray]:
        """The entries since the last take, as columns (copies); the log is then empty."""
        n, self._n = self._n, 0
        return {k: col[:n].copy() for k, col in self._cols.items()}


@njit(cache=True)
def step_powers(spring_c, spring_u, u, drive, driven, loads, V, jf, jforce_u, out):
    """The powers at a state (Recorder.power), summed in order: out = (Σ c_i u_i² of the joint dampers,
    Σ drive forces · u of the driven coordinates, Σ loads · V over the nodes (none: ``loads`` (0, 6))
    + Σ applied joint forces · u)."""
    p = 0.0
    for i in range(spring_u.size):
        v = u[spring_u[i]]
        p += spring_c[i] * (v * v)
    out[0] = p
    p = 0.0
    for i in range(driven.size):
        p += drive[i] * u[driven[i]]
    out[1] = p
    p = 0.0
    for i in range(loads.shape[0]):
        for j in range(6):
            p += loads[i, j] * V[i, j]
    pj = 0.0
    for i in range(jforce_u.size):
        pj += jf[i] * u[jforce_u[i]]
    out[2] = p + pj


@njit(cache=True)
def _q_into(q, balls, scalar, ball, out):
    """Output coordinates: the scalar ones, and each ball's rotation vector (rotations.logm_into)."""
    for k in range(scalar.shape[0]):
        out[scalar[k]] = q[k]
    phi = np.empty(3)
    for n in range(balls.shape[0]):
        logm_into(balls[n], phi)
        out[ball[3 * n]], out[ball[3 * n + 1]], out[ball[3 * n + 2]] = phi[0], phi[1], phi[2]


@njit(cache=True)
def _reactions_into(w, x, preorder, sub_first, sub_last, joint_child, joint_point, out):
    """Joint reactions (Assembler.reactions) from node wrenches w (N,6) about the node origins:
    moments moved to the global origin, summed over each joint's subtree (prefix sums in
    preorder), moments moved to the current joint point."""
    N = w.shape[0]
    cs = np.zeros((N + 1, 6))
    for k in range(N):
        i = preorder[k]
        f0, f1, f2 = w[i, 0], w[i, 1], w[i, 2]
        cs[k + 1, 0] = cs[k, 0] + f0
        cs[k + 1, 1] = cs[k, 1] + f1
        cs[k + 1, 2] = cs[k, 2] + f2
        cs[k + 1, 3] = cs[k, 3] + (w[i, 3] + (x[i, 1] * f2 - x[i, 2] * f1))
        cs[k + 1, 4] = cs[k, 4] + (w[i, 4] + (x[i, 2] * f0 - x[i, 0] * f2))
        cs[k + 1, 5] = cs[k, 5] + (w[i, 5] + (x[i, 0] * f1 - x[i, 1] * f0))
    for j in range(joint_child.shape[0]):
        c = joint_child[j]
        a, b = sub_first[c], sub_last[c]
        F0 = cs[b, 0] - cs[a, 0]
        F1 = cs[b, 1] - cs[a, 1]
        F2 = cs[b, 2] - cs[a, 2]
        p0, p1, p2 = joint_point[j, 0], joint_point[j, 1], joint_point[j, 2]
        out[j, 0], out[j, 1], out[j, 2] = F0, F1, F2
        out[j, 3] = (cs[b, 3] - cs[a, 3]) - (p1 * F2 - p2 * F1)
        out[j, 4] = (cs[b, 4] - cs[a, 4]) - (p2 * F0 - p0 * F2)
        out[j, 5] = (cs[b, 5] - cs[a, 5]) - (p0 * F1 - p1 * F0)


def _layout(specs: dict[str, tuple[tuple[int, ...], str]]) -> dict[str, tuple[str, int, int]]:
    """Each field's (dtype, first column, number of columns) in the block matrix of its dtype."""
    off = {"float64": 0, "int64": 0}
    out = {}
    for name, (shape, dtype) in specs.items():
        size = math.prod(shape)
        out[name] = (dtype, off[dtype], size)
        off[dtype] += size
    return out


class _Block:
    """``cap`` rows: a float64 matrix with every float field's columns side by side (each field a
    view of shape (cap, *row shape)) and an int64 matrix for the integer fields."""

    def __init__(self, specs: dict[str, tuple[tuple[int, ...], str]], cap: int) -> None:
        self.specs = specs
        layout = _layout(specs)
        n = {d: sum(size for dd, _, size in layout.values() if dd == d) for d in ("float64", "int64")}
        self.F = np.zeros((cap, n["float64"]))
        self.I = np.zeros((cap, n["int64"]), dtype=np.int64)
        self.views: dict[str, np.ndarray] = {}
        for name, (dtype, lo, size) in layout.items():
            v = (self.F if dtype == "float64" else self.I)[:, lo:lo + size]
            v.shape = (cap, *specs[name][0])  # a view, never a copy (raises if it cannot be one)
            self.views[name] = v
        self.cap = cap
        self.n = 0

    def arrays(self, n: int | None = None) -> dict[str, np.ndarray]:
        """Each field's first ``n`` rows (default: the rows filled), views into the block."""
        n = self.n if n is None else n
        return {k: v[:n] for k, v in self.views.items()}


class _Kept:
    """The rows (and steps) kept in memory: ``keep`` = "all", "none" or the last N rows."""

    def __init__(self, specs: dict, keep) -> None:
        self.specs, self.keep = specs, keep
        self.blocks: list[tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]] = []
        self.rows = 0

    def add(self, block: _Block, steps: dict[str, np.ndarray]) -> None:
        if self.keep == "none":
            return
        n = block.n
        self.blocks.append((block.F[:n].copy(), block.I[:n].copy(), steps))
        self.rows += n
        if isinstance(self.keep, int):
            while len(self.blocks) > 1 and self.rows - self.blocks[0][0].shape[0] >= self.keep:
                self.rows -= self.blocks.pop(0)[0].shape[0]

    def arrays(self) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """The kept rows (fields) and steps, taking the blocks (none are left). Each block is copied into
        every field's rows and released before the next: the fields' pages are touched as the blocks'
        are given back, so the rows are resident about once, plus a block, while the Result is made
        (docs/memory.md §4; twice before, three times before that, when the blocks were first joined)."""
        n = sum(b[0].shape[0] for b in self.blocks)
        first = max(0, n - self.keep) if isinstance(self.keep, int) else 0
        layout = _layout(self.specs)
        out = {name: np.empty((n - first, size), dtype=dtype) for name, (dtype, _, size) in layout.items()}
        steps = {k: np.concatenate([b[2][k] for b in self.blocks]) if self.blocks else np.zeros(0, dtype=d)
                 for k, d in STEP_COLUMNS.items()}
        row = -first  # where the next block's first row goes in the fields (rows before ``first`` are not kept)
        while self.blocks:
            block = self.blocks.pop(0)
            m = block[0].shape[0]
            if row + m > 0:
                for name, (dtype, lo, size) in layout.items():
                    out[name][max(row, 0):row + m] = block[0 if dtype == "float64" else 1][max(-row, 0):, lo:lo + size]
            row += m
            del block
        out = {name: out[name].reshape((n - first, *self.specs[name][0])) for name in layout}
        if first:
            keep = steps["t"] >= out["t"][0]
            steps = {k: v[keep] for k, v in steps.items()}
        return out, steps


class Recorder:
    """Output rows and the step history of one run (module docstring); streams them to
    ``writer`` when one is given and keeps in memory what ``keep`` says."""

    def __init__(self, model: Model, integ, writer: RunWriter | None = None, keep="all",
                 block_bytes: int = BLOCK_BYTES) -> None:
        self.m = model
        self._origin = np.asarray(model.origin) if model.origin.any() else None  # positions are recorded globally
        self.integ = integ
        self.asm = integ.asm
        self.writer = writer
        # the element families' recorded outputs by Result field (families sharing one, e.g. the cut
        # forces of bushings and rigid cuts: their elements' rows one after the other)
        self.outputs = recorded_fields(model)
        self.specs = self._specs()
        # the fields with elements and, of each, the families with elements (a field or a family without
        # elements has no values to fill: e.g. the cut forces of bushings beside no rigid cut, no concatenation)
        self._filled = [(f, [(n, o) for n, o in by_family if model.elements[n].n]) for f, by_family in self.outputs.items()
                        if sum(model.elements[n].n for n, _ in by_family)]
        row_bytes = 8 * sum(math.prod(s) for s, _ in self.specs.values()) or 8
        cap = writer.flush_rows if writer is not None else _BLOCK_ROWS
        self.block = _Block(self.specs, max(1, min(cap, block_bytes // row_bytes)))
        self.kept = _Kept(self.specs, keep)
        self.log = StepLog()
        self.rows_written = 0
        self.energy = EnergyCheck()  # every row's energy balance, kept or not (energy_check.py)
        self.work = {"dissipated": 0.0, "drive_work": 0.0, "load_work": 0.0}
        self._prev: tuple[float, tuple[float, float, float]] | None = None
        self._drive = np.zeros(0)
        self._scalar = np.flatnonzero(~model.u_is_ball)
        self._ball = np.flatnonzero(model.u_is_ball)
        i64 = np.int64
        self._spring_u, self._spring_c = np.asarray(model.spring_u, dtype=i64), np.asarray(model.spring_c, dtype=float)
        self._driven, self._jforce_u = np.asarray(model.driven, dtype=i64), np.asarray(model.jforce_u, dtype=i64)
        self._no_jf, self._no_loads, self._power = np.zeros(0), np.zeros((0, 6)), np.empty(3)
        self._jf_u = np.concatenate((self._jforce_u, np.asarray(model.mforce_u, dtype=i64)))
        self._motion = (np.zeros(0), np.zeros(0))  # the joint forces of the motion at the last power's state
        pat = self.asm.pattern
        self._tree = (np.asarray(pat.preorder, dtype=np.int64), np.asarray(pat.sub_first, dtype=np.int64),
                      np.asarray(pat.sub_last, dtype=np.int64), np.asarray(model.joint_child, dtype=np.int64))

    def _specs(self) -> dict[str, tuple[tuple[int, ...], str]]:
        m = self.m
        N, nj, nu = m.n_nodes, m.n_joints, m.n_u
        specs: dict[str, tuple[tuple[int, ...], str]] = {
            "t": ((), "float64"), "q": ((nu,), "float64"), "u": ((nu,), "float64"), "udot": ((nu,), "float64"),
            "x": ((N, 3), "float64"), "R": ((N, 3, 3), "float64"), "joint_points": ((nj, 3), "float64"),
            "twists": ((N, 6), "float64"), "drive_forces": ((int(m.driven.size),), "float64"),
            "reactions": ((nj, 6), "float64"), "newton_iterations": ((), "int64")}
        # the joint forces of the motion, sampled ones held (docs/motion_forces.md (M14)); (0, 2) without them
        specs["joint_forces"] = ((int(m.mforce_u.size), 2), "float64")
        for field, by_family in self.outputs.items():
            n_el, out = sum(m.elements[name].n for name, _ in by_family), by_family[0][1]
            specs[field] = ((n_el, len(out.columns)) if out.columns else (n_el,), "float64")
        specs.update({f"energy__{k}": ((), "float64") for k in ENERGY_KEYS})
        return specs

    # ------------------------------------------------------------------ work of dampers, drives, loads
    def _nonfinite(self, st: State, ev, source: str) -> SolverError:
        """The SolverError for an output that is not finite (and where the evaluation first was not)."""
        cause = evaluation_source(self.m, st, ev)
        return SolverError(f"t = {st.t:.6g}: non-finite output (NaN or inf): {source}"
                           + (f", from the {cause}" if cause else "") + "; the inputs there are too large for "
                           "double precision (check masses, centres of mass, stiffness, loads, drives).", st.t)

    def power(self, st: State, ev) -> tuple[tuple[float, float, float], np.ndarray]:
        """(dissipated, drive, load) power at ``st`` and the drive forces; a SolverError names a
        drive force or power that is not finite."""
        m = self.m
        if not m.driven.size:
            drive = np.zeros(0)
        else:
            known = getattr(ev, "drive_forces", None)  # a step's converged iterate's (newton_loop.accept)
            drive = ev.residual(st.udot)[m.driven] if known is None else known
        jf = np.array([f(st.t) for f in m.jforce_f], dtype=float) if m.jforce_u.size else self._no_jf
        if m.mforce_u.size:  # the joint forces of the motion: those that acted over the step ending at st (M7)
            self._motion = motion_values(m, st)
            jf = np.concatenate((jf, self._motion[1]))
        # no loads: zero power (the state is finite; the node twists are not needed, nor computed for a step
        # taken without evaluation); applied joint forces work like loads
        p = self._power
        loads, V = (ev.loads, ev.kin.V) if m.loads else (self._no_loads, self._no_loads)
        step_powers(self._spring_c, self._spring_u, st.u, drive, self._driven, loads, V, jf, self._jf_u, p)
        p_diss = float(p[0]) + ev.element_dissipation
        if ev.friction is not None:  # bearing friction (flexmb/engine/friction.py) dissipates -sum(tau u)
            p_diss -= ev.friction.power(ev.node_wrenches(st.udot))
        p_drive = float(p[1]) + getattr(ev, "element_drive_power", 0.0)  # actuators: drive work
        p_load = float(p[2]) + getattr(ev, "element_load_power", 0.0)  # node loads of the motion (docs/motion_forces.md (M13))
        power = (p_diss, p_drive, p_load)
        if not (math.isfinite(p_diss) and math.isfinite(p_drive) and math.isfinite(p_load)
                and (not drive.size or np.isfinite(drive).all())):
            source = row_source(m, {"drive_forces": drive}) or next(
                (f"power of the {what} ({p})" for what, p in zip(("dampers and friction", "drives", "loads"), power)
                 if not math.isfinite(p)), None)
            raise self._nonfinite(st, ev, source or "power")
        return power, drive

    def step(self, st: State, ev) -> None:
        """Add the work done over the step that ended at ``st`` (call after every step); a SolverError
        names a drive force or power that is not finite (nothing is added then)."""
        power, self._drive = self.power(st, ev)
        if self._prev is not None:
            h = st.t - self._prev[0]
            for key, p, p0 in zip(("dissipated", "drive_work", "load_work"), power, self._prev[1]):
                self.work[key] += 0.5 * h * (p + p0)
        if self.m.mforce_u.size:  # a sampled force's new value acts from st on (docs/motion_forces.md (M7))
            now, before = self._motion
            power = (power[0], power[1], power[2] + float((now - before) @ st.u[self.m.mforce_u]))
        hold = st.elements.get(LOAD_HOLD_KEY) if st.elements else None
        if hold is not None:  # so does a sampled node load's (M15)
            V = ev.kin.V[self.m.elements["motion_load"].node]
            power = (power[0], power[1], power[2] + float(np.sum((hold[:, :6] - hold[:, 6:12]) * V)))
        self._prev = (st.t, power)

    def work_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The running state of the work integrals as arrays, for steps taken elsewhere
        (flexmb.solvers.tree_run): [t, p_diss, p_drive, p_load] at the last state (NaN: none yet)
        and the work so far (dissipated, drive_work, load_work)."""
        prev = np.array([self._prev[0], *self._prev[1]]) if self._prev is not None else np.full(4, np.nan)
        return prev, np.array([self.work["dissipated"], self.work["drive_work"], self.work["load_work"]])

    def set_work(self, prev: np.ndarray, work: np.ndarray) -> None:
        """Take back the state of :meth:`work_arrays` after those steps."""
        self.work.update(dissipated=float(work[0]), drive_work=float(work[1]), load_work=float(work[2]))
        if prev[0] == prev[0]:
            self._prev = (float(prev[0]), (float(prev[1]), float(prev[2]), float(prev[3])))

    def set_drive(self, drive: np.ndarray) -> None:
        """The drive forces at the last state taken elsewhere (what :meth:`step` keeps for its row)."""
        self._drive = drive

    # ------------------------------------------------------------------ rows
    def row(self, st: State, ev, iterations: int) -> None:
        """Write the output row at ``st`` into the block (after :meth:`step` for that state; kept
        once :meth:`commit` is called); a SolverError names its first non-finite quantity."""
        self._fill(st, ev, iterations, self._drive, self.work)

    def row_between(self, st: State, ev, iterations: int) -> None:
        """Write the output row at a state between the last step's start and end (dense output):
        the work integrals run to its time from the last step's start (call before :meth:`step`
        for the step's end)."""
        power, drive = self.power(st, ev)
        work = dict(self.work)
        if self._prev is not None:
            h = st.t - self._prev[0]
            for key, p, p0 in zip(("dissipated", "drive_work", "load_work"), power, self._prev[1]):
                work[key] += 0.5 * h * (p + p0)
        self._fill(st, ev, iterations, drive, work)

    def _fill(self, st: State, ev, iterations: int, drive: np.ndarray, work: dict[str, float]) -> None:
        b, m, asm = self.block, self.m, self.asm
        i, v, kin = b.n, b.views, ev.kin
        T, V = asm.energies(ev, st)
        v["t"][i] = st.t
        _q_into(st.q, st.balls, self._scalar, self._ball, v["q"][i])
        v["u"][i] = st.u
        v["udot"][i] = st.udot
        v["x"][i] = kin.x  # model frame, then global (Model.origin; exact for a model at the global origin)
        v["R"][i] = kin.R
        v["joint_points"][i] = kin.joint_point
        if self._origin is not None:
            v["x"][i] += self._origin
            v["joint_points"][i] += self._origin
        v["twists"][i] = kin.V
        v["drive_forces"][i] = drive
        _reactions_into(ev.node_wrenches(st.udot), kin.x, *self._tree, kin.joint_point, v["reactions"][i])
        v["newton_iterations"][i] = iterations
        if m.mforce_u.size:
            v["joint_forces"][i] = recorded_forces(m, st)
        for field, by_family in self._filled:
            if len(by_family) == 1:
                v[field][i] = asm.element_output(ev, by_family[0][0], by_family[0][1].name)
            else:
                v[field][i] = np.concatenate([asm.element_output(ev, name, o.name) for name, o in by_family])
        hold = st.elements.get(LOAD_HOLD_KEY) if st.elements else None
        if hold is not None:  # a sampled node load: the value acting from st on, as the joint forces' (M14), (M15)
            s = np.array([ld.sampled for ld in m.elements["motion_load"].load])
            v["motion_loads"][i][s, :6] = hold[s, :6]
            v["motion_loads"][i][s, 6] = hold[s, 13]
        # element strain energy apart from gravity and joint springs (energies() sums them)
        strain = ev.strain_energy
        dissipated, drive_work, load_work = work["dissipated"], work["drive_work"], work["load_work"]
        v["energy__kinetic"][i] = T
        v["energy__potential"][i] = V - strain
        v["energy__strain"][i] = strain
        v["energy__dissipated"][i] = dissipated
        v["energy__drive_work"][i] = drive_work
        v["energy__load_work"][i] = load_work
        if not np.isfinite(b.F[i]).all():  # a run never reports a NaN or inf as a result
            row = {k: a[i] for k, a in v.items()}
            raise self._nonfinite(st, ev, row_source(m, row) or "output row")
        self.energy.add(float(st.t), float(T), float(V - strain), float(strain), dissipated, drive_work,
                        load_work)  # the row's values (ENERGY_KEYS' order)

    def commit(self) -> None:
        """Keep the row written last; write the block when it is full or the writer says so."""
        self.block.n += 1
        if self.block.n == self.block.cap or (self.writer is not None and self.writer.due(self.block.n)):
            self.flush()

    def flush(self) -> None:
        """Write the block and the steps since the last flush (one chunk), keep them as ``keep``
        says, and start an empty block."""
        steps = self.log.take()
        if self.writer is not None and self.writer.opened:
            self.writer.write_chunk(self.block.arrays(), steps)
        self.kept.add(self.block, steps)
        self.rows_written += self.block.n
        self.block.n = 0

    def result(self, status: str, stats: dict, meta: dict | None = None) -> Result:
        """The rows (and steps) kept in memory as a Result."""
        if self.block.n or len(self.log):
            self.flush()
        rows, steps = self.kept.arrays()  # takes the blocks: the Result holds the rows once
        return self._result(rows, steps, status, stats, meta)

    def template(self) -> Result:
        """A Result without rows (the shapes, names and drawing RunWriter.begin needs)."""
        rows = {k: np.zeros((0, *s), dtype=d) for k, (s, d) in self.specs.items()}
        return self._result(rows, {}, "running", {}, None)

    def _result(self, rows: dict, steps: dict, status: str, stats: dict, meta: dict | None) -> Result:
        m = self.m
        names = {by_family[0][1].names_field: tuple(e for name, _ in by_family for e in m.elements[name].names)
                 for by_family in self.outputs.values() if by_family[0][1].names_field}
        fields = {k: a for k, a in rows.items() if not k.startswith("energy__")}
        names["joint_force_names"] = force_names(m)
        return Result(**fields, energy={k: rows[f"energy__{k}"] for k in ENERGY_KEYS},
                      coordinate_names=m.coordinate_names, node_names=m.node_names, joint_names=m.joint_names,
                      driven_names=tuple(m.coordinate_names[k] for k in m.driven), status=status, stats=stats,
                      **names, drawing=drawing_of(m), meta=dict(meta or {}), steps=steps)
