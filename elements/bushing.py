"""Bushing: a 6x6 linear spring–damper between two node frames (an elastic cut joint), the
``"bushing"`` element family.

The bushing frame (point P, axes E, given globally in the assembly configuration) is
attached to node a (offset s_a, axes E_a in a's axes) and to node b (s_b, E_b). In the current
configuration A = R_a E_a at p_a = x_a + R_a s_a and B = R_b E_b at p_b. Deformations:

    delta = A^T (p_b - p_a)                       translations, bushing axes           (1)
    phi   = log(A^T B)                            rotations, all three constrained      (2a)
    phi   = A^T (theta n),  n = (a_k x b_k) / |a_k x b_k|,
            theta = atan2(|a_k x b_k|, a_k . b_k)  rotation about axis k free (revolute) (2b)
    phi   = 0                                     all rotations free (spherical)        (2c)

(2b) is the rotation vector of the smallest rotation that turns axis a_k of A into axis b_k of B:
it vanishes only when the two axes are aligned (theta = 0); at opposite axes |phi| = pi, the
largest tilt (the cross product a_k x b_k alone vanishes there too: a false closure that a
Newton solve of the loops can land on, docs/loops.md §5.2). For small tilts
phi = A^T (a_k x b_k) (1 + theta^2/6 + ...).

Potential V = 1/2 d^T K d with d = (delta, phi); dissipation force C d'. With G = dd/dX the
exact derivative with respect to the node motions X = (x_a, theta_a, x_b, theta_b) (global
virtual rotations), the node wrenches are -G^T (K d + C d') — conservative for any K — and
the tangent used in Newton is G^T K G, G^T C G (material part; the geometric part of a stiff
bushing is negligible and is dropped to keep the iteration matrix positive definite).

Cut force (output ``cut_force``, and ``cut_force_global``): the wrench the bushing exerts on its end
b at the bushing point p_b, from the node wrench -G^T f on b (f = K d + C d', force F and moment M_b
about x_b, global):

    F,   M = M_b - (p_b - x_b) x F        global (``cut_force_global``); A^T F, A^T M in bushing
                                          axes (``cut_force``)                                   (3)

(the wrench on end a is its opposite, moved to p_a). The same output of a rigid cut
(flexmb.elements.rigid_cut) has f = its multipliers.

As an element family (flexmb.elements): two nodes per element (node a may be ground), a loop cut
(``cut``: left out of the rigid-equivalent model of flexmb.analysis.rigid), blocks
ck G^T K G + cc G^T C G over its two nodes, no mass. Its damping C may be chosen by the compiler
(``damping=None`` in ModelBuilder.add_bushing: flexmb.builder.cut_defaults, ``auto_damping``).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements import cut_kernels
from flexmb.elements.cut_contract import ZETA, CutStart, ElasticCutRows, cut_modes
from flexmb.elements.cut_family import DIRECTIONS, CutData, CutFamily, constrained_mask, cut_arrays, place_cut
from flexmb.elements.cut_kernels import BushingArrays, BushingResults
from flexmb.elements.family import FamilyEvaluation, NodeTable, frozen_arrays, listing, ordered_sum

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import BushingSpec
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["BushingData", "BushingEvaluation", "Bushings", "FAMILY", "deformation"]

log = logging.getLogger("flexmb")

FULL, FREE_X, FREE_Y, FREE_Z, SPHERICAL = -1, 0, 1, 2, 3


def deformation(xa, Ra, xb, Rb, sa, Ea, sb, Eb, mode):
    """Deformations d (n,6) by eq. (1)–(2) and their derivative G (n,6,12) of cuts whose ends have
    the poses xa, Ra, xb, Rb (n,3), (n,3,3) (compiled: elements/cut_kernels.py). (2b) is the rotation
    vector of the smallest rotation turning axis a_k into b_k: with w = a_k × b_k, θ = atan2(|w|,
    a_k·b_k), φ = Aᵀ (θ/|w|) w, by its series for small θ, and π times a normal axis where the axes
    are exactly opposite (no tilt direction there)."""
    n = np.shape(xa)[0]
    d, G, A = np.empty((n, 6)), np.empty((n, 6, 12)), np.empty((n, 3, 3))
    def f(a, dtype):  # a writeable copy: one compiled signature whether or not the caller's arrays are
        return np.array(a, dtype=dtype, order="C")  # the model's (read-only) or broadcast views
    cut_kernels.deformations_at(f(xa, dtype=float), f(Ra, dtype=float), f(xb, dtype=float), f(Rb, dtype=float),
                                f(sa, dtype=float), f(Ea, dtype=float), f(sb, dtype=float), f(Eb, dtype=float),
                                f(mode, dtype=np.int64), d, G, A)
    return d, G



@dataclass(frozen=True, eq=False)
class BushingData(CutData):
    """Compiled bushings (``Model.elements["bushing"]``): the frames of :class:`CutData` (the bushing
    point and axes), then:"""

    K: np.ndarray  # stiffness on (translations, rotations), bushing axes               (n_el x 6 x 6)
    C: np.ndarray  # damping on (translations, rotations), bushing axes                 (n_el x 6 x 6)
    auto_damping: np.ndarray  # C chosen by the compiler (damping=None; builder/cut_defaults.py) (n_el)
    m_eff: np.ndarray  # effective mass per direction at the start [kg, kg m^2] (cut_defaults D2; inf: moves nothing) (n_el x 6)
    start_force: np.ndarray  # rigid-equivalent cut force per direction at the start [N, N m] (cut_defaults) (n_el x 6)
    plane: np.ndarray  # planar bushing: the bushing axis along its plane normal, -1: spatial (docs/planar.md (P3)) (n_el)


@dataclass
class BushingEvaluation(FamilyEvaluation):
    """The bushings at one state: deformation derivatives G (n_el, 6, 12), generalized forces
    f = K d + C d' (n_el, 6), the cut axes A (n_el, 3, 3) and end b's pose (for the cut-force outputs,
    eq. (3)); the blocks G^T (ck K + cc C) G are formed from G when the iteration matrix is."""

    G: np.ndarray | None = None
    f: np.ndarray | None = None
    xb: np.ndarray | None = None
    Rb: np.ndarray | None = None
    A: np.ndarray | None = None


class Bushings(CutFamily):
    """The ``"bushing"`` family (module docstring; a :class:`~flexmb.elements.cut_family.CutFamily`)."""

    name = "bushing"
    label = "bushing"
    plural = "bushings"
    builder_table = "bushings"

    def compile(self, records: Sequence[BushingSpec], nodes: NodeTable) -> BushingData:
        """End nodes, attachment offsets and axes in the two node frames, stiffness and damping."""
        n = len(records)
        out = cut_arrays(records, K=np.zeros((n, 6, 6)), C=np.zeros((n, 6, 6)), auto_damping=np.zeros(n, bool),
                         m_eff=np.full((n, 6), np.nan), start_force=np.full((n, 6), np.nan), plane=np.full(n, -1, int))
        for i, s in enumerate(records):
            place_cut(out, i, s, nodes, f"bushing '{s.name}'")
            out["plane"][i] = s.plane
            out["K"][i] = s.stiffness
            if s.damping is None:  # chosen by the compiler once the model exists (builder/cut_defaults.py)
                out["auto_damping"][i] = True
            else:
                out["C"][i] = s.damping
        return BushingData(**frozen_arrays(out))

    def held(self, data: BushingData) -> np.ndarray:
        """The bushings made rigid (``cut_frames``, the cut table, ``describe``): each holds its directions of
        nonzero diagonal stiffness less its free rotation (:func:`~flexmb.elements.cut_family.constrained_mask`)."""
        return constrained_mask(data.mode, np.diagonal(data.K, axis1=1, axis2=2) > 0)

    def cut_defaults(self, model: Model, data: BushingData, start: CutStart) -> BushingData:
        """The default damping (D8), (D6) of the bushings left to the compiler (``auto_damping``) that
        lie on a loop (a bushing on no loop is a plain spring: undamped), and every bushing's effective
        masses (D2) and rigid-equivalent start forces (docs/cut_damping.md)."""
        C = np.array(data.C, dtype=float)
        rows, caps = start.rows, start.caps
        for c in range(data.n):
            if not data.auto_damping[c] or data.names[c] not in start.on_loop:
                continue
            sel = np.flatnonzero(rows[:, 0] == c)
            if not sel.size:
                continue
            dirs = rows[sel, 1]
            cap = np.where(dirs < 3, caps[c, 0], caps[c, 1])
            try:
                with np.errstate(all="ignore"):
                    _, Cc, om = cut_modes(start.W[np.ix_(sel, sel)], data.K[c][np.ix_(dirs, dirs)], cap)
            except (ValueError, np.linalg.LinAlgError):  # non-finite values refused by eigh
                Cc = np.full((dirs.size, dirs.size), np.nan)
            if not np.isfinite(Cc).all():
                raise start.overflow(c, f"its default damping (zeta = {ZETA} on its stiffness {np.diag(data.K[c]).tolist()} "
                                        f"and the masses of its loop, at most {caps[c].tolist()})")
            C[c] = 0.0
            C[c][np.ix_(dirs, dirs)] = Cc
            log.info("bushing '%s': default damping (zeta = %g) on %s, diagonal %s, local modes %s rad/s", data.names[c],
                     ZETA, ", ".join(DIRECTIONS[i] for i in dirs), np.array2string(np.diag(Cc), precision=4),
                     np.array2string(om, precision=4))
        return dataclasses.replace(data, **frozen_arrays(dict(C=C, m_eff=start.m_eff, start_force=start.force)))

    def equivalent_strains(self, model: Model, data: BushingData, kin: Kinematics) -> np.ndarray:
        """sqrt(U / U_ref): U = d·K d / 2 of the deformation d (1), U_ref = k L² / 2 with k the largest
        translational stiffness (the largest of all where none) and L the model's size."""
        N = model.n_nodes
        xe = np.concatenate([kin.x, np.zeros((1, 3))])
        Re = np.concatenate([kin.R, np.eye(3)[None]])
        ia = np.where(data.a < 0, N, data.a)
        d, _ = deformation(xe[ia], Re[ia], xe[data.b], Re[data.b], data.sa, data.Ea, data.sb, data.Eb, data.mode)
        U = 0.5 * np.einsum("ni,nij,nj->n", d, data.K, d)
        kt = np.diagonal(data.K, axis1=1, axis2=2)[:, :3].max(axis=1)
        size = float(np.ptp(model.X0, axis=0).max(initial=0.0)) or 1.0
        Uref = 0.5 * np.where(kt > 0, kt, np.diagonal(data.K, axis1=1, axis2=2).max(axis=1)) * size**2
        return np.sqrt(np.maximum(U, 0.0) / np.maximum(Uref, 1e-300))

    def elastic_rows(self, model: Model, data: BushingData) -> ElasticCutRows:
        """The bushings' held directions (nonzero diagonal stiffness less the free rotation)."""
        k = np.diagonal(data.K, axis1=1, axis2=2)
        return ElasticCutRows(self.label, data.names, self.held(data), k,
                              np.diagonal(data.C, axis1=1, axis2=2), np.asarray(data.m_eff), np.asarray(data.start_force),
                              np.asarray(data.auto_damping, bool))

    def dissipates(self, data: BushingData) -> bool:
        """False where every element's damping matrices C are zero."""
        return bool(np.any(data.C != 0.0))

    def evaluate(self, model: Model, data: BushingData, prep: tuple[np.ndarray, np.ndarray], state: State,
                 kin: Kinematics, load_factor: float, Mb: np.ndarray, w: np.ndarray) -> BushingEvaluation:
        """Bushing forces into the node wrenches (as applied forces), energies and power (compiled:
        elements/cut_kernels.py, bushing_forces, the compiled step's kernel)."""
        ia, ib = prep
        n = data.n
        d, G, A, f, energy, power = (np.empty((n, 6)), np.empty((n, 6, 12)), np.empty((n, 3, 3)), np.empty((n, 6)),
                                     np.empty(n), np.empty(n))
        bushings = BushingArrays(ia, ib, data.sa, data.Ea, data.sb, data.Eb, data.mode, data.K, data.C)
        cut_kernels.bushing_forces(kin.x, kin.R, kin.V, bushings, w, BushingResults(d, G, A, f, energy, power))
        return self.evaluation(model, ia, ib, kin.x, kin.R, G, A, f, energy, power)

    @staticmethod
    def evaluation(model: Model, ia: np.ndarray, ib: np.ndarray, x: np.ndarray, R: np.ndarray, G: np.ndarray,
                   A: np.ndarray, f: np.ndarray, energy: np.ndarray, power: np.ndarray) -> BushingEvaluation:
        """The BushingEvaluation of bushing_forces' outputs at the node poses x, R (ends ia, ib; N = ground)."""
        xe = np.concatenate([x, np.zeros((1, 3))])
        Re = np.concatenate([R, np.eye(3)[None]])
        return BushingEvaluation(strain_energy=float(energy.sum()), dissipation=float(ordered_sum(power)), G=G, f=f, xb=xe[ib],
                                 Rb=Re[ib], A=A)

    def blocks(self, model: Model, data: BushingData, prep: Any, fe: BushingEvaluation, kin: Kinematics, ck: float,
               cc: float, cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """G^T (ck K + cc C) G (no mass; the geometric part is dropped, module docstring)."""
        out = np.empty((data.n, 12, 12))
        cut_kernels.bushing_blocks(fe.G, data.K, data.C, float(ck), float(cc), out)
        return out

    def cut_force(self, fe: BushingEvaluation) -> np.ndarray:
        """f = K d + C d': the cut force of eq. (3) (outputs ``cut_force``, ``cut_force_global``)."""
        return fe.f

    # ------------------------------------------------------------------ presentation (drawing: NodePairDrawing)
    def describe(self, model: Model, data: BushingData, limit: int) -> list[str]:
        """One line per bushing: its ends and the directions it holds (nonzero stiffness less its free
        rotation), and for a planar bushing its plane (docs/planar.md (P3))."""
        held = self.held(data)
        rows = []
        for e, (n, a, b) in enumerate(zip(data.names, data.a, data.b)):
            dirs = ", ".join(DIRECTIONS[i] for i in np.flatnonzero(held[e])) or "nothing"
            planar = f" (planar: normal along bushing {'xyz'[data.plane[e]]})" if data.plane[e] >= 0 else ""
            rows.append(f"  {n}: {'ground' if a < 0 else model.node_names[int(a)]} - {model.node_names[int(b)]}, "
                        f"holds {dirs}{planar}")
        return ["bushings:"] + listing(rows, limit)


#: the registered instance (flexmb.elements.FAMILIES["bushing"])
FAMILY = Bushings()
