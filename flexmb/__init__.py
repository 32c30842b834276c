"""flexmb: sparse finite-element flexible multibody dynamics."""

from .errors import BackendError, FlexmbError, LoopError, ModelError, SolverError
from .model import BeamSection, Model, ModelBuilder
from .state import State

__all__ = [
    "BackendError", "BeamSection", "FlexmbError", "LoopError", "Model", "ModelBuilder", "ModelError", "SolverError", "State",
]
__version__ = "0.1.0"
