"""Simulation results as numpy arrays over time: the :class:`Result` type.

Two file forms, both read by :func:`flexmb.load` (flexmb.results.load): a single ``.npz``
written by :meth:`Result.save` (format in flexmb.results.npz), and the run directory that
:func:`flexmb.solvers.simulate.simulate` streams to while it runs (``out=``; see
flexmb.results.rundir). Neither is pickled.

A Result read from a file is *lazy*: its per-row arrays, ``energy`` and ``steps`` are read
from the file when first used (each field once, then kept), and :meth:`Result.window` reads
only the rows of a time range (from a run directory: only the chunks that hold them). The
file's structure was checked when it was opened (flexmb.results.checks); reading a field
checks its data again and raises ResultFileError if the file changed since.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from flexmb.errors import ModelError
from flexmb.results.names import COORDINATE_SUFFIXES, history, history_names, resolve
from flexmb.results.npz import write_result

__all__ = ["Result", "RowSource", "STEP_STATUS"]

STEP_STATUS = {0: "accepted", 1: "rejected: local error above tol", 2: "failed: Newton or a non-finite value"}
"""Codes of ``Result.steps["status"]``."""


class RowSource(Protocol):
    """Where a lazy Result reads its rows from (flexmb.results.rundir, flexmb.results.npz)."""

    path: Path
    row_fields: tuple[str, ...]  # per-row arrays the file holds: Result fields and 'energy__<term>'
    step_fields: tuple[str, ...]  # step-history columns ('steps__<key>'), () if none

    def read(self, name: str, lo: int, hi: int) -> np.ndarray:
        """Rows [lo, hi) of the per-row array ``name``."""

    def read_steps(self, t0: float, t1: float) -> dict[str, np.ndarray]:
        """The step history (columns by key) of the steps ending in [t0, t1]."""


@dataclass(repr=False)
class Result:
    """Time histories of a run (first axis = output time).

    t (nt,); q (nt, n_u): coordinates, a ball's three entries being its rotation vector;
    u, udot (nt, n_u); x (nt, N, 3), R (nt, N, 3, 3): node poses;
    joint_points (nt, n_joints, 3): current joint points; twists (nt, N, 6): node (v, w); drive_forces (nt, n_driven);
    reactions (nt, n_joints, 6): force and moment on each joint's child (about the joint
    point, global axes); energy: dict of (nt,) arrays kinetic, potential (gravity and joint
    springs), strain (elements: beams, bushings), dissipated, drive_work, load_work;
    element_forces (nt, n_el, 6), element_energy (nt, n_el): beam section forces and strain
    energy, rows named by element_names; cut_forces (nt, n_cut, 6): force and moment every loop
    cut (bushings, then rigid cuts) exerts on its end b at the cut point, in the cut's axes (node
    a's bushing axes), and cut_forces_global the same globally, rows named by cut_names
    (:meth:`cut_force`; elements/bushing.py eq. (3)); spring_dampers (nt, n_sd, 3): length, its rate
    and tension of every spring-damper, rows named by spring_damper_names (:meth:`spring_damper`;
    docs/spring_damper.md (S2)-(S4)), then those of every prescribed-length actuator (length, rate, force;
    :meth:`actuator`, docs/actuator.md); couplings (nt, n_c, 3): gap, its rate and force of every
    coupling, rows named by coupling_names (:meth:`coupling`; docs/coupling.md (C1)-(C3));
    joint_forces (nt, n_jf, 2): every joint force of the motion f(t, q, u) (ModelBuilder.add_joint_force),
    the value acting from the row's state on (a sampled force's held value) and the time of the state it
    was computed from (a sampled force: of the sample it holds; a continuous one: the row's), rows named
    by joint_force_names (:meth:`joint_force`; docs/motion_forces.md (M14)); motion_loads (nt, n_ml, 7): every
    node load of the motion f(t, x, R, v, w), force and moment (global axes, about the node origin) and the time
    of the state they were computed from (a sampled load's sample), rows named by motion_load_names
    (docs/motion_forces.md (M8), (M15));
    newton_iterations (nt,): of the step that ended at (or, between steps, spans) the row;
    steps: the step history, one entry per step attempt (flexmb.solvers.step_control.StepLog):
    ``t`` (where the attempt ended), ``h``, ``iterations``, ``error`` (the estimated local error
    per unit step relative to the motion, flexmb.solvers.step_control.ErrorEstimate; compared
    with ``tol`` by ``dt="auto"``), ``status`` (:data:`STEP_STATUS`: 0 accepted, 1 rejected by
    the error, 2 Newton failed); status: how the run ended (``finished``, ``stopped: <reason>`` (a
    callback/monitor ended it), ``failed: <reason>``,
    ``interrupted``, ``incomplete: ...`` for a streamed run that wrote no end record);
    drawing: the model topology the ParaView export needs (flexmb.results.drawing.drawing_of);
    meta: JSON-able facts about the run (case, parameters, settings).
    """

    t: np.ndarray
    q: np.ndarray
    u: np.ndarray
    udot: np.ndarray
    x: np.ndarray
    R: np.ndarray
    joint_points: np.ndarray
    twists: np.ndarray
    drive_forces: np.ndarray
    reactions: np.ndarray
    energy: dict[str, np.ndarray]
    newton_iterations: np.ndarray
    coordinate_names: tuple[str, ...] = ()
    node_names: tuple[str, ...] = ()
    joint_names: tuple[str, ...] = ()
    driven_names: tuple[str, ...] = ()
    status: str = "finished"
    stats: dict[str, float] = field(default_factory=dict)
    element_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 6)))
    element_energy: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    element_names: tuple[str, ...] = ()
    cut_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 6)))
    cut_forces_global: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 6)))
    cut_names: tuple[str, ...] = ()
    spring_dampers: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))
    spring_damper_names: tuple[str, ...] = ()
    couplings: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 3)))
    coupling_names: tuple[str, ...] = ()
    joint_forces: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 2)))
    joint_force_names: tuple[str, ...] = ()
    motion_loads: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 7)))
    motion_load_names: tuple[str, ...] = ()
    drawing: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)
    steps: dict[str, np.ndarray] = field(default_factory=dict)

    # -------------------------------------------------------------- lazy rows (a Result read from a file)
    @classmethod
    def from_source(cls, source: RowSource, lo: int, hi: int, t: np.ndarray,
                    step_range: tuple[float, float] = (-np.inf, np.inf), **static: Any) -> Result:
        """A Result whose rows [lo, hi) are read from ``source`` on first use (``t``: their times,
        read already) with the steps that ended in ``step_range``; ``static``: the other fields
        (names, status, stats, drawing, meta)."""
        res = cls.__new__(cls)
        lazy = _Lazy(source, lo, hi, *step_range)
        res.__dict__["_lazy"] = lazy
        for f in fields(cls):
            if f.name == "t":
                res.__dict__["t"] = t
            elif f.name in static:
                res.__dict__[f.name] = static[f.name]
            elif lazy.provides(f.name):
                continue
            elif f.default is not MISSING:
                res.__dict__[f.name] = f.default
            elif f.default_factory is not MISSING:
                res.__dict__[f.name] = f.default_factory()
            else:
                raise TypeError(f"Result.from_source: '{f.name}' is neither in the source nor given")
        return res

    def __getattr__(self, name: str) -> Any:
        # only reached for a field not read yet (normal lookup failed): read it from the source
        lazy = self.__dict__.get("_lazy") if not name.startswith("__") else None
        if lazy is None or not lazy.provides(name):
            raise AttributeError(f"'Result' object has no attribute '{name}'")
        value = lazy.load(name)
        self.__dict__[name] = value
        return value

    @property
    def source(self) -> Path | None:
        """The file or run directory this Result reads its rows from (None: all in memory)."""
        lazy = self.__dict__.get("_lazy")
        return None if lazy is None else lazy.source.path

    def __repr__(self) -> str:
        t = self.t
        span = f"t = {t[0]:.6g} .. {t[-1]:.6g}" if t.size else "no rows"
        where = f", reading {self.source}" if self.source is not None else ""
        return f"Result(status={self.status!r}, {t.size} rows, {span}{where})"

    def window(self, t0: float, t1: float) -> Result:
        """The rows with ``t0 <= t <= t1`` (and the steps that ended in that range) as a Result;
        a Result read from a file reads only those rows (of a run directory: only the chunks
        that hold them), each field on first use."""
        t = self.t
        lo, hi = int(np.searchsorted(t, t0, side="left")), int(np.searchsorted(t, t1, side="right"))
        lazy = self.__dict__.get("_lazy")
        row_like = _row_fields(self, lazy)
        static = {f.name: self.__dict__[f.name] for f in fields(self) if f.name not in row_like and f.name in self.__dict__}
        if lazy is not None:
            rng = (max(t0, lazy.t0), min(t1, lazy.t1))
            return Result.from_source(lazy.source, lazy.lo + lo, lazy.lo + hi, t[lo:hi], rng, **static)
        rows = {name: getattr(self, name)[lo:hi] for name in row_like if name not in ("energy", "steps")}
        energy = {k: v[lo:hi] for k, v in self.energy.items()}
        steps = _steps_between(self.steps, t0, t1)
        return Result(**rows, energy=energy, steps=steps, **static)

    def coordinate(self, name: str) -> np.ndarray:
        """Time history of the coordinate called ``name`` (see ``coordinate_names``; a one-coordinate
        joint's name stands for its coordinate): its value; ``name`` ending in ``".u"`` its rate,
        in ``".udot"`` its acceleration (docs/results_by_name.md (N1))."""
        field, k, _ = resolve(self, name)
        if field not in COORDINATE_SUFFIXES.values():
            raise ModelError(f"coordinate: '{name}' is an element's quantity (spring-damper, loop cut or beam), not a "
                             f"coordinate; read it with Result.history('{name}').")
        return getattr(self, field)[:, k]

    def rate(self, name: str) -> np.ndarray:
        """Rate history (a column of ``u``) of the coordinate ``name`` (docs/results_by_name.md (N1))."""
        return self.u[:, self._coordinate(name)]

    def acceleration(self, name: str) -> np.ndarray:
        """Acceleration history (a column of ``udot``) of the coordinate ``name`` (docs/results_by_name.md (N1))."""
        return self.udot[:, self._coordinate(name)]

    def history(self, name: str) -> np.ndarray:
        """The (nt,) history of any scalar quantity by name: coordinates (``NAME``, ``NAME.u``,
        ``NAME.udot``), spring-dampers (``NAME.length``, ``NAME.rate``, ``NAME.force``), loop cuts
        (``NAME.fx`` ... ``NAME.mz``, cut axes) and beam elements (``NAME.N``, ``.Vy``, ``.Vz``, ``.T``,
        ``.My``, ``.Mz``); ModelError listing close matches for an unknown name
        (docs/results_by_name.md (N1)-(N3))."""
        return history(self, name)

    def history_names(self) -> list[str]:
        """Every name :meth:`history` reads (flexmb.results.names.history_names)."""
        return history_names(self)

    def _coordinate(self, name: str) -> int:
        field, k, _ = resolve(self, name)
        if field != "q":
            raise ModelError(f"'{name}' is not a coordinate name (a rate, acceleration or element quantity); "
                             f"give the coordinate itself, e.g. {list(self.coordinate_names)[:3]}.")
        return k

    def node_position(self, name: str) -> np.ndarray:
        """Position history (nt, 3) of the node called ``name``."""
        return self.x[:, self._index(self.node_names, name, "node")]

    def reaction(self, name: str) -> np.ndarray:
        """Reaction wrench history (nt, 6) of the joint called ``name``."""
        return self.reactions[:, self._index(self.joint_names, name, "joint")]

    def element_force(self, name: str) -> np.ndarray:
        """Section forces (nt, 6) N, Vy, Vz, T, My, Mz of the beam element called ``name``."""
        return self.element_forces[:, self._index(self.element_names, name, "beam element")]

    def cut_force(self, name: str, frame: str = "cut") -> np.ndarray:
        """Wrench history (nt, 6) of the loop cut (bushing or rigid cut) called ``name``: force
        (N) and moment (N m) the cut exerts on its end b (node_b) at the cut point; ``frame="cut"``:
        components in the cut's axes (the bushing axes carried by node_a), ``"global"``: global
        axes. The cut exerts the opposite wrench on its end a."""
        if frame not in ("cut", "global"):
            raise ModelError(f"cut_force: frame = {frame!r} must be 'cut' or 'global'.")
        i = self._index(self.cut_names, name, "cut")
        return (self.cut_forces if frame == "cut" else self.cut_forces_global)[:, i]

    def spring_damper(self, name: str, quantity: str | None = None) -> np.ndarray:
        """History of the spring-damper called ``name`` (ModelBuilder.add_spring_damper): (nt, 3)
        columns length l [m], its rate l' [m/s] and tension F = k (l - L0) + c l' + F0 [N] (positive
        pulling its points together; docs/spring_damper.md (S2)-(S4)); ``quantity`` ``"length"``,
        ``"rate"`` or ``"force"``: that column alone (nt,)."""
        return self._columns("spring_damper", self.spring_dampers, self.spring_damper_names, name, "spring-damper",
                             quantity, ("length", "rate", "force"))

    def coupling(self, name: str, quantity: str | None = None) -> np.ndarray:
        """History of the coupling called ``name`` (ModelBuilder.add_coupling): (nt, 3) columns gap
        g = q_b - r q_a - c0, its rate ġ and force f (the coupling applies -f to q_b and r f to q_a;
        rigid: the multiplier; docs/coupling.md (C1)-(C3)); ``quantity`` ``"gap"``, ``"rate"`` or
        ``"force"``: that column alone (nt,)."""
        return self._columns("coupling", self.couplings, self.coupling_names, name, "coupling",
                             quantity, ("gap", "rate", "force"))

    def joint_force(self, name: str, quantity: str | None = None) -> np.ndarray:
        """History of the joint force of the motion on ``name`` (ModelBuilder.add_joint_force with f(t, q, u); the
        joint's name, or the coordinate's for a joint of several): (nt, 2) columns the force acting from the row
        on (a sampled force's held value) and the time of the state it was computed from (a sampled force's
        sample); ``quantity`` ``"force"`` or ``"sampled_at"``: that column alone (docs/motion_forces.md (M14))."""
        return self._columns("joint_force", self.joint_forces, self.joint_force_names, name, "joint force of the motion",
                             quantity, ("force", "sampled_at"))

    def actuator(self, name: str, quantity: str | None = None) -> np.ndarray:
        """History of the actuator called ``name`` (ModelBuilder.add_actuator): (nt, 3) columns length l
        [m], its rate l' [m/s] and force F [N] (tension positive: pulling its points together; for a
        prescribed length the multiplier, docs/actuator.md (A4)); ``quantity`` ``"length"``, ``"rate"``
        or ``"force"``: that column alone (nt,). Actuators are recorded with the spring-dampers
        (field spring_dampers, rows named by spring_damper_names)."""
        return self._columns("actuator", self.spring_dampers, self.spring_damper_names, name, "actuator",
                             quantity, ("length", "rate", "force"))

    def drive_force(self, name: str) -> np.ndarray:
        """Actuator force/torque history of the driven coordinate called ``name``."""
        return self.drive_forces[:, self._index(self.driven_names, name, "driven coordinate")]

    @property
    def total_energy(self) -> np.ndarray:
        """Kinetic + potential + strain + dissipated - work of drives and loads (constant if balanced)."""
        e = self.energy
        strain = e.get("strain", 0.0)
        return e["kinetic"] + e["potential"] + strain + e["dissipated"] - e["drive_work"] - e["load_work"]

    def _columns(self, method: str, table: np.ndarray, names: Sequence[str], name: str, what: str,
                 quantity: str | None, columns: tuple[str, ...]) -> np.ndarray:
        """The rows of element ``name`` in ``table`` (nt, n_el, len(columns)), or column ``quantity``
        alone (nt,): the history methods of the elements with named columns (:meth:`spring_damper`,
        :meth:`coupling`, :meth:`joint_force`, :meth:`actuator`). ModelError for another quantity."""
        if quantity is not None and quantity not in columns:
            allowed = ", ".join(repr(c) for c in columns[:-1]) + f" or {columns[-1]!r}"
            raise ModelError(f"{method}: quantity = {quantity!r} must be None, {allowed}.")
        rows = table[:, self._index(names, name, what)]
        return rows if quantity is None else rows[:, columns.index(quantity)]

    @staticmethod
    def _index(names, name, what) -> int:
        try:
            return list(names).index(name)
        except ValueError:
            raise ModelError(f"unknown {what} '{name}'; known: {list(names)[:20]}.") from None

    def save(self, path: str | Path) -> Path:
        """Write the result to an ``.npz`` file (no pickled objects; flexmb.results.npz)."""
        return write_result(self, path)


def _row_fields(res: Result, lazy: _Lazy | None) -> set[str]:
    """The fields of ``res`` with one entry per output row (per-row arrays, whatever element
    family recorded them, ``energy`` and ``steps``): those its source reads, or in memory every
    array field with as many rows as ``t``."""
    nt = res.t.shape[0]
    out = {"t", "energy", "steps"}
    for f in fields(res):
        if lazy is not None and lazy.provides(f.name):
            out.add(f.name)
        else:
            v = res.__dict__.get(f.name)
            if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] == nt:
                out.add(f.name)
    return out


def _steps_between(steps: Mapping[str, np.ndarray], t0: float, t1: float) -> dict[str, np.ndarray]:
    if not steps:
        return {}
    keep = (steps["t"] >= t0) & (steps["t"] <= t1)
    return {k: v[keep] for k, v in steps.items()}


class _Lazy:
    """The rows [lo, hi) of a source, read field by field (Result.__getattr__)."""

    def __init__(self, source: RowSource, lo: int, hi: int, t0: float, t1: float) -> None:
        self.source, self.lo, self.hi, self.t0, self.t1 = source, lo, hi, t0, t1
        self.names = set(source.row_fields)

    def provides(self, name: str) -> bool:
        return name in self.names or name in ("energy", "steps")

    def load(self, name: str) -> Any:
        src = self.source
        if name == "energy":
            return {k[8:]: src.read(k, self.lo, self.hi) for k in src.row_fields if k.startswith("energy__")}
        if name == "steps":
            return src.read_steps(self.t0, self.t1) if src.step_fields else {}
        return src.read(name, self.lo, self.hi)
