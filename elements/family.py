"""The element-family interface: :class:`ElementFamily` (what every kind implements), the
types it exchanges with the compiler, the engine and the recorder (:class:`NodeTable`,
:class:`ElementData`, :class:`FamilyEvaluation`, :class:`Output`, :class:`StepContext`), and the
registry helpers. The contract is written out in the package docstring (flexmb.elements).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numba import njit

from flexmb.element_data import ElementData
from flexmb.elements.cut_contract import CutFrames, CutStart, ElasticCutRows
from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only: the engine and the model stand above the element library
    from flexmb.engine.iteration_matrix import ElementScatter
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["CutFrames", "ElementData", "ElementFamily", "FamilyEvaluation", "PenaltyEvaluation", "NodeTable", "Output",
           "StartContext", "StepContext", "TwoNodeFamily", "NodePairDrawing", "frozen_arrays", "listing", "origin_potential",
           "ordered_sum", "unstarted_state", "GROUND"]

@njit(cache=True)
def ordered_sum(a) -> float:
    """0.0 + a[0] + a[1] + ... in order: the families' sums of element powers, which the compiled runs
    (flexmb/solvers/element_run.py) repeat bit for bit (numpy's sum adds in pairs)."""
    s = 0.0
    for v in a:
        s += v
    return s


#: node index of the fixed frame in element node arrays
GROUND = -1


def frozen_arrays(values: Mapping[str, Any]) -> dict[str, Any]:
    """``values`` with every numpy array made C-contiguous and read-only (for ElementData fields)."""
    out = {}
    for k, v in values.items():
        if isinstance(v, np.ndarray):
            v = np.ascontiguousarray(v)
            v.setflags(write=False)
        out[k] = v
    return out


def unstarted_state(n: int, width: int, phase: int) -> np.ndarray:
    """(n, width) zeros with column ``phase`` at -1: the internal state at t = 0 of ``n`` elements held by
    penalties with a phase (rigid cuts, actuators, couplings), none of them started yet."""
    st = np.zeros((n, width))
    st[:, phase] = -1.0
    return st


def listing(items: list[str], limit: int) -> list[str]:
    """``items`` cut after ``limit`` entries with a line saying how many more there are."""
    return items if len(items) <= limit else items[:limit] + [f"  ... and {len(items) - limit} more"]


def origin_potential(model: Model, mass: np.ndarray) -> float:
    """-sum(m) g . origin: what the weight's potential of masses ``mass`` adds when their positions
    are taken globally instead of in the model frame (0.0 for a model at the global origin)."""
    o = model.origin  # (3,): tested by its entries (as o.any(), NaN counted), cheaper per output row than o.any()
    return -float(np.sum(mass)) * float(model.gravity @ o) if o[0] != 0.0 or o[1] != 0.0 or o[2] != 0.0 else 0.0


@dataclass(frozen=True)
class NodeTable:
    """The compiled node table a family's :meth:`ElementFamily.compile` reads: ``names`` (N),
    positions ``X0`` (N, 3, global, as given) and orientations ``R0`` (N, 3, 3) at assembly, and
    ``origin`` (3): where the model frame, in which the engine computes (``Model.origin``), has its
    origin. The engine places the fixed frame (ground) at the model frame's origin, so a point a
    family attaches to ground is stored as ``P - origin``: :meth:`frame` gives ground's frame so,
    and points relative to a node (``R0ᵀ (P - X0)``) need nothing."""

    names: tuple[str, ...]
    X0: np.ndarray
    R0: np.ndarray
    index_of: Mapping[str, int]
    origin: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(3))

    def index(self, name: str, who: str, ground: bool = False) -> int:
        """Index of node ``name`` (GROUND for ``"ground"`` if ``ground``); ModelError naming ``who`` otherwise."""
        if ground and name == "ground":
            return GROUND
        try:
            return self.index_of[name]
        except (KeyError, TypeError):
            raise ModelError(f"{who}: unknown node {name!r}. Known nodes: {list(self.names)[:20]}.") from None

    def frame(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Global position and orientation at assembly of node ``i``; for GROUND the frame the
        engine takes as ground: at ``origin`` (the model frame's origin), global axes. A point P
        (global) relative to it, ``Rᵀ (P - X)``, is then what the engine needs for nodes and ground
        alike."""
        return (np.asarray(self.origin, dtype=float), np.eye(3)) if i == GROUND else (self.X0[i], self.R0[i])


@dataclass
class FamilyEvaluation:
    """What :meth:`ElementFamily.evaluate` returns at one state: the family's strain energy and
    dissipated power (summed by the assembly into the energy balance), subclassed by each family
    for what its blocks and outputs need later (frames, deformations, tangents...).
    ``drive_power`` [W]: the power its prescribed motions put in (drive work; prescribed-length actuators).
    ``position_noise`` [m]: how far the round-off of the family's forces can move the nodes in one
    Newton correction (a penalty's amplification of its closure's round-off: flexmb.elements.rigid_cut,
    (AL4)); the time step takes an iterate whose corrections no longer contract and move the nodes by
    less than the largest over the families as converged (docs/rigid_cut.md §3)."""

    strain_energy: float = 0.0
    dissipation: float = 0.0
    position_noise: float = 0.0
    #: the power [W] the family's prescribed motions put into the mechanism (actuators, flexmb.elements.actuator),
    #: counted with the drives' work in the energy balance
    drive_power: float = 0.0
    #: the power [W] of the family's applied loads (node loads of the motion, flexmb.elements.motion_load),
    #: counted with the nodal loads' work (load work) in the energy balance
    load_power: float = 0.0


@dataclass
class PenaltyEvaluation(FamilyEvaluation):
    """A family held by an augmented Lagrangian at one iterate (the rigid cuts, docs/rigid_cut.md (AL1)-(AL11);
    the actuators, docs/actuator.md): the closure ``phi``, the penalties ``alpha`` the iterate used and
    ``alpha_next``, those of the next matrix where the iterate's update raised them (AL11; None: unchanged),
    the multipliers ``lam`` of this iterate (AL3) and the force ``force`` (AL1)."""

    phi: np.ndarray | None = None
    alpha: np.ndarray | None = None
    alpha_next: np.ndarray | None = None
    lam: np.ndarray | None = None
    force: np.ndarray | None = None

    def matrix_penalties(self) -> np.ndarray | None:
        """The penalties of the iteration matrix's blocks (AL2): ``alpha_next`` where the last update raised
        them (AL11), else ``alpha``."""
        return self.alpha if self.alpha_next is None else self.alpha_next


@dataclass(frozen=True)
class Output:
    """A per-element output of a family, computed on demand from an evaluation
    (:meth:`ElementFamily.output`): ``name``, ``columns`` (names of one element's values; empty:
    one scalar per element), ``doc``. ``field`` names the :class:`flexmb.Result` field the
    recorder writes it to on every output row (shape (nt, n_el, len(columns)) or (nt, n_el)),
    ``names_field`` the Result field that names its rows; ``field=None``: not recorded. With
    ``columns`` the output is also ParaView cell data on the family's cells (one array per column,
    or one named ``name``)."""

    name: str
    columns: tuple[str, ...]
    doc: str
    field: str | None = None
    names_field: str | None = None


@dataclass
class StepContext:
    """What :meth:`ElementFamily.end_step` may use after a converged time step: the step size
    ``h``, the iteration-matrix factors ``gp`` = γ' and ``bp`` = β', the unknown coordinates
    ``free``, ``solve(r)`` = S⁻¹ r on them with the integrator's current factorization (one is
    made at the converged state if there is none for this step size), ``solve_projection(r)`` =
    (M̄ + β' K̄_c)⁻¹ r at the converged state (Assembler.iteration_matrix(projection=True), factorized
    when first asked for), ``project(w)`` = Bᵀ w and
    ``twists(u)`` = B u at the converged state (node wrenches and twists (N, 6)), ``evaluate(state)``
    the assembly's evaluation of a state, ``kinematics(state)`` its kinematics alone (e.g. at corrected
    velocities: ``zeta``).
    :meth:`ElementFamily.begin_step` gets one with ``h``, ``gp``, ``bp`` and ``free`` only."""

    h: float
    gp: float
    bp: float
    free: np.ndarray
    solve: Callable[[np.ndarray], np.ndarray] | None = None
    solve_projection: Callable[[np.ndarray], np.ndarray] | None = None
    project: Callable[[np.ndarray], np.ndarray] | None = None
    twists: Callable[[np.ndarray], np.ndarray] | None = None
    evaluate: Callable[[State], Any] | None = None
    kinematics: Callable[[State], Any] | None = None


@dataclass
class StartContext:
    """What :meth:`ElementFamily.start` may use before the initial accelerations: the unknown
    coordinates ``free``, ``evaluate(state)`` the assembly's evaluation of a state (its
    ``elements[name]``, ``kin``, ``residual``, ``project``, ``twists``), ``mass_solver(ev)`` a
    function r -> M̄⁻¹ r on the free coordinates at the evaluation ``ev``; ``notes`` a dict the start
    may report in (JSON values; it becomes the run's ``meta["start"]["cuts"]``). :meth:`ElementFamily.close`
    gets the same context."""

    free: np.ndarray
    evaluate: Callable[[State], Any]
    mass_solver: Callable[[Any], Callable[[np.ndarray], np.ndarray]]
    notes: dict | None = None


class ElementFamily:
    """One element kind. Subclass it, set the class attributes, implement the methods your
    kind has (the defaults do nothing), make one instance and register it
    (:func:`flexmb.elements.register`). The package docstring states the contract."""

    #: registry key, key of Model.elements and State.elements
    name: ClassVar[str] = ""
    #: what one element is called in messages and descriptions, singular and plural
    label: ClassVar[str] = "element"
    plural: ClassVar[str] = "elements"
    #: one-node families that write node mass blocks Mb (bodies, particles); their M̄ goes through
    #: the composite-rigid-body pairs, their M ζ into the bias by the assembly
    node_mass: ClassVar[bool] = False
    #: the family acts on the mechanism (evaluate); False: data only (drawing, checks)
    forces: ClassVar[bool] = True
    #: loop cuts between two node frames (bushings, rigid cuts): they offer their rigid-equivalent
    #: constraints (cut_frames) and are left out of the rigid-equivalent model's forces
    #: (evaluate(..., elastic_cuts=False)), which holds them as constraints instead
    cut: ClassVar[bool] = False
    #: the family gives element blocks (K, C, M) to the iteration matrix
    has_blocks: ClassVar[bool] = False
    #: the family's elements prescribe motion: their power is drive work (FamilyEvaluation.drive_power; an
    #: accepted state of a model without such a family needs no evaluation for it: LazyEvaluation)
    prescribes: ClassVar[bool] = False
    #: the family's elements are applied loads: their power is load work (FamilyEvaluation.load_power; as
    #: ``prescribes`` for an accepted state taken without evaluation)
    loads: ClassVar[bool] = False
    #: the family has element masses (M_e a in the node wrenches and in M̄)
    has_mass: ClassVar[bool] = False
    #: its blocks' stiffness belongs to the metric of the mass-orthogonal projections of augmented-Lagrangian
    #: cuts, M̄ + β' K̄_c (Assembler.iteration_matrix(projection=True)): a penalty of such a cut
    projection_blocks: ClassVar[bool] = False
    #: the loads of every element on its two nodes are an internal pair (equal, opposite, on the line through
    #: its two points: zero net wrench), so a coordinate moving both nodes alike takes none of its forces: its
    #: blocks are assembled over the coordinates of the tree path between its nodes only (docs/spring_damper.md
    #: §7, flexmb/engine/pair_scatter.py); two-node families only
    internal_pair: ClassVar[bool] = False
    #: the family keeps internal state in State.elements (newton_update, end_step do something)
    has_state: ClassVar[bool] = False
    #: per-element outputs
    outputs: ClassVar[tuple[Output, ...]] = ()
    #: drawing: the cell kind (ParaView cell_kind name), the keys of its arrays in a drawing (node
    #: indices, except the real-valued ones named in drawing_real_keys; in those named in
    #: drawing_ground_keys -1 is the ground, and a point whose carrier is -1 is fixed)
    cell_kind: ClassVar[str | None] = None
    drawing_keys: ClassVar[tuple[str, ...]] = ()
    drawing_real_keys: ClassVar[tuple[str, ...]] = ()
    drawing_ground_keys: ClassVar[tuple[str, ...]] = ()
    #: a built-in kind's record table on the ModelBuilder (``builder.<builder_table>``, by name), which
    #: :meth:`records` reads; None: the records of ``ModelBuilder.add_element``
    builder_table: ClassVar[str | None] = None

    # ------------------------------------------------------------------ build end
    def records(self, builder: Any) -> Iterable[Any]:
        """The builder's records of this kind, in declaration order: those of its table
        :attr:`builder_table`, or (default) those added by ``ModelBuilder.add_element(self.name, record)``."""
        if self.builder_table is not None:
            return list(getattr(builder, self.builder_table, {}).values())
        return builder.elements.get(self.name, {}).values()

    def compile(self, records: Sequence[Any], nodes: NodeTable) -> ElementData:
        """The family's compiled arrays (read-only: :func:`frozen_arrays`) from its records."""
        raise NotImplementedError(f"element family '{self.name}' does not compile")

    def loop_edges(self, data: ElementData) -> list[tuple[str, str, int, int]]:
        """Elements that join two nodes and may close a loop: (name, description, node a, node
        b) with GROUND allowed (topology.find_loops); default none."""
        return []

    def element_nodes(self, data: ElementData) -> np.ndarray:
        """Node indices (n_el, m) of each element's m nodes, GROUND allowed: the rows and columns
        of its blocks (6 per node) and the nodes its wrenches act on."""
        return np.zeros((data.n, 0), dtype=np.int64)

    def cut_frames(self, model: Model, data: ElementData) -> CutFrames:
        """A ``cut`` family's cuts as rigid-equivalent constraints (:class:`CutFrames`): the frames
        they join and the directions the rigid equivalent holds."""
        raise NotImplementedError(f"element family '{self.name}' is a cut family (cut = True) but offers no cut_frames")

    def cut_defaults(self, model: Model, data: ElementData, start: CutStart) -> ElementData:
        """A ``cut`` family's data with the compiler's choices made from its cuts' start quantities
        (:class:`~flexmb.elements.cut_contract.CutStart`; docs/cut_damping.md): default damping, penalty
        scales, start forces. Default: ``data`` unchanged."""
        return data

    def elastic_rows(self, model: Model, data: ElementData) -> ElasticCutRows | None:
        """An elastic ``cut`` family's held directions with their stiffness, damping and effective
        masses (:class:`~flexmb.elements.cut_contract.ElasticCutRows`: ``flexmb info``'s cut table, the
        energy check's stiff parts); None (the default): the family's cuts have no stiffness of their own."""
        return None

    def equivalent_strains(self, model: Model, data: ElementData, kin: Kinematics) -> np.ndarray | None:
        """A ``cut`` family's equivalent strain per cut at the kinematics ``kin`` (n_el): sqrt(U / U_ref),
        its strain energy against that of a deformation the size of the model, which the relaxed start
        reports (flexmb.solvers.initial); None (the default): no strain of its own."""
        return None

    # ------------------------------------------------------------------ engine
    def prepare(self, model: Model, data: ElementData) -> Any:
        """Constants of the family computed once per Assembler (index maps, patterns); default None."""
        return None

    def evaluate(self, model: Model, data: ElementData, prep: Any, state: State, kin: Kinematics, load_factor: float,
                 Mb: np.ndarray, w: np.ndarray) -> FamilyEvaluation:
        """Add the family's node wrenches, inertial minus applied sense (inertia, minus elastic,
        damping and weight forces), to ``w`` (N + 1, 6; row N is ground, discarded); a
        ``node_mass`` family adds its node mass blocks to ``Mb`` (N, 6, 6) and its velocity terms
        and weight to ``w`` (the assembly adds Mb ζ). Weight and applied loads scale with
        ``load_factor``."""
        raise NotImplementedError(f"element family '{self.name}' has no forces")

    def blocks(self, model: Model, data: ElementData, prep: Any, fe: FamilyEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray | None:
        """ck K + cc C + cm M per element as (n_el, 6m, 6m) blocks over its nodes in node twists
        (global axes, about the node origins): K the stiffness, C the damping, M the mass.
        ``material_only`` drops geometric stiffness that can make K indefinite; ``exact_tangent`` asks for
        the consistent tangent (statics, the relaxed start) instead of the time step's one."""
        return None

    def add_blocks(self, model: Model, data: ElementData, prep: Any, fe: FamilyEvaluation, kin: Kinematics, ck: float,
                   cc: float, cm: float, material_only: bool, exact_tangent: bool, scatter: ElementScatter,
                   out: np.ndarray) -> None:
        """Add B_eᵀ (ck K + cc C + cm M) B_e of every element into the iteration matrix's values
        ``out`` (nnz,), ``scatter`` (flexmb.engine.iteration_matrix.ElementScatter) saying where.
        Default: :meth:`blocks`, then ``scatter.add``. A family may override it with one compiled
        pass that builds each element's block and scatters it at once (element_columns,
        scatter_block: no (n_el, 6m, 6m) temporaries); it must add what the default adds."""
        E = self.blocks(model, data, prep, fe, kin, ck, cc, cm, material_only, exact_tangent)
        if E is not None and len(E):
            scatter.add(kin, E, out)

    def dissipates(self, data: ElementData) -> bool:
        """Whether the elements may dissipate power (FamilyEvaluation.dissipation not identically
        zero): a family whose dampers are all zero says False, so the power of an accepted state
        needs no evaluation of it (flexmb.engine.assembly.LazyEvaluation). Default: True."""
        return True

    def add_mass_forces(self, data: ElementData, prep: Any, fe: FamilyEvaluation, a: np.ndarray, out: np.ndarray) -> None:
        """Add the element masses times the node accelerations ``a`` (N, 6) to ``out`` (N, 6)."""

    def energies(self, model: Model, data: ElementData, fe: FamilyEvaluation, kin: Kinematics) -> tuple[float, float]:
        """(kinetic energy of the element masses, potential energy of the weight) for the energy
        balance of a recorded row (node masses' kinetic energy is the assembly's)."""
        return 0.0, 0.0

    def output(self, model: Model, data: ElementData, fe: FamilyEvaluation | None, name: str) -> np.ndarray:
        """The per-element output ``name`` (one of :attr:`outputs`) at an evaluation: (n_el,
        len(columns)) or (n_el,); ``fe`` is None when the family has no elements."""
        raise NotImplementedError(f"element family '{self.name}' has no output '{name}'")

    # ------------------------------------------------------------------ internal state (augmented Lagrangian)
    def begin_step(self, model: Model, data: ElementData, prep: Any, state: State, ctx: StepContext) -> np.ndarray | None:
        """Before the first Newton iterate of a time step (attempt) of size ``ctx.h``: the internal
        state to start it with (e.g. a penalty chosen from β' = ``ctx.bp``), or None: unchanged."""
        return None

    def start(self, model: Model, data: ElementData, prep: Any, state: State, ctx: StartContext) -> None:
        """Once, before the integrator's initial accelerations: may correct ``state`` in place
        (positions, ``u``, its internal state; e.g. the multipliers that make the initial
        accelerations satisfy a constraint)."""

    def close(self, model: Model, data: ElementData, prep: Any, state: State, ctx: StartContext) -> None:
        """Correct ``state`` in place onto the family's constraints (positions, velocities), e.g. a
        state interpolated between two steps for dense output; default nothing."""

    def between(self, data: ElementData, e0: np.ndarray, e1: np.ndarray, s: float) -> np.ndarray:
        """The family's internal state at the fraction ``s`` in [0, 1] of a step whose ends have
        ``e0`` and ``e1`` (dense output); default ``e1``."""
        return np.array(e1, copy=True)

    def newton_update(self, model: Model, data: ElementData, prep: Any, fe: FamilyEvaluation,
                      state: State) -> tuple[np.ndarray, bool] | tuple[np.ndarray, bool, bool] | None:
        """After each Newton iteration of a time step, at the iterate ``state`` evaluated as ``fe``:
        the family's next internal state (carried into the next iterate's and the accepted
        state's ``elements[name]``) and whether it has settled (a step is accepted only when
        every family has); a third value True says the family's blocks changed (the iteration
        matrix is refactorized). None (default): stateless. An update that depends on the iterate
        (an augmented-Lagrangian λ + αΦ) is best applied by ``evaluate`` at its own iterate and
        returned here (package docstring). May raise SolverError (the step then fails)."""
        return None

    def newton_failure(self, model: Model, data: ElementData, prep: Any, fe: FamilyEvaluation, ev: Any) -> list[str]:
        """Phrases for the message of a time step whose Newton iteration failed at the iterate
        evaluated as ``ev`` (``fe`` the family's part): which elements have not settled and by how
        much, what of the model's state keeps them from it; default none."""
        return []

    def end_step(self, model: Model, data: ElementData, prep: Any, fe: FamilyEvaluation, state: State,
                 ctx: StepContext) -> None:
        """After a converged time step: may correct ``state.u`` and ``state.udot`` in place (e.g.
        mass-orthogonal projections on the constraint manifold), with the tools of ``ctx``."""

    # ------------------------------------------------------------------ presentation
    def drawing(self, model: Model, data: ElementData) -> dict[str, np.ndarray]:
        """The family's arrays of a result's drawing (keys :attr:`drawing_keys`; small int/float
        arrays, stored with every result)."""
        return {}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        """What is wrong with the family's arrays in drawing ``d`` ('' if nothing); ``names``:
        the counts of the result's name fields (e.g. ``element_names``)."""
        return ""

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """Line cells (n_cells, 2) of the family: point indices; nodes are points 0..N-1, the
        family's own :meth:`points` start at ``first_point``."""
        return np.zeros((0, 2), dtype=np.int64)

    def points(self, d: Mapping[str, np.ndarray], x: np.ndarray, R: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Extra points of the drawing at node poses x (N, 3), R (N, 3, 3) and the node that
        carries each (its velocity and axes are the node's; -1: ground, a fixed point): (points
        (n_p, 3), carriers (n_p,))."""
        return np.zeros((0, 3)), np.zeros(0, dtype=np.int64)

    def describe(self, model: Model, data: ElementData, limit: int) -> list[str]:
        """Lines of ``flexmb info`` about the family's elements (a heading, then indented rows)."""
        return []

    def summary(self, model: Model, data: ElementData) -> str:
        """A short count for the first line of ``flexmb info``, e.g. 'bushings: 2'."""
        return f"{self.plural}: {data.n}"

    def node_roles(self, model: Model, data: ElementData) -> dict[int, list[str]]:
        """Per node index, the names of the family's elements on it (for messages and info)."""
        out: dict[int, list[str]] = {}
        nodes = self.element_nodes(data)
        for e, row in enumerate(nodes):
            for i in row:
                if i >= 0:
                    out.setdefault(int(i), []).append(data.names[e])
        return out


class TwoNodeFamily(ElementFamily):
    """An element family whose elements join two nodes, ``data.a`` (GROUND allowed) and ``data.b`` (bushings,
    rigid cuts, spring-dampers, actuators): each element may close a loop, its blocks have the rows of its two
    nodes, and the engine reads its ends with ground as node N. The three methods every such family had alike."""

    def loop_edges(self, data: Any) -> list[tuple[str, str, int, int]]:
        """(name, "<label> '<name>'", node a, node b) per element (topology.find_loops)."""
        return [(n, f"{self.label} '{n}'", int(a), int(b)) for n, a, b in zip(data.names, data.a, data.b)]

    def element_nodes(self, data: Any) -> np.ndarray:
        """(n_el, 2): the nodes a, b of each element."""
        return np.stack([data.a, data.b], axis=1).astype(np.int64)

    def prepare(self, model: Model, data: Any) -> tuple[np.ndarray, np.ndarray]:
        """End node indices with ground as node N (the extra row of the node arrays)."""
        return np.where(data.a == GROUND, model.n_nodes, data.a).astype(np.int64), np.asarray(data.b, dtype=np.int64)


class NodePairDrawing:
    """The drawing of a family whose elements are drawn as a line from node a to node b (bushings, rigid
    cuts, beams): the node indices under its first two :attr:`ElementFamily.drawing_keys`, as many of
    the one as of the other. Put it before ElementFamily in the bases; a family whose data is not
    ``a``, ``b`` (GROUND allowed for a) overrides :meth:`drawing`."""

    drawing_keys: ClassVar[tuple[str, ...]] = ()

    def drawing(self, model: Model, data: Any) -> dict[str, np.ndarray]:
        """One line cell per element, in element order (cell i carries element i's outputs): node a ->
        node b, an element on ground a cell of zero length at node b (``data.a``, ``data.b``)."""
        ka, kb = self.drawing_keys[:2]
        a = np.where(data.a == GROUND, data.b, data.a)
        return {ka: np.asarray(a, dtype=np.int64), kb: np.asarray(data.b, dtype=np.int64)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        """'' if the node indices of ends a and b are two 1-D arrays of one length; what is wrong otherwise."""
        ka, kb = self.drawing_keys[:2]
        if d[ka].ndim != 1 or d[kb].shape != d[ka].shape:
            return f"drawing '{kb}' has shape {d[kb].shape}, expected ({d[ka].size},)"
        return ""

    def lines(self, d: Mapping[str, np.ndarray], first_point: int) -> np.ndarray:
        """Node a -> node b of every element."""
        ka, kb = self.drawing_keys[:2]
        return np.stack([d[ka], d[kb]], axis=1)
