"""flexmb's element library: one module per element kind, each a set of kernels vectorised
over all elements of that kind (arrays shaped ``(n_elements, ...)``)."""

from . import loads, particles, rigid_body

__all__ = ["loads", "particles", "rigid_body"]
