"""flexmb: sparse finite-element flexible multibody dynamics.

The public face: build a model (:class:`ModelBuilder` -> immutable :class:`Model`), run it
(:func:`simulate`, :func:`sweep`), read results (:func:`load` -> :class:`Result`), describe a
model (:func:`describe`). The folders under flexmb/ show the pipeline: builder/ (input and
compiler), engine/ (kinematics, assembly, iteration matrix, CHOLMOD), solvers/ (time
integration, statics, modal), analysis/ (rigid-equivalent loops, monitors), results/ (result
files, ParaView, plots), app/ (case files, the run pipeline, sweeps, the CLI) and importers/
(robot descriptions: :func:`from_urdf`).
"""

# before anything: numba caches compiled from other sources are deleted before a kernel is loaded (kernel_sources.py)
from flexmb import kernel_sources as _kernel_sources  # noqa: F401  isort: skip
# first: the OpenMP wait policy is read when CHOLMOD loads libgomp (flexmb/engine/parallel.py)
from flexmb.engine import parallel as _parallel  # noqa: F401  isort: skip
# second: before any kernel is loaded from numba's cache, load them without their LLVM IR (engine/jit_cache.py)
from flexmb.engine import jit_cache as _jit_cache  # noqa: F401  isort: skip
from flexmb.app.describe import describe
from flexmb.app.study import sweep
from flexmb.builder.flexible import make_flexible
from flexmb.builder.model_builder import ModelBuilder
from flexmb.builder.records import BeamSection
from flexmb.builder.shapes import add_beam_shapes, add_visual
from flexmb.errors import BackendError, FlexmbError, LoopError, ModelError, ResultFileError, SolverError, URDFError
from flexmb.importers.urdf import from_urdf
from flexmb.model import Model
from flexmb.results.load import load
from flexmb.results.result import Result
from flexmb.solvers.simulate import simulate
from flexmb.state import State
from flexmb.version import __version__

__all__ = [
    "BackendError", "BeamSection", "FlexmbError", "LoopError", "Model", "ModelBuilder", "ModelError", "Result",
    "ResultFileError", "SolverError", "State", "URDFError", "__version__", "add_beam_shapes", "add_visual", "describe",
    "from_urdf", "load",
    "make_flexible", "simulate", "sweep",
]
