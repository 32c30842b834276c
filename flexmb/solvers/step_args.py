"""The compiled element step's arguments in structures numba passes as a single pointer (issue 38: loop models at
their step speed; issue 35: kernels that take named structures, docs/architecture.md P6).

A call from Python into a compiled function unboxes every array of its tuple arguments, about 0.1 µs each: the
element step's model arrays alone (flexmb/solvers/element_kernels.py StepModel: the tree, the families' model
arrays, the scatter plans and the factor's arrays) are some two hundred. :class:`StepArgs` holds such a tuple in a
numba StructRef (``numba.experimental.structref``: a reference-counted structure, boxed as one pointer; unlike a
jitclass it keeps ``cache=True``), built once with :func:`new_step_args` and passed to every call while its arrays
stay the same (:func:`step_args` keeps it); the compiled code reads the tuple back with ``args.step``. The step's
StepModel is held so for every call of element_newton_step (ElementStep.kernel_args: the step-by-step path and
flexmb.solvers.element_run.element_run alike), the step's buffers (StepBuffers) too for the whole-run call, where
they stay the same over its calls. Nothing is copied: the structure refers to the same arrays, so the arithmetic
is the same bit for bit.
"""

from __future__ import annotations

from numba import njit, types
from numba.experimental import structref
from numba.extending import overload

__all__ = ["StepArgs", "StepArgsType", "new_step_args", "step_args"]


@structref.register
class StepArgsType(types.StructRef):
    """numba's type of :class:`StepArgs`: one field ``step``, the tuple it holds (a StepModel, StepBuffers)."""

    def preprocess_fields(self, fields):
        """The fields' types without literal values (a tuple's integers and flags as plain types)."""
        return tuple((name, types.unliteral(typ)) for name, typ in fields)


class StepArgs(structref.StructRefProxy):
    """A tuple of the element step's arguments (a StepModel or StepBuffers) as one compiled structure (module docstring);
    made by :func:`new_step_args`, read in compiled code as ``args.step``."""


structref.define_boxing(StepArgsType, StepArgs)


def _make(step):  # pragma: no cover - typed by its overload only
    """A StepArgs of ``step`` (compiled code only: :func:`new_step_args`)."""
    raise NotImplementedError


@overload(_make)
def _make_overload(step):
    """The compiled constructor of a StepArgs whose field has the type of ``step``."""
    typ = StepArgsType([("step", step)])

    def impl(step):
        s = structref.new(typ)
        s.step = step
        return s
    return impl


@njit(cache=True)
def new_step_args(step) -> StepArgs:
    """A new :class:`StepArgs` holding the tuple ``step`` (its arrays, not copies)."""
    return _make(step)


def step_args(step: tuple, key: tuple, cached: tuple | None) -> tuple:
    """(StepArgs of ``step``, ``key``): ``cached`` = (StepArgs, key) of an earlier call again where every object of
    ``key`` (the arrays and tuples the step may replace between calls) is the same, else a new one."""
    if cached is not None and len(cached[1]) == len(key) and all(a is b for a, b in zip(cached[1], key)):
        return cached
    return new_step_args(step), key
