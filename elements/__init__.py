"""flexmb's element library: one home per element kind (an *element family*), each vectorised
over all elements of its kind (arrays shaped ``(n_el, ...)``), all behind one interface that the
compiler, the assembly, the iteration matrix, the recorder, the drawing and ``flexmb info``
loop over. Installed as ``flexmb.elements``.

The registry
------------
:data:`FAMILIES` maps a family's ``name`` to its :class:`~flexmb.elements.family.ElementFamily`
instance, in evaluation order: ``body`` (rigid bodies and particles, node masses),
``particle_body`` (data only), ``bushing``, ``beam``, ``rigid_cut``, ``spring_damper``,
``actuator``, ``coupling``, ``rotational_spring_damper``, ``motion_load``. The order is the order in which forces are
summed into the node wrenches, energies into the balance and blocks into the iteration matrix,
so it is fixed (results are reproducible bit for bit); :func:`register` appends a new family.

The interface (elements/family.py; every method has a do-nothing default)
---------------------------------------------------------------------------------
Build end (flexmb/builder/compile.py)::

    records(builder) -> Sequence[record]         the builder's records of the kind (a built-in kind names its
                                                 builder table in ``builder_table``)
    compile(records, nodes: NodeTable) -> Data   one frozen dataclass of read-only arrays, a subclass of
                                                 ElementData (``names`` + one documented field per array,
                                                 meaning and shape), stored in Model.elements[name]
    loop_edges(data) -> [(name, text, a, b)]     elements joining two nodes (loop finding)
    element_nodes(data) -> (n_el, m) int         each element's m nodes (-1: ground)

A family whose elements join two nodes ``data.a`` (ground allowed) and ``data.b`` derives from
``TwoNodeFamily`` (elements/family.py), which gives these two and ``prepare`` (the ends with ground as
node N); one that draws a line between two points (spring-dampers, actuators) also takes
``PointPairDrawing`` (elements/spring_damper.py), its ``drawing_prefix`` naming its cell kind and keys,
and one drawn as a line from node a to node b (bushings, rigid cuts, beams) ``NodePairDrawing``
(elements/family.py); a loop cut between two node frames (bushings, rigid cuts) subclasses ``CutFamily``
(elements/cut_family.py), which takes both and declares the cut, its blocks and its cut-force outputs. The
arrays such families share are base classes of their data: ``PointPairData`` (``a``, ``b``, ``sa``, ``sb``;
compiled by ``point_pair_arrays``) and ``CutData`` (elements/cut_family.py: ``a``, ``b``, the cut frame
``sa``, ``Ea``, ``sb``, ``Eb``, ``mode``; compiled by ``cut_arrays``, ``place_cut``).

Engine (flexmb/engine/assembly.py, iteration_matrix.py), with ``model: Model`` and the kinematics
``kin`` (node poses x, R, twists V, velocity-product accelerations ζ at one state)::

    prepare(model, data) -> prep                  constants, once per Assembler
    evaluate(model, data, prep, state, kin, load_factor, Mb, w) -> FamilyEvaluation
        adds the family's node wrenches to w (N + 1, 6; row N = ground, discarded) in the sense of
        the residual: inertia minus applied (elastic, damping, weight, cut) forces; returns its
        strain energy and dissipated power (summed into the energy balance) and what its blocks
        and outputs need later. Must be vectorised or compiled over the elements: it runs at every
        Newton iteration, with no Python loop per element.
    blocks(model, data, prep, fe, kin, ck, cc, cm, material_only, exact_tangent) -> (n_el, 6m, 6m)
        ck K + cc C + cm M per element over its m nodes in node twists (v, w; global axes, about
        the node origins), rows and columns 6 per node in the order of element_nodes. The
        iteration matrix scatters Bₑᵀ Eₑ Bₑ into S = M̄ + γ'C̄ + β'K̄ (ck = β', cc = γ', cm = 1);
        statics asks for ck = 1, cc = cm = 0, M̄ for ck = cc = 0, cm = 1.
    add_blocks(model, data, prep, fe, kin, ck, cc, cm, material_only, exact_tangent, scatter, out)
        adds Bₑᵀ (ck K + cc C + cm M) Bₑ into the iteration matrix's values out (nnz,) (what the
        assembly calls; ``scatter``: engine/iteration_matrix.py ElementScatter). Default: blocks,
        then scatter.add; the beam overrides it with one compiled pass (no (n_el, 12, 12) arrays).
    add_mass_forces(data, prep, fe, a, out)       element masses times node accelerations a (N, 6)
    energies(model, data, fe, kin) -> (T, V)      kinetic energy of element masses, weight potential
    dissipates(data) -> bool                      whether its dissipated power may be nonzero (default
                                                  True; False lets an accepted state's work go without
                                                  evaluating it: engine/assembly.py LazyEvaluation)

Internal pairs (``internal_pair = True``, two-node families whose loads on their nodes are equal,
opposite and on one line: spring-dampers): the assembly takes their blocks over the coordinates of
the tree path between the two nodes only (docs/spring_damper.md §7, (S14)-(S16); a coordinate moving
both nodes takes none of their forces), and where every such element crosses one joint the O(n) tree
factor takes them in its pivot blocks (S17).

One-node variant (``node_mass = True``, the ``body`` family): evaluate adds the family's 6×6 node
mass blocks to ``Mb`` (N, 6, 6) and its velocity terms minus weight to ``w``; the assembly adds
Mb ζ once for all of them, and M̄ takes their part from the composite-rigid-body pairs
(engine/iteration_matrix.py), so such a family gives no blocks. ``forces = False`` marks a
family of data only (``particle_body``: its particles are bodies).

Outputs (flexmb/solvers/simulate.py, flexmb/results/drawing.py)::

    outputs: tuple[Output, ...]                   name, columns, doc; ``field``: the Result field the
                                                  recorder writes it to on every output row
                                                  ((nt, n_el, n_col) or (nt, n_el)), ``names_field``
                                                  the Result field naming its rows; None: on demand
    output(model, data, fe, name) -> array        computed on recorded rows only (or on demand,
                                                  Assembler.element_output), not every iteration

A recorded output with columns is also ParaView cell data on the family's cells.

Internal state (``has_state = True``; flexmb/state.py, flexmb/solvers/generalized_alpha.py)::

    ElementData.initial_state() -> (n_el, k) | None   kept in State.elements[name], copied with the state
    newton_update(model, data, prep, fe, state) -> (next state, settled)
        after every Newton iteration, at the iterate; the next state is carried into the next
        iterate and the accepted state; a step is accepted only when every family has settled
    end_step(model, data, prep, fe, state, ctx: StepContext)
        after a converged step: may correct state.u, state.udot in place with ctx.solve (S⁻¹ with
        the integrator's factorization), ctx.project (Bᵀ), ctx.twists (B)

Only the time integrator calls the two hooks; statics, the relaxed start and the rigid analysis
evaluate the family with the internal state of the State they are given (a State made without
it, e.g. from a result row, has none: evaluate should then start from ``initial_state``).

Presentation (drawing, ``flexmb info``, messages)::

    cell_kind, drawing_keys, drawing_real_keys, drawing_ground_keys, drawing(model, data),
    check_drawing(d, n_nodes, names), lines(d, first_point), points(d, x, R), describe(model, data,
    limit), summary(model, data), node_roles(model, data)

Adding a kind
-------------
Write one module: a subclass of ElementData for the arrays, a subclass of ElementFamily with the
methods the kind has, and ``register(MyFamily())``. Its records come from
``ModelBuilder.add_element(name, record)`` (any frozen dataclass with a ``name``; the family's
``records`` reads them back), or from a builder method of its own. No engine file changes:
tests/test_element_extension.py adds a point-to-point spring–damper this way, in the tests only.

Loop cuts (issue 12)
--------------------
* The cut contract (issue 35): a family that cuts loops between two node frames sets ``cut = True``
  and implements ``cut_frames(model, data)`` -> :class:`~flexmb.elements.family.CutFrames` (the frames
  it joins and the directions its rigid equivalent holds). The rigid-equivalent model
  (flexmb.analysis.rigid: ``model_cuts``, ``has_cuts``), the singular-value monitor and ``flexmb info``
  read every cut family through it, in registry order, naming none: tests/test_cut_extension.py
  registers a test-only cut kind that way. A cut between two node frames whose data is a ``CutData``
  subclasses ``CutFamily`` (elements/cut_family.py: the cut, its blocks, the cut-force outputs, the
  drawing), says in ``held(data)`` what its rigid equivalent holds and in ``cut_force(fe)`` which force
  is its cut force, and gets ``cut_frames`` and the outputs from it (bushings, rigid cuts).
* ``rigid_cut`` (elements/rigid_cut.py): the rigid-limit cut by augmented Lagrangian (index 3, Bayo
  & Ledesma), a two-node family with internal state (λ, the penalty factor, the Newton phase):
  ``evaluate`` applies the multiplier update λ' = λ + αΦ at its own iterate and adds Φ_qᵀ(λ' + αΦ);
  ``blocks`` gives ck α GᵀG, so S stays M̄ + γ'C̄ + β'(K̄ + α Φ_qᵀΦ_q); ``begin_step`` chooses α for
  the step, ``newton_update`` carries λ' and settles on the closure tolerance, ``end_step``
  projects velocities and accelerations with the step's factor, ``start`` closes the cuts and sets
  the multipliers of the initial accelerations. (Updating λ with Φ of the iterate *before* its
  Newton correction instead makes the iteration circle with period six and never settle.)
* Cut forces as outputs: bushings and rigid cuts declare the same ``CUT_OUTPUTS``
  (elements/cut_family.py, eq. (3) of elements/bushing.py: ``cut_force`` in cut axes and
  ``cut_force_global``, field ``cut_forces`` / ``cut_forces_global``, names ``cut_names``); families
  sharing a field fill it one after the other (:func:`recorded_fields`), the ParaView cell arrays sit
  on each family's own cells.

Force elements (issue 34)
------------------------
* ``spring_damper`` (elements/spring_damper.py, docs/spring_damper.md): the point-to-point
  spring-damper-actuator between a point of a node (or of ground) and a point of another node, a
  two-node family without state; its kernels (elements/spring_damper_kernels.py) are those of the
  compiled Newton steps too. Output ``length_rate_force`` into Result.spring_dampers.
* ``actuator`` (elements/actuator.py, docs/actuator.md): the prescribed-length linear actuator, the
  scalar constraint |p_b - p_a| = L(t) held by the rigid cuts' augmented Lagrangian (internal state,
  projections onto L'(t), L''(t), Gauss's start); its power is drive work (FamilyEvaluation.drive_power).
  Output ``length_rate_force`` into Result.spring_dampers after the spring-dampers' rows
  (Result.actuator). A force actuator (ModelBuilder.add_actuator(..., force=f)) is a spring-damper with
  a force law.
* ``coupling`` (elements/coupling.py, docs/coupling.md): q_b = r q_a + c0 between two joint
  coordinates (gears, belts, rack and pinion), elastic or rigid (augmented Lagrangian with state); its
  forces act on the coordinates through rows of the joints' relative twists, so it is a four-node
  family like any other. Output ``gap_rate_force`` into Result.couplings.
* ``rotational_spring_damper`` (elements/rotational_spring_damper.py, docs/rotational_spring_damper.md): a
  torsion spring-damper about an axis carried by node a, or an isotropic one on the relative rotation
  vector, between two arbitrary nodes (node a may be ground); pure moments, a two-node family without
  state whose kernels (elements/rotational_spring_damper_kernels.py) the compiled Newton steps call too.
  Output ``angle_rate_torque`` into Result.spring_dampers after the spring-dampers' and actuators' rows.
* ``motion_load`` (elements/motion_load.py, docs/motion_forces.md §7): node loads of the motion
  f(t, x, R, v, w) (ModelBuilder.add_load with such a function), one node each; the symmetric part of
  their tangent as blocks, their power load work (FamilyEvaluation.load_power). Evaluated in Python:
  a model with them takes the Python Newton loop. Output ``wrench`` on demand.

What comes next fits this interface (no engine change)
------------------------------------------------------
* Issue 14, one compiled call per Newton iteration: each family's evaluate and blocks are
  already one compiled or vectorised pass over its arrays (ElementData) into shared buffers
  (w, Mb, the blocks), which a fused kernel can call in sequence.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flexmb.elements import (
    actuator,
    beam,
    bushing,
    coupling,
    loads,
    motion_load,
    particle_body,
    particles,
    rigid_body,
    rigid_cut,
    rotational_spring_damper,
    spring_damper,
)
from flexmb.elements.cut_contract import ElasticCutRows
from flexmb.elements.family import ElementData, ElementFamily, FamilyEvaluation, NodeTable, Output, StartContext, StepContext
from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only: the model stands above the element library
    from flexmb.model import Model

__all__ = ["FAMILIES", "register", "unregister", "has_element_forces", "elastic_cut_rows", "recorded_fields", "ElementData",
           "ElementFamily",
           "FamilyEvaluation", "NodeTable", "Output", "StartContext", "StepContext", "beam", "bushing", "loads",
           "particle_body", "particles", "rigid_body", "rigid_cut", "spring_damper", "actuator", "coupling",
           "rotational_spring_damper", "motion_load"]

#: the element families by name, in evaluation order (module docstring)
FAMILIES: dict[str, ElementFamily] = {}


def register(family: ElementFamily) -> ElementFamily:
    """Add ``family`` to :data:`FAMILIES` (after the ones there); models compiled from now on
    carry its arrays. Refuses a family without a name or with a name already registered."""
    if not isinstance(family, ElementFamily) or not family.name or not family.name.isidentifier():
        raise ModelError(f"register: {family!r} is not an ElementFamily instance with a name (an identifier).")
    if family.name in FAMILIES:
        raise ModelError(f"register: an element family '{family.name}' is registered already.")
    FAMILIES[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove the family ``name`` from :data:`FAMILIES` (models compiled with it keep working
    only while it stays registered)."""
    if name not in FAMILIES:
        raise ModelError(f"unregister: no element family '{name}' is registered; known: {list(FAMILIES)}.")
    del FAMILIES[name]


def has_element_forces(model: Model) -> bool:
    """Whether ``model`` has elements with forces between nodes (a family with forces that is not a
    node-mass family, e.g. bushings or beams): their stiffness makes statics and the relaxed start
    use the assembled element tangent."""
    return any(FAMILIES[name].forces and not FAMILIES[name].node_mass and data.n
               for name, data in model.elements.items() if name in FAMILIES)


def elastic_cut_rows(model: Model) -> list[ElasticCutRows]:
    """The elastic rows of every cut family of ``model`` that has them (ElementFamily.elastic_rows:
    held directions, stiffness, damping, effective masses), in registry order."""
    out = []
    for name, data in model.elements.items():
        fam = FAMILIES.get(name)
        if fam is not None and fam.cut and data.n and (rows := fam.elastic_rows(model, data)) is not None:
            out.append(rows)
    return out


def recorded_fields(model: Model) -> dict[str, list[tuple[str, Output]]]:
    """The Result fields the families of ``model`` record (ElementFamily.outputs with a ``field``),
    each with its (family name, Output) in FAMILIES order: families sharing a field (the cut
    forces of bushings and rigid cuts) fill it one after the other, their elements' rows
    concatenated, named by the concatenated ``names_field``."""
    out: dict[str, list[tuple[str, Output]]] = {}
    for name, fam in FAMILIES.items():
        if name in model.elements:
            for o in fam.outputs:
                if o.field:
                    out.setdefault(o.field, []).append((name, o))
    return out


for _family in (rigid_body.FAMILY, particle_body.FAMILY, bushing.FAMILY, beam.FAMILY, rigid_cut.FAMILY, spring_damper.FAMILY,
                actuator.FAMILY, coupling.FAMILY, rotational_spring_damper.FAMILY, motion_load.FAMILY):
    register(_family)
