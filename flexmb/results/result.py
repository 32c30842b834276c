"""Simulation results as numpy arrays over time: the :class:`Result` type.

Two file forms, both read by :func:`flexmb.load` (flexmb.results.load): a single ``.npz``
written by :meth:`Result.save` (format in flexmb.results.npz), and the run directory that
:func:`flexmb.solvers.simulate.simulate` streams to while it runs (``out=``; see
flexmb.results.rundir). Neither is pickled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from flexmb.errors import ModelError
from flexmb.results.npz import write_result

__all__ = ["Result"]


@dataclass
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
    (:meth:`cut_force`; elements/bushing.py eq. (3)); newton_iterations (nt,); status: how the
    run ended (``finished``, ``stopped: <reason>`` (a callback/monitor ended it), ``failed: <reason>``,
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

    def cut_force(self, name: str, frame: str = "cut") -> np.ndarray:
        """Wrench history (nt, 6) of the loop cut (bushing or rigid cut) called ``name``: force
        (N) and moment (N m) the cut exerts on its end b (node_b) at the cut point; ``frame="cut"``:
        components in the cut's axes (the bushing axes carried by node_a), ``"global"``: global
        axes. The cut exerts the opposite wrench on its end a."""
        if frame not in ("cut", "global"):
            raise ModelError(f"cut_force: frame = {frame!r} must be 'cut' or 'global'.")
        i = self._index(self.cut_names, name, "cut")
        return (self.cut_forces if frame == "cut" else self.cut_forces_global)[:, i]

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
        try:
            return list(names).index(name)
        except ValueError:
            raise ModelError(f"unknown {what} '{name}'; known: {list(names)[:20]}.") from None

    def save(self, path: str | Path) -> Path:
        """Write the result to an ``.npz`` file (no pickled objects; flexmb.results.npz)."""
        return write_result(self, path)
