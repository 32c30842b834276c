"""Two-node co-rotational 3-D beam (Crisfield 1990; Battini & Pacoste 2002): the ``"beam"``
element family.

Reference: length L0, section frame E0 (e1 along the axis, e2, e3 the section's principal
axes) held by each node i through the constant offset C_i = R_i0^T E0, so the current nodal
section frames are T_i = R_i C_i. Co-rotated frame R_r = [r1 r2 r3]:

    r1 = (x2 - x1) / l,   q = (T1 e2 + T2 e2) / 2,   r3 = r1 x q / |r1 x q|,   r2 = r3 x r1    (1)

Local deformations p_l = (u, th1, th2): u = l - L0, th_i = log(R_r^T T_i)                    (2)

Their variations with respect to the node motions (dx_i, dw_i; dw a global spin):

    du = r1 . (dx2 - dx1)
    dw_r (local) = [ (q1/q2) a2 + r3.dq / q2,  -r3.(dx2-dx1)/l,  r2.(dx2-dx1)/l ]            (3)
        with a2 = -r3.(dx2-dx1)/l, q_k = r_k . q, dq = (dw1 x T1e2 + dw2 x T2e2)/2
    dth_i = J_l^-1(th_i) R_r^T (dw_i - dw_r)                                                  (4)

collected in p_l' = Bl v (Bl: 7x12). Strain energy U = 1/2 p_l^T K_l p_l with the small-strain
Euler–Bernoulli or Timoshenko stiffness K_l (axial EA/L0, torsion GJ/L0, bending
EI/(L0(1+Φ)) [[4+Φ, 2-Φ], [2-Φ, 4+Φ]] with Φ = 12 EI / (κ G A L0²), Φ = 0 for Euler–
Bernoulli). Internal nodal forces f = Bl^T K_l p_l (exact gradient: conservative and
objective, a rigid motion leaves p_l unchanged). Damping on the deformational velocities:
f_d = Bl^T (α K_l) Bl v (stiffness-proportional, Zahariev eq. 13).

Mass (co-rotated consistent mass): the kinetic energy is that of the small-displacement
element seen from the co-rotated frame,

    T = 1/2 v_l^T M_l v_l,   v_l = R~^T v,   R~ = diag(R_r, R_r, R_r, R_r)                     (5)

with M_l the 12x12 consistent mass of cubic (Hermite) bending, linear axial and torsional
interpolation, Rayleigh rotary inertia included (Przemieniecki 1968, §11). It is exact for rigid
motions and gives the O(h^4) convergence of bending frequencies. With M = R~ M_l R~^T, the
co-rotated frame's spin W = R_r W_r v (W_r from (3)) and the spatial angular velocities of the
nodes, the Lagrange equations on SO(3) (Hamel term for spatial angular velocities) give the
inertia node forces

    f_in = M a + [W]x~ p - M [W]x~ v - (R_r W_r)^T sum_k p_k x v_k - (0, w1 x p_th1, 0, w2 x p_th2)   (6)

with p = M v and k over the four 3-blocks of v; v^T f_in = dT/dt exactly. Gravity acts on the
Hermite-interpolated centre of mass

    V_g = -m g . (x_mid + R_r d_l),   d_l = L0/12 (0, th1z - th2z, -(th1y - th2y))              (7)

and its node forces are the exact gradient (consistent load: m g/2 and the end moments
m g L0/12 of a straight element), so a freely falling element stays undeformed.

The code: :mod:`~flexmb.elements.beam.kernels` (compiled, the time step's hot path: eq. 1–7 in
one pass, the element matrices), :mod:`~flexmb.elements.beam.exact` (numpy the runtime needs:
local K_l and M_l, deformations, the exact tangent of statics, section forces) and
:mod:`~flexmb.elements.beam.reference` (test oracles, never imported by flexmb). As an element
family (flexmb.elements): two nodes per element, blocks ck K + cc C + cm M with K the material
plus string stiffness in time steps (the consistent tangent with ``exact``), element masses,
outputs: section forces and strain energy per element.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flexmb.elements.beam import exact, kernels
from flexmb.elements.beam.kernel_data import (
    BeamArrays,
    BeamResults,
    MatrixWeights,
    NodeMotion,
    beam_arrays,
    beam_results,
    scatter_maps,
)
from flexmb.elements.family import (
    ElementData,
    ElementFamily,
    FamilyEvaluation,
    NodePairDrawing,
    NodeTable,
    Output,
    frozen_arrays,
    listing,
    ordered_sum,
    origin_potential,
)
from flexmb.engine import parallel

if TYPE_CHECKING:  # type hints only
    from flexmb.builder.records import BeamSpec
    from flexmb.engine.iteration_matrix import ElementScatter
    from flexmb.engine.kinematics import Kinematics
    from flexmb.model import Model
    from flexmb.state import State

__all__ = ["BeamData", "BeamEvaluation", "Beams", "FAMILY", "SECTION_FORCES", "exact", "kernels"]

#: the columns of the section-force output (element co-rotated axes)
SECTION_FORCES = ("axial_force", "shear_force_y", "shear_force_z", "torque", "bending_moment_y", "bending_moment_z")


@dataclass(frozen=True, eq=False)
class BeamData(ElementData):
    """Compiled beam elements (``Model.elements["beam"]``); names '<link>.e<i>' in a flexible link."""

    link: tuple[str, ...]  # flexible link of each element                                 (n_el)
    a: np.ndarray  # node index of end 1                                                   (n_el)
    b: np.ndarray  # node index of end 2                                                   (n_el)
    C1: np.ndarray  # section frame E0 in node-1 axes, C1 = R0_a^T E0 (eq. 1)              (n_el x 3 x 3)
    C2: np.ndarray  # section frame E0 in node-2 axes, C2 = R0_b^T E0                      (n_el x 3 x 3)
    L0: np.ndarray  # reference length [m]                                                 (n_el)
    Kl: np.ndarray  # local stiffness on (u, th1x, th1y, th1z, th2x, th2y, th2z)           (n_el x 7 x 7)
    alpha: np.ndarray  # stiffness-proportional damping factor [s]                         (n_el)
    auto_damping: np.ndarray  # alpha chosen by the compiler (damping=None; builder/cut_defaults.py) (n_el)
    m_axial: np.ndarray  # mass of the axial mode of its link if on a loop [kg] (cut_defaults D4; nan: none) (n_el)
    mass: np.ndarray  # element mass rho A L0                                              (n_el)
    Ml: np.ndarray  # local consistent mass on (u1, th1, u2, th2) (eq. 5)                  (n_el x 12 x 12)


@dataclass
class BeamEvaluation(FamilyEvaluation):
    """The beams at one state: co-rotated frames R_r (n_el, 3, 3), local forces K_l p (n_el, 7)
    and per element (n_el, 4) strain energy, dissipated power, kinetic energy, weight potential;
    for the element matrices the local deformations p (n_el, 7), their variations Bl (n_el, 7, 12)
    and the chord lengths (n_el) (eq. 1–4, computed once per evaluation by kernels.residual); the
    consistent tangents (K, C, K_material) once asked for (``exact`` blocks)."""

    frames: np.ndarray | None = None
    local_forces: np.ndarray | None = None
    energies: np.ndarray | None = None
    deformations: np.ndarray | None = None
    Bl: np.ndarray | None = None
    chord: np.ndarray | None = None
    tangents: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None


class Beams(NodePairDrawing, ElementFamily):
    """The ``"beam"`` family (module docstring)."""

    name = "beam"
    label = "beam element"
    plural = "beam elements"
    has_blocks = True
    has_mass = True
    outputs = (
        Output("section_forces", SECTION_FORCES, "axial force N, shear forces Vy, Vz, torque T, bending moments My, Mz "
               "(co-rotated axes; mean of the two ends)", field="element_forces", names_field="element_names"),
        Output("strain_energy", (), "strain energy [J]", field="element_energy", names_field="element_names"),
    )
    cell_kind = "beam"
    drawing_keys = ("beam_a", "beam_b")
    builder_table = "beams"

    def compile(self, records: Sequence[BeamSpec], nodes: NodeTable) -> BeamData:
        """End nodes, section frames in the node frames, local stiffness (eq. 2) and consistent
        mass (eq. 5)."""
        specs = list(records)
        n = len(specs)
        out: dict = dict(
            names=tuple(s.name for s in specs), link=tuple(s.link for s in specs),
            a=np.zeros(0, int), b=np.zeros(0, int), C1=np.zeros((0, 3, 3)), C2=np.zeros((0, 3, 3)),
            L0=np.zeros(0), Kl=np.zeros((0, 7, 7)), alpha=np.zeros(0), mass=np.zeros(0), Ml=np.zeros((0, 12, 12)),
            auto_damping=np.zeros(0, bool), m_axial=np.zeros(0),
        )
        if not n:
            return BeamData(**frozen_arrays(out))
        a = np.array([nodes.index(s.node_a, f"beam element '{s.name}'") for s in specs], dtype=int)
        b = np.array([nodes.index(s.node_b, f"beam element '{s.name}'") for s in specs], dtype=int)
        secs = [s.section for s in specs]
        E0 = np.array([s.frame for s in specs])
        L0 = np.array([s.length for s in specs])
        g = {f: np.array([getattr(s, f) for s in secs], dtype=float) for f in ("E", "G", "A", "Iy", "Iz", "J", "rho")}
        timo = [s.ky is not None for s in secs]
        if any(timo) and not all(timo):
            Kl = np.concatenate([exact.local_stiffness(L0[i:i + 1], *(g[f][i] for f in ("E", "G", "A", "Iy", "Iz", "J")),
                                                       secs[i].ky, secs[i].kz) for i in range(n)])
        else:
            Kl = exact.local_stiffness(L0, g["E"], g["G"], g["A"], g["Iy"], g["Iz"], g["J"],
                                       None if not timo[0] else np.array([s.ky for s in secs]),
                                       None if not timo[0] else np.array([s.kz for s in secs]))
        R0 = nodes.R0
        out.update(
            a=a, b=b, C1=np.swapaxes(R0[a], 1, 2) @ E0, C2=np.swapaxes(R0[b], 1, 2) @ E0, L0=L0, Kl=Kl,
            alpha=np.array([0.0 if s.damping is None else s.damping for s in specs]), mass=g["rho"] * g["A"] * L0,
            auto_damping=np.array([s.damping is None for s in specs], dtype=bool), m_axial=np.full(n, np.nan),
            Ml=exact.local_mass(L0, g["rho"] * g["A"], g["rho"] * g["Iy"], g["rho"] * g["Iz"]),
        )
        return BeamData(**frozen_arrays(out))

    def loop_edges(self, data: BeamData) -> list[tuple[str, str, int, int]]:
        return [(n, f"beam '{lk}' (element '{n}')", int(a), int(b)) for n, lk, a, b in zip(data.names, data.link, data.a,
                                                                                              data.b)]

    def element_nodes(self, data: BeamData) -> np.ndarray:
        return np.stack([data.a, data.b], axis=1).astype(np.int64)

    def prepare(self, model: Model, data: BeamData) -> BeamArrays:
        """The arrays as the kernels read them (elements/beam/kernel_data.py), with the local masses'
        values (n_el, nnz) at the nonzero pattern (rows, cols) they share (kernels.mass_pattern)."""
        return beam_arrays(data)

    def dissipates(self, data: BeamData) -> bool:
        """False where every element's stiffness-proportional damping (alpha) is zero."""
        return bool(np.any(data.alpha != 0.0))

    def evaluate(self, model: Model, data: BeamData, prep: BeamArrays, state: State, kin: Kinematics,
                 load_factor: float, Mb: np.ndarray, w: np.ndarray) -> BeamEvaluation:
        """Elastic and damping forces, consistent-mass inertia (eq. 5–6), weight (eq. 7) and
        energies: one compiled pass (kernels.residual)."""
        out = beam_results(data.n)
        kernels.residual(prep, NodeMotion(kin.x, kin.R, kin.V, kin.zeta), model.gravity, float(load_factor), w, out,
                         parallel.threads_for(data.n))
        return self.evaluation(*out)

    @staticmethod
    def results(fe: BeamEvaluation) -> BeamResults:
        """What the kernels read of an evaluation (BeamResults: frames, local forces, energies, p, Bl, chord)."""
        return BeamResults(fe.frames, fe.local_forces, fe.energies, fe.deformations, fe.Bl, fe.chord)

    @staticmethod
    def evaluation(frames: np.ndarray, fl: np.ndarray, en: np.ndarray, p: np.ndarray, Bl: np.ndarray,
                   chord: np.ndarray) -> BeamEvaluation:
        """The BeamEvaluation of kernels.residual's outputs (frames, local forces, energies, p, Bl, chord)."""
        return BeamEvaluation(strain_energy=float(en[:, 0].sum()), dissipation=float(ordered_sum(en[:, 1])), frames=frames,
                              local_forces=fl, energies=en, deformations=p, Bl=Bl, chord=chord)

    def blocks(self, model: Model, data: BeamData, prep: Any, fe: BeamEvaluation, kin: Kinematics, ck: float, cc: float,
               cm: float, material_only: bool, exact_tangent: bool) -> np.ndarray:
        """ck K + cc C + cm M: in time steps K is the material plus string stiffness (compiled,
        kernels.element_matrices); with ``exact_tangent`` the consistent tangent (exact.tangent,
        computed once per evaluation). ``material_only`` drops the geometric stiffness."""
        if not exact_tangent:
            out = np.zeros((data.n, 12, 12))
            arrays = beam_arrays(data) if prep is None else prep
            kernels.element_matrices(arrays, kin.x, kin.R, MatrixWeights(float(ck), float(cc), float(cm), bool(material_only)),
                                     out)
            return out
        if fe.tangents is None:
            a, b = data.a, data.b
            K, Km = exact.tangent(kin.x[a], kin.R[a], kin.x[b], kin.R[b], data.C1, data.C2, data.L0, data.Kl)
            fe.tangents = (K, data.alpha[:, None, None] * Km, Km)
        K, C, Km = fe.tangents
        out = ck * (Km if material_only else K) + cc * C
        if cm:
            out += cm * exact.global_mass(fe.frames, data.Ml)
        return out

    def add_blocks(self, model: Model, data: BeamData, prep: Any, fe: BeamEvaluation, kin: Kinematics, ck: float,
                   cc: float, cm: float, material_only: bool, exact_tangent: bool, scatter: ElementScatter,
                   out: np.ndarray) -> None:
        """In time steps one compiled pass (kernels.add_element_matrices): each element's ck K + cc C
        + cm M from the frames, deformations and Bl of the residual at this state (no second
        co-rotated pass), scattered at once into the iteration matrix's values ``out``; with
        ``exact_tangent`` the blocks of :meth:`blocks`, scattered."""
        if exact_tangent or fe.Bl is None:
            super().add_blocks(model, data, prep, fe, kin, ck, cc, cm, material_only, exact_tangent, scatter, out)
            return
        kernels.add_element_matrices(self.results(fe), beam_arrays(data) if prep is None else prep,
                                     MatrixWeights(float(ck), float(cc), float(cm), bool(material_only)),
                                     scatter_maps(scatter), kin.S, kin.x, out, parallel.threads_for(data.n))

    def add_mass_forces(self, data: BeamData, prep: Any, fe: BeamEvaluation, a: np.ndarray, out: np.ndarray) -> None:
        """Element masses (eq. 5) times the node accelerations, compiled."""
        arrays = beam_arrays(data) if prep is None else prep
        kernels.mass_forces(arrays.a, arrays.b, fe.frames, arrays.Mnz, arrays.nz_r, arrays.nz_c, np.ascontiguousarray(a), out,
                            parallel.threads_for(data.n))

    def energies(self, model: Model, data: BeamData, fe: BeamEvaluation, kin: Kinematics) -> tuple[float, float]:
        return float(fe.energies[:, 2].sum()), float(fe.energies[:, 3].sum()) + origin_potential(model, data.mass)

    def output(self, model: Model, data: BeamData, fe: BeamEvaluation | None, name: str) -> np.ndarray:
        if name == "section_forces":
            return np.zeros((0, 6)) if fe is None else exact.section_forces(fe.local_forces, data.L0)
        if name == "strain_energy":
            return np.zeros(0) if fe is None else fe.energies[:, 0]
        return super().output(model, data, fe, name)

    # ------------------------------------------------------------------ presentation
    def drawing(self, model: Model, data: BeamData) -> dict[str, np.ndarray]:
        """Node a -> node b of every element, in element order (cell i is element i)."""
        return {"beam_a": np.asarray(data.a, dtype=np.int64), "beam_b": np.asarray(data.b, dtype=np.int64)}

    def check_drawing(self, d: Mapping[str, np.ndarray], n_nodes: int, names: Mapping[str, int]) -> str:
        n = names.get("element_names", d["beam_a"].size)
        for k in ("beam_a", "beam_b"):
            if d[k].shape != (n,):
                return f"drawing '{k}' has shape {d[k].shape}, expected ({n},)"
        return ""

    def describe(self, model: Model, data: BeamData, limit: int) -> list[str]:
        """One row per flexible link: elements, end nodes, length and mass."""
        rows = []
        for link in sorted(set(data.link)):
            idx = [i for i, ln in enumerate(data.link) if ln == link]
            L = float(np.sum(data.L0[idx]))
            first, last = model.node_names[int(data.a[idx[0]])], model.node_names[int(data.b[idx[-1]])]
            rows.append(f"  flexible link {link}: {len(idx)} beam element(s) {data.names[idx[0]]} .. "
                        f"{data.names[idx[-1]]}, nodes {first} .. {last}, length {L:.4g}, mass {np.sum(data.mass[idx]):.4g}")
        return ["elements:"] + listing(rows, limit)

    def summary(self, model: Model, data: BeamData) -> str:
        return f"beam elements: {data.n} in {len(set(data.link))} flexible link(s)"


#: the registered instance (flexmb.elements.FAMILIES["beam"])
FAMILY = Beams()
