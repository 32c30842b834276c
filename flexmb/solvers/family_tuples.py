"""The compiled element step's families by name (issue 35: kernel data in named structures; docs/architecture.md P6).

flexmb/solvers/element_step.py hands its kernels the element families' model arrays as one :class:`Families` and
their per-step outputs as one :class:`FamilyOutputs`; a kernel reads ``fams.rigid_cut``, ``outs.spring_damper``, not
a position. Both are named tuples of the same tuples as before, in the same order (numba types a named tuple as a
tuple with names: a field read is the same static item read, so the arithmetic is the same bit for bit). Inside a
family the tuples stay positional where a family has no named tuple of its own (a named tuple typed from Python
costs numba about 0.12 µs per array per call, a plain tuple of arrays is typed in C): their indices are named
beside the family's kernels (element_families.py CUT_CST, COUPLING_FLAGS, ...; law_step.py SPRING_FLAGS, ...).
This module imports nothing of flexmb, so the Python side and every kernel module may import it.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Families", "FamilyOutputs", "IA"]

IA = 0
"""The first array of a family's positional model arrays: the elements' end-a nodes, whose size is the number of
elements (``fams.rigid_cut[IA].size``); the beams' (BeamArrays) and actuators' (ActuatorArrays) are named."""


class Families(NamedTuple):
    """The element families' model arrays of the compiled step (ElementStep.fams), made once per model."""

    beam: tuple  # BeamArrays (elements/beam/kernel_data.py)
    bushing: tuple  # the fields of BushingArrays (elements/cut_kernels.py): ia, ib, sa, Ea, sb, Eb, mode, K, C
    rigid_cut: tuple  # the fields of RigidCutArrays (elements/rigid_cut_kernels.py)
    spring_damper: tuple  # law_step.spring_arrays: SpringDamperArrays' fields, the force laws' addresses, elements, time
    coupling: tuple  # element_families.coupling_arrays
    actuator: tuple  # ActuatorArrays (flexmb/solvers/actuator_step.py)
    rotational: tuple  # element_families.rotational_arrays (rotational spring-dampers)
    motion_load: tuple  # motion_load_step.node_load_inputs (loads of the motion)


class FamilyOutputs(NamedTuple):
    """The families' outputs of a step's iterates (element_families.family_outputs; new per step, ElementStep.begin):
    the fields of :class:`Families` but the loads of the motion (they write only the node wrenches)."""

    beam: tuple  # BeamResults (elements/beam/kernel_data.py)
    bushing: tuple  # the fields of BushingResults (elements/cut_kernels.py): d, G, A, f, energy, power
    rigid_cut: tuple  # element_families.cut_outputs
    spring_damper: tuple  # law_step.spring_outputs
    coupling: tuple  # element_families.coupling_outputs
    actuator: tuple  # ActuatorOutputs (flexmb/solvers/actuator_step.py)
    rotational: tuple  # element_families.rotational_outputs
