"""The base type of the element families' compiled arrays, :class:`ElementData`: what the
:class:`~flexmb.model.Model` holds of every family (``Model.elements[family.name]``).

It stands below the model and the element library alike (docs/architecture.md, the layers): the
model holds ElementData without knowing any family, and the families (flexmb.elements, re-exported
by flexmb.elements.family) subclass it; so the model imports nothing of the element library, whose
families read the model, its state and the engine's kinematics.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ElementData"]


@dataclass(frozen=True, eq=False)
class ElementData:
    """Base of a family's compiled arrays (one frozen dataclass per family, stored in
    ``Model.elements[family.name]``); every field is documented in its subclass with meaning and
    shape, ``n_el`` being the number of elements of the family."""

    names: tuple[str, ...]  # element names                                               (n_el)

    @property
    def n(self) -> int:
        """Number of elements of the family."""
        return len(self.names)

    def initial_state(self) -> np.ndarray | None:
        """Per-element internal state at t = 0, kept in ``State.elements[family]`` (e.g. the
        multipliers of an augmented-Lagrangian cut), or None: the family is stateless."""
        return None
