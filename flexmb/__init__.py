"""flexmb: sparse finite-element flexible multibody dynamics."""

from .errors import BackendError, FlexmbError, LoopError, ModelError, ResultFileError, SolverError
from .model import BeamSection, Model, ModelBuilder
from .result import Result, load
from .state import State

__all__ = [
    "BackendError", "BeamSection", "FlexmbError", "LoopError", "Model", "ModelBuilder", "ModelError", "Result",
    "ResultFileError", "SolverError", "State", "load",
]
__version__ = "0.1.0"
