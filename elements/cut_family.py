"""What every loop cut between two node frames shares (bushings, elements/bushing.py; rigid cuts,
elements/rigid_cut.py; issue 35 item 3): the compiled cut frames :class:`CutData` (the cut point and
axes in the two node frames, eq. (1) of elements/bushing.py) and their compilation (:func:`cut_arrays`,
:func:`place_cut`), the directions a cut holds (:func:`constrained_mask`, :func:`held_directions`), the
cut-force outputs :data:`CUT_OUTPUTS` (eq. (3) of elements/bushing.py: :func:`cut_wrenches`,
:func:`cut_output`), and :class:`CutFamily`, the base class of the cut families: a cut (``cut = True``)
with blocks over its two nodes, those outputs, drawn as a line from node a to node b, whose rigid
equivalent (``cut_frames``, elements/cut_contract.py) holds the directions :meth:`CutFamily.held` names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from flexmb.elements.cut_contract import CutFrames
from flexmb.elements.cut_kernels import cut_wrenches_into
from flexmb.elements.family import ElementData, FamilyEvaluation, NodePairDrawing, NodeTable, Output, TwoNodeFamily

if TYPE_CHECKING:  # type hints only
    from flexmb.model import Model

__all__ = ["CutData", "CutFamily", "CUT_OUTPUTS", "DIRECTIONS", "constrained_mask", "held_directions", "cut_arrays",
           "place_cut", "cut_wrenches", "cut_output"]

#: the six deformation directions of a cut, in the cut axes: translations, then rotations
DIRECTIONS = ("tx", "ty", "tz", "rx", "ry", "rz")

#: the cut-force outputs of every cut family (eq. (3) of elements/bushing.py): recorded into Result.cut_forces (bushing axes) and
#: Result.cut_forces_global, rows named by Result.cut_names; ParaView cell data on the cuts' cells
CUT_OUTPUTS = (
    Output("cut_force", ("cut_force_x", "cut_force_y", "cut_force_z", "cut_moment_x", "cut_moment_y", "cut_moment_z"),
           "force [N] and moment [N m] the cut exerts on its end b, at the cut point, in the cut's axes (node a's "
           "bushing axes A)", field="cut_forces", names_field="cut_names"),
    Output("cut_force_global", ("cut_force_global_x", "cut_force_global_y", "cut_force_global_z", "cut_moment_global_x",
                                "cut_moment_global_y", "cut_moment_global_z"),
           "the same wrench in global axes", field="cut_forces_global", names_field="cut_names"),
)


def constrained_mask(mode: np.ndarray, stiff: np.ndarray) -> np.ndarray:
    """(n, 6) bool: the directions a cut holds — those with ``stiff`` (n, 6) true, minus the rotation a
    revolute cut frees (mode 0, 1, 2) and all rotations of a spherical one (mode 3)."""
    mask = np.array(stiff, dtype=bool).reshape(-1, 6)
    for i, m in enumerate(np.asarray(mode)):
        if 0 <= m <= 2:
            mask[i, 3 + m] = False
        elif m == 3:
            mask[i, 3:] = False
    return mask


def held_directions(k: int) -> np.ndarray:
    """(6,) bool over (tx, ty, tz, rx, ry, rz): all True for a spatial cut (``k`` = -1); for a
    planar cut whose axis ``k`` (0, 1, 2) lies along its plane's normal, the two translations
    across that axis and the rotation about it (docs/planar.md (P3))."""
    held = np.ones(6, bool)
    if k >= 0:
        held[:] = False
        held[[i for i in range(3) if i != k]] = True
        held[3 + k] = True
    return held


def cut_arrays(records: Sequence[Any], **more: np.ndarray) -> dict[str, Any]:
    """The compile arrays of cuts (bushings and rigid cuts) for ``records``, zero, that :func:`place_cut`
    fills: ``names``, the end nodes ``a``, ``b``, the points and axes ``sa``, ``Ea``, ``sb``, ``Eb`` and
    ``mode``; then the family's own arrays ``more``."""
    n = len(records)
    return dict(names=tuple(s.name for s in records), a=np.zeros(n, int), b=np.zeros(n, int), sa=np.zeros((n, 3)),
                Ea=np.zeros((n, 3, 3)), sb=np.zeros((n, 3)), Eb=np.zeros((n, 3, 3)), mode=np.zeros(n, int), **more)


def place_cut(out: dict[str, np.ndarray], i: int, spec: Any, nodes: NodeTable, who: str) -> None:
    """Write cut ``i``'s end nodes ``a``, ``b``, its point and axes in the two node frames (``sa``,
    ``Ea``, ``sb``, ``Eb``, eq. (1) of elements/bushing.py) and its free rotation ``mode`` into the compile arrays ``out``,
    from a spec with node_a (ground allowed), node_b, point, axes, free_rotation (bushings and
    rigid cuts)."""
    a = nodes.index(spec.node_a, who, ground=True)
    b = nodes.index(spec.node_b, who)
    Xa, Ra = nodes.frame(a)
    Xb, Rb = nodes.frame(b)
    out["a"][i], out["b"][i] = a, b
    out["sa"][i], out["Ea"][i] = Ra.T @ (spec.point - Xa), Ra.T @ spec.axes
    out["sb"][i], out["Eb"][i] = Rb.T @ (spec.point - Xb), Rb.T @ spec.axes
    out["mode"][i] = spec.free_rotation

def cut_wrenches(G: np.ndarray, f: np.ndarray, xb: np.ndarray, Rb: np.ndarray, sb: np.ndarray,
                 A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eq. (3) of elements/bushing.py: the wrench (force, moment at the cut point p_b) a cut with deformation derivative
    ``G`` (n, 6, 12) and generalized force ``f`` (n, 6) on its deformation exerts on its end b
    (pose ``xb``, ``Rb``; point offset ``sb`` in b's axes), in the cut axes ``A`` (n, 3, 3, global
    columns) and globally: two (n, 6) arrays."""
    n = G.shape[0]
    loc, glob = np.empty((n, 6)), np.empty((n, 6))
    cut_wrenches_into(G, f, xb, Rb, sb, A, loc, glob)  # compiled: an output row's cost (elements/cut_kernels.py)
    return loc, glob


def cut_output(fe: Any, f: np.ndarray | None, sb: np.ndarray, name: str) -> np.ndarray:
    """The cut force of eq. (3) of elements/bushing.py as the output ``name``: in the cut axes (``cut_force``) or globally
    (``cut_force_global``), for a cut family's evaluation ``fe`` (G, xb, Rb, A; None: no elements)
    with generalized force ``f`` on the deformation (a bushing's elastic force, a rigid cut's multipliers)."""
    if fe is None:
        return np.zeros((0, 6))
    cached = fe.__dict__.get("_cut_wrenches")  # both outputs of a row from one evaluation: computed once
    if cached is None or cached[0] is not f:
        cached = (f, *cut_wrenches(fe.G, f, fe.xb, fe.Rb, sb, fe.A))
        fe.__dict__["_cut_wrenches"] = cached
    return cached[1] if name == "cut_force" else cached[2]


@dataclass(frozen=True, eq=False)
class CutData(ElementData):
    """The arrays every loop cut has (bushings, rigid cuts; :func:`cut_arrays`, :func:`place_cut`): its
    ends and the cut frame in the two node frames, eq. (1) of elements/bushing.py."""

    a: np.ndarray  # node index of end a, -1 = ground                                   (n_el)
    b: np.ndarray  # node index of end b                                                (n_el)
    sa: np.ndarray  # cut point rel. to node a, node a axes (global for ground)         (n_el x 3)
    Ea: np.ndarray  # cut axes (columns) in node a axes                                 (n_el x 3 x 3)
    sb: np.ndarray  # cut point rel. to node b, node b axes                             (n_el x 3)
    Eb: np.ndarray  # cut axes (columns) in node b axes                                 (n_el x 3 x 3)
    mode: np.ndarray  # free rotation: -1 none, 0/1/2 about cut x/y/z, 3 all            (n_el)


class CutFamily(NodePairDrawing, TwoNodeFamily):
    """A family of loop cuts between two node frames (bushings, rigid cuts): ``cut = True`` (the cut
    contract of elements/cut_contract.py), blocks over its two nodes, the cut-force outputs
    :data:`CUT_OUTPUTS` (eq. (3) of elements/bushing.py), and drawn as a line from node a to node b of
    cell kind ``name`` under the drawing keys ``<name>_a``, ``<name>_b`` (unless the subclass gives
    its own). Its data is a :class:`CutData`. A subclass says which directions its rigid equivalent
    holds (:meth:`held`), whether the cut is rigid in the mechanism itself (:attr:`rigid`) and which
    generalized force on the deformation is its cut force (:meth:`cut_force`)."""

    cut = True
    has_blocks = True
    outputs = CUT_OUTPUTS
    #: the cut is rigid in the mechanism itself (CutFrames.rigid), not elastic
    rigid: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("name")
        if name:
            cls.cell_kind = cls.__dict__.get("cell_kind", name)
            cls.drawing_keys = cls.__dict__.get("drawing_keys", (f"{name}_a", f"{name}_b"))

    def held(self, data: Any) -> np.ndarray:
        """(n_el, 6) bool: the directions (tx, ty, tz, rx, ry, rz) each cut of ``data`` holds made rigid."""
        raise NotImplementedError(f"cut family '{self.name}' does not say which directions it holds")

    def cut_frames(self, model: Model, data: Any) -> CutFrames:
        """The cuts as rigid-equivalent constraints: their frames, the directions :meth:`held` names, and
        :attr:`rigid` for each."""
        return CutFrames(data.names, data.a, data.b, data.sa, data.Ea, data.sb, data.Eb, data.mode, self.held(data),
                         np.full(data.n, self.rigid))

    def cut_force(self, fe: Any) -> np.ndarray:
        """The generalized force f (n_el, 6) on the deformation of the evaluation ``fe`` whose node wrench
        is the cut force (eq. (3) of elements/bushing.py): a bushing's elastic force, a rigid cut's multipliers."""
        raise NotImplementedError(f"cut family '{self.name}' does not say its cut force")

    def output(self, model: Model, data: Any, fe: FamilyEvaluation | None, name: str) -> np.ndarray:
        """The cut force of eq. (3) of elements/bushing.py (with :meth:`cut_force` as f) in the cut axes
        (``cut_force``) or global (``cut_force_global``)."""
        if name not in ("cut_force", "cut_force_global"):
            return super().output(model, data, fe, name)
        return cut_output(fe, None if fe is None else self.cut_force(fe), data.sb, name)
