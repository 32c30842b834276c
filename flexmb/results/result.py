"""Simulation results as numpy arrays over time, saved and loaded without pickle.

Two file forms, both read by :func:`load` (``flexmb.load``): a single ``.npz`` written by
:meth:`Result.save`, and the run directory that :func:`flexmb.solvers.simulate.simulate` streams to
while it runs (``out=``; see :mod:`flexmb.results.rundir`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

__all__ = ["Result", "load"]


@dataclass
class Result:
    """Time histories of a run (first axis = output time).

    t (nt,); q (nt, n_u): coordinates, a ball's three entries being its rotation vector;
    u, udot (nt, n_u); x (nt, N, 3), R (nt, N, 3, 3): node poses;
    joint_points (nt, n_joints, 3): current joint points; twists (nt, N, 6): node (v, w); drive_forces (nt, n_driven);
    reactions (nt, n_joints, 6): force and moment on each joint's child (about the joint
    point, global axes); energy: dict of (nt,) arrays kinetic, potential (gravity and joint
    springs), strain (elements: beams, bushings), dissipated, drive_work, load_work;
    newton_iterations (nt,); status: how the run ended (``finished``, ``stopped: <reason>`` (a
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
    drawing: dict[str, np.ndarray] = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    def coordinate(self, name: str) -> np.ndarray:
        """Time history of the coordinate called ``name`` (see ``coordinate_names``)."""
        return self.q[:, self._index(self.coordinate_names, name, "coordinate")]

    def node_position(self, name: str) -> np.ndarray:
        """Position history (nt, 3) of the node called ``name``."""
        return self.x[:, self._index(self.node_names, name, "node")]

    def reaction(self, name: str) -> np.ndarray:
        """Reaction wrench history (nt, 6) of the joint called ``name``."""
        return self.reactions[:, self._index(self.joint_names, name, "joint")]

    def element_force(self, name: str) -> np.ndarray:
        """Section forces (nt, 6) N, Vy, Vz, T, My, Mz of the beam element called ``name``."""
        return self.element_forces[:, self._index(self.element_names, name, "beam element")]

    def drive_force(self, name: str) -> np.ndarray:
        """Actuator force/torque history of the driven coordinate called ``name``."""
        return self.drive_forces[:, self._index(self.driven_names, name, "driven coordinate")]

    @property
    def total_energy(self) -> np.ndarray:
        """Kinetic + potential + strain + dissipated - work of drives and loads (constant if balanced)."""
        e = self.energy
        strain = e.get("strain", 0.0)
        return e["kinetic"] + e["potential"] + strain + e["dissipated"] - e["drive_work"] - e["load_work"]

    @staticmethod
    def _index(names, name, what) -> int:
        from flexmb.errors import ModelError

        try:
            return list(names).index(name)
        except ValueError:
            raise ModelError(f"unknown {what} '{name}'; known: {list(names)[:20]}.") from None

    def save(self, path: str | Path) -> Path:
        """Write the result to an ``.npz`` file (no pickled objects)."""
        path = Path(path)
        arrays: dict[str, np.ndarray] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in ("energy", "drawing"):
                for k, a in v.items():
                    arrays[f"{f.name}__{k}"] = np.asarray(a)
            elif f.name == "meta":
                arrays["meta__json"] = np.array(json.dumps(v, default=_jsonable))
            elif f.name == "stats":
                arrays["stats__keys"] = np.array(list(v), dtype=str)
                arrays["stats__values"] = np.array(list(v.values()), dtype=float)
            elif isinstance(v, tuple):
                arrays[f.name] = np.array(v, dtype=str)
            elif isinstance(v, str):
                arrays[f.name] = np.array(v)
            else:
                arrays[f.name] = v
        np.savez_compressed(path, **arrays)
        return path


def _jsonable(v):
    """JSON fallback for numpy scalars/arrays and other objects (as text)."""
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return str(v)


def load(path: str | Path) -> Result:
    """Read a result: a run directory streamed by ``simulate(..., out=DIR)`` (also one whose
    run was killed: ``status`` then starts with ``incomplete``) or an ``.npz`` written by
    :meth:`Result.save`. Never unpickles (``allow_pickle=False``)."""
    from flexmb.errors import ResultFileError

    path = Path(path)
    if path.is_dir():
        from flexmb.results.rundir import load_run

        return load_run(path)
    if not path.is_file():
        raise ResultFileError(f"result '{path}' does not exist; give a run directory or a .npz written by flexmb.")
    try:
        return _load_npz(path)
    except (OSError, ValueError, KeyError) as exc:
        raise ResultFileError(f"'{path}' is not a flexmb result file ({type(exc).__name__}: {exc}).") from None


def _load_npz(path: Path) -> Result:
    with np.load(path, allow_pickle=False) as z:
        kw: dict = {}
        for f in fields(Result):
            if f.name in ("energy", "drawing"):
                pre = f"{f.name}__"
                kw[f.name] = {k[len(pre):]: z[k] for k in z.files if k.startswith(pre)}
            elif f.name == "meta":
                kw["meta"] = json.loads(str(z["meta__json"])) if "meta__json" in z.files else {}
            elif f.name in ("element_forces", "element_energy", "element_names") and f.name not in z.files:
                continue
            elif f.name == "stats":
                kw["stats"] = dict(zip(z["stats__keys"].tolist(), z["stats__values"].tolist()))
            elif f.name in ("coordinate_names", "node_names", "joint_names", "driven_names", "element_names"):
                kw[f.name] = tuple(z[f.name].tolist())
            elif f.name == "status":
                kw[f.name] = str(z[f.name])
            else:
                kw[f.name] = z[f.name]
    return Result(**kw)
