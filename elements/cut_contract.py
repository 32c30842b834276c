"""The loop-cut families' contract types (issue 35 item 3; elements/__init__.py, "Loop cuts"): the
cuts as rigid-equivalent constraints (:class:`CutFrames`, what ``ElementFamily.cut_frames`` gives) and
what a cut family is told about its cuts at the start to choose its defaults (:class:`CutStart`, what
``ElementFamily.cut_defaults`` receives; docs/cut_damping.md (D0)-(D8)).

The compiler (flexmb.builder.cut_defaults) computes, once for every cut of every cut family
(``ElementFamily.cut``) together, the rigid-equivalent closure Jacobian J of the held rows (D0), the
inverse effective masses W = J_f M̄_ff⁻¹ J_fᵀ (D1), the effective masses (D2), the caps (D8) and the
rigid-equivalent start forces; each family then receives its own rows as a :class:`CutStart` in
``ElementFamily.cut_defaults`` and returns its data with the choices made: bushings their default
damping (D6), rigid cuts their penalty scales (elements/rigid_cut.py (AL7)). The damping ratio
:data:`ZETA` and the modal damping :func:`cut_modes` live here, with the element library, so a cut
family reaches them without importing the builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.linalg as sla

from flexmb.errors import ModelError

if TYPE_CHECKING:  # type hints only: the element library reads the model
    from flexmb.model import Model

__all__ = ["ZETA", "CutFrames", "CutStart", "ElasticCutRows", "cut_modes", "prescribed_path"]

#: damping ratio of the default cut damping
ZETA = 0.5


@dataclass(frozen=True)
class CutFrames:
    """Loop cuts between two node frames as their rigid-equivalent constraints: what a cut family
    (``ElementFamily.cut``) offers through :meth:`ElementFamily.cut_frames`, and what the rigid-equivalent
    model (flexmb.analysis.rigid), the cuts' default damping and penalties (flexmb.builder.cut_defaults)
    and the singular-value monitor read of every cut family at once (:meth:`concatenate`, registry
    order). Node index GROUND (-1) is the ground."""

    names: tuple[str, ...]  # cut names                                                    (n_cut)
    a: np.ndarray  # node a of each cut, GROUND allowed                                       (n_cut)
    b: np.ndarray  # node b of each cut                                                       (n_cut)
    sa: np.ndarray  # cut point in node a's axes [m]                                           (n_cut x 3)
    Ea: np.ndarray  # cut axes in node a's axes (columns)                                      (n_cut x 3 x 3)
    sb: np.ndarray  # cut point in node b's axes [m]                                           (n_cut x 3)
    Eb: np.ndarray  # cut axes in node b's axes (columns)                                      (n_cut x 3 x 3)
    mode: np.ndarray  # free rotation: -1 none, 0/1/2 about cut x/y/z, 3 all                   (n_cut)
    mask: np.ndarray  # held directions (tx, ty, tz, rx, ry, rz) of the rigid equivalent (bool)  (n_cut x 6)
    rigid: np.ndarray  # True for a cut that is rigid in the mechanism itself (bool)           (n_cut)

    @property
    def n(self) -> int:
        """Number of cuts."""
        return len(self.names)

    @staticmethod
    def concatenate(parts: Sequence[CutFrames]) -> CutFrames:
        """The cuts of ``parts`` one after the other (no part: no cuts)."""
        if not parts:
            return CutFrames((), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 3, 3)),
                             np.zeros((0, 3)), np.zeros((0, 3, 3)), np.zeros(0, np.int64), np.zeros((0, 6), bool),
                             np.zeros(0, bool))
        cat = lambda k: np.concatenate([np.asarray(getattr(p, k)) for p in parts])  # noqa: E731
        return CutFrames(tuple(n for p in parts for n in p.names), cat("a"), cat("b"), cat("sa"), cat("Ea"), cat("sb"),
                         cat("Eb"), cat("mode"), cat("mask").astype(bool), cat("rigid").astype(bool))


@dataclass(frozen=True)
class CutStart:
    """One cut family's part of the start quantities (docs/cut_damping.md): its cuts, the held rows
    of its rigid equivalent and what (D0)-(D8) give for them. Row j holds direction ``rows[j, 1]``
    (tx, ty, tz, rx, ry, rz) of the family's cut ``rows[j, 0]``."""

    cuts: CutFrames  # the family's cuts (ElementFamily.cut_frames)                            (n_cut)
    rows: np.ndarray  # (cut, direction) of each held row, cuts numbered within the family      (n_row x 2)
    W: np.ndarray  # J_f M̄_ff⁻¹ J_fᵀ over the family's rows (D1)                               (n_row x n_row)
    Jf: np.ndarray  # the closure Jacobian's rows over the undriven coordinates (D0)           (n_row x n_free)
    closure: np.ndarray  # the rows' closure at the start [m, rad]                              (n_row)
    rate: np.ndarray  # the rows' closure rate J u [m/s, rad/s]                                (n_row)
    acceleration: np.ndarray  # J_d u'_d + J' u: the drives' closure acceleration              (n_row)
    m_eff: np.ndarray  # effective mass per direction (D2), inf where it moves nothing free      (n_cut x 6)
    regular: np.ndarray  # the direction moves an undriven coordinate at the start (bool)       (n_cut x 6)
    force: np.ndarray  # rigid-equivalent start force per direction, nan where it overflows    (n_cut x 6)
    caps: np.ndarray  # (D8) caps of the translational and rotational effective masses         (n_cut x 2)
    on_loop: frozenset[str]  # names of the elements that lie on a loop of the model
    overflow: Callable[[int, str], ModelError]  # the error for cut c of the family whose quantity overflows


@dataclass(frozen=True)
class ElasticCutRows:
    """An elastic cut family's held directions with their stiffness, as ``flexmb info``'s cut table
    (flexmb.app.cut_table) and the energy check's stiff parts (flexmb.solvers.energy_check) read them
    (``ElementFamily.elastic_rows``; docs/cut_damping.md (D2))."""

    label: str  # what one cut of the family is called in messages ("bushing")
    names: tuple[str, ...]  # cut names                                                        (n_cut)
    held: np.ndarray  # held directions with stiffness, less the free rotations (bool)            (n_cut x 6)
    k: np.ndarray  # diagonal stiffness per direction [N/m, N m/rad]                             (n_cut x 6)
    c: np.ndarray  # diagonal damping per direction [N s/m, N m s/rad]                           (n_cut x 6)
    m_eff: np.ndarray  # effective mass per direction at the start (D2), inf: moves nothing       (n_cut x 6)
    start_force: np.ndarray  # rigid-equivalent force per direction at the start, nan: unknown   (n_cut x 6)
    auto_damping: np.ndarray  # the damping was chosen by the compiler (bool)                    (n_cut)


def cut_modes(W: np.ndarray, K: np.ndarray, cap: np.ndarray, zeta: float = ZETA) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(D8), (D6) for one cut's active rows: the capped mass M_c, the damping C_c and the local
    mode frequencies Ω (rad/s) from its block W (n, n) of (D1), stiffness K (n, n) and caps (n,)."""
    s = np.sqrt(cap)
    w, V = np.linalg.eigh(s[:, None] * W * s[None, :])
    inv = np.where(w > 1.0, 1.0 / np.maximum(w, 1e-300), 1.0)
    Mc = s[:, None] * (V * inv) @ V.T * s[None, :]
    Mc = 0.5 * (Mc + Mc.T)
    lam, Phi = sla.eigh(0.5 * (K + K.T), Mc)
    om = np.sqrt(np.maximum(lam, 0.0))
    C = 2 * zeta * Mc @ Phi @ np.diag(om) @ Phi.T @ Mc
    return Mc, 0.5 * (C + C.T), om


def prescribed_path(model: Model, a: int, b: int) -> list[str] | None:
    """The joints of the tree path between nodes ``a`` (-1: ground) and ``b`` when none of them has a
    free coordinate (all fixed or driven: a cut between a and b closes a loop that nothing can move),
    else None."""
    eon = model.tree.edge_of_node
    path = set(model.tree.ancestors(int(eon[b]))) ^ (set() if a < 0 else set(model.tree.ancestors(int(eon[a]))))
    driven = set(model.driven.tolist())
    for k in path:
        u0 = int(model.joint_u_start[k])
        if any(u not in driven for u in range(u0, u0 + model.joint_kinds[k].n_u)):
            return None
    return [model.joint_names[k] for k in sorted(path)]
