"""Joint kinds and their coordinate layout.

A joint's relative motion is a sequence of *components* applied from the parent side:
translations ``T`` along axes fixed in the parent, then rotations ``R`` about axes carried
by the previous components, then at most one ``B`` (ball: a rotation on SO(3) with three
velocity coordinates, the child's body angular velocity relative to the parent).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["JOINT_KINDS", "JointKind"]


@dataclass(frozen=True)
class JointKind:
    """Coordinate layout of a joint kind.

    ``components`` lists ``("T", i)`` / ``("R", i)`` with ``i`` the index of the user axis,
    or ``("B", None)`` for a ball (3 velocity coordinates). ``n_axes`` is the number of
    axes the user gives.
    """

    name: str
    components: tuple[tuple[str, int | None], ...]
    n_axes: int

    @property
    def n_u(self) -> int:
        """Number of velocity coordinates."""
        return sum(3 if c == "B" else 1 for c, _ in self.components)

    @property
    def n_scalar(self) -> int:
        """Number of scalar (vector-space) coordinates."""
        return sum(1 for c, _ in self.components if c != "B")

    @property
    def has_ball(self) -> bool:
        """Whether the kind has a ball (three rotation coordinates on SO(3))."""
        return any(c == "B" for c, _ in self.components)


JOINT_KINDS: dict[str, JointKind] = {
    "fixed": JointKind("fixed", (), 0),
    "revolute": JointKind("revolute", (("R", 0),), 1),
    "prismatic": JointKind("prismatic", (("T", 0),), 1),
    "cylindrical": JointKind("cylindrical", (("T", 0), ("R", 0)), 1),
    "universal": JointKind("universal", (("R", 0), ("R", 1)), 2),
    "spherical": JointKind("spherical", (("B", None),), 0),
    "free": JointKind("free", (("T", 0), ("T", 1), ("T", 2), ("B", None)), 0),
}
