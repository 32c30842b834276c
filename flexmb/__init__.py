"""flexmb: sparse finite-element flexible multibody dynamics."""

from .errors import BackendError, FlexmbError, LoopError, ModelError, SolverError
from .model import Model, ModelBuilder
from .state import State

__all__ = ["BackendError", "FlexmbError", "LoopError", "Model", "ModelBuilder", "ModelError", "SolverError", "State"]
__version__ = "0.1.0"
