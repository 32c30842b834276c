"""A new kind of loop cut is one module plus ``register`` (issue 35, item 3, the cut contract of
flexmb.elements.family): a family with ``cut = True`` offers its rigid-equivalent constraints through
``ElementFamily.cut_frames`` and the rigid-equivalent model (flexmb.analysis.rigid), the singular-value
monitor and ``flexmb info`` pick it up from the registry without naming it.

The test-only kind here is a *pin cut*: the bushing's forces (it is built on flexmb's bushing) but, made
rigid, it holds the three translations only (a spherical joint), whatever stiffness its rotations have.
Checked against an independent computation: on a Grashof four-bar cut at B, the closure Jacobian of
the pin cut is, row for row, the translational part of the same cut made a revolute bushing (both are
the derivative of the same point's position), and its smallest singular value is that of those rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.analysis.rigid import RigidModel, has_cuts, model_cuts
from flexmb.app.cut_table import cut_table
from flexmb.app.describe import describe
from flexmb.elements import FAMILIES, register, unregister
from flexmb.elements.bushing import Bushings
from flexmb.elements.family import CutFrames, ElementFamily

Z = (0.0, 0.0, 1.0)
A_LEN, B_LEN, C_LEN, D_LEN = 0.3, 1.0, 0.8, 1.0  # crank, coupler, rocker, ground [m]


class PinCuts(Bushings):
    """Bushings that, made rigid, hold their three translations only (test-only cut kind)."""

    name = "pin_cut"
    label, plural = "pin cut", "pin cuts"
    builder_table = None  # its records come from ModelBuilder.add_element (not the bushings table it inherits)
    cell_kind = "pin_cut"

    def cut_frames(self, model, data) -> CutFrames:
        mask = np.zeros((data.n, 6), bool)
        mask[:, :3] = True
        return CutFrames(data.names, data.a, data.b, data.sa, data.Ea, data.sb, data.Eb, data.mode, mask,
                         np.zeros(data.n, bool))


@pytest.fixture
def pin_cuts():
    register(PinCuts())
    yield FAMILIES["pin_cut"]
    unregister("pin_cut")


def _four_bar(cut: str) -> fm.Model:
    """The Grashof crank-rocker at crank angle 1 rad, loop cut at B by a revolute bushing ("bushing") or
    by a pin cut with the same record ("pin")."""
    th = 1.0
    A = np.array([A_LEN * np.cos(th), A_LEN * np.sin(th), 0.0])
    e = np.hypot(A[0] - D_LEN, A[1])
    th4 = np.arctan2(A[1], A[0] - D_LEN) - np.arccos((C_LEN**2 + e**2 - B_LEN**2) / (2 * C_LEN * e))
    B = np.array([D_LEN + C_LEN * np.cos(th4), C_LEN * np.sin(th4), 0.0])
    O4 = np.array([D_LEN, 0.0, 0.0])
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    for name, at, com in (("crank", (0, 0, 0), A / 2), ("coupler", A, (B - A) / 2), ("rocker", O4, (B - O4) / 2)):
        mb.add_node(name, at)
        mb.add_body(name, name, 1.0, com, 1e-3 * np.eye(3))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "coupler", point=A, axis=Z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=Z)
    mb.add_bushing("B", "coupler", "rocker", stiffness=[1e6] * 5 + [0.0], damping=0.0, point=B, free_rotation="z")
    if cut == "pin":
        spec = mb.bushings["B"]
        twin = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
        for name in ("crank", "coupler", "rocker"):
            twin.add_node(name, mb.nodes[name].position)
            twin.add_body(name, name, 1.0, mb.bodies[name].com, 1e-3 * np.eye(3))
        for jt in ("O2", "A", "O4"):
            j = mb.joints[jt]
            twin.add_joint(jt, "revolute", j.parent, j.child, point=j.point, axis=Z)
        twin.add_element("pin_cut", spec)
        mb = twin
    return mb.compile()


def _moved(model: fm.Model) -> fm.State:
    """The assembly state with every coordinate turned a little (the cuts open: a generic state)."""
    st = model.initial_state()
    return st.retract(model, np.array([0.05, -0.03, 0.02])[: model.n_u])


def test_a_registered_cut_kind_is_held_by_the_rigid_equivalent_model(pin_cuts):
    pin, bushing = _four_bar("pin"), _four_bar("bushing")
    assert "pin_cut" in pin.elements and "bushing" not in [n for n, d in pin.elements.items() if d.n]
    assert has_cuts(pin) and model_cuts(pin).n == 1
    rm_pin, rm_bu = RigidModel(pin), RigidModel(bushing)
    assert rm_pin.cut_names == ("B.tx", "B.ty", "B.tz")
    assert rm_bu.cut_names == ("B.tx", "B.ty", "B.tz", "B.rx", "B.ry")
    st_pin, st_bu = _moved(pin), _moved(bushing)
    c_pin, J_pin = rm_pin.closure(st_pin)
    c_bu, J_bu = rm_bu.closure(st_bu)
    assert np.array_equal(c_pin, c_bu[:3]) and np.array_equal(J_pin, J_bu[:3])
    assert np.abs(c_pin).max() > 1e-4  # the moved state opens the cut: a real comparison
    # the monitor's smallest singular value over the undriven coordinates: that of the translation rows
    sigma = np.linalg.svd(J_bu[:3][:, bushing.free_u], compute_uv=False).min()
    assert rm_pin.sigma_min(st_pin) == sigma
    # a planar four-bar: the z row is zero (sigma_min 0: a redundant row, as a spherical cut of a planar loop
    # has), the two in-plane rows leave one degree of freedom of three coordinates
    assert not J_pin[2].any() and np.linalg.matrix_rank(J_pin[:, pin.free_u]) == 2 == pin.free_u.size - 1
    # the rigid-equivalent kinematics closes the loop by the pin cut's rows
    closed = rm_pin.solve_positions(st_pin)
    assert np.abs(rm_pin.closure(closed)[0]).max() <= 1e-12


def test_the_compiler_gives_a_registered_cut_kind_its_start_quantities(pin_cuts):
    """ElementFamily.cut_defaults receives the family's own rows: the effective masses (D2) of the pin
    cut's translations are those of the same directions of the bushing (W_ii = J_i M̄⁻¹ J_iᵀ depends on
    row i alone), and the z translation of the planar loop moves nothing (inf)."""
    seen = []
    original = PinCuts.cut_defaults

    def spy(self, model, data, start):
        seen.append(start)
        return original(self, model, data, start)

    PinCuts.cut_defaults = spy
    try:
        pin = _four_bar("pin")
    finally:
        PinCuts.cut_defaults = original
    bushing = _four_bar("bushing")
    (start,) = seen
    assert start.cuts.names == ("B",) and start.rows.tolist() == [[0, 0], [0, 1], [0, 2]]
    assert start.W.shape == (3, 3) and start.Jf.shape == (3, pin.free_u.size)
    m_pin, m_bu = pin.elements["pin_cut"].m_eff[0], bushing.elements["bushing"].m_eff[0]
    assert np.array_equal(m_pin[:3], m_bu[:3]) and np.isfinite(m_pin[:2]).all() and m_pin[2] == np.inf
    assert np.all(m_pin[3:] == np.inf)  # rows it does not hold


def test_info_lists_the_new_cut_kind_and_no_flexmb_module_names_it(pin_cuts):
    pin = _four_bar("pin")
    text = describe(pin)
    assert "pin cut" in text or "pin_cut" in text
    # the elastic cut table reads it through ElementFamily.elastic_rows: its label, its held directions
    lines = cut_table(pin, dt=1e-3)
    assert "  pin cut B: damping given" in lines
    assert [ln.split(":")[0].strip() for ln in lines if ln.startswith("    ")] == ["tx", "ty", "tz", "rx", "ry"]
    root = Path(fm.__file__).resolve().parent
    naming = [str(p) for p in root.rglob("*.py") if "pin_cut" in p.read_text()]
    assert not naming


def test_a_cut_family_without_cut_frames_says_so(pin_cuts):
    class Bare(PinCuts):
        name = "bare_cut"
        cut_frames = ElementFamily.cut_frames

    register(Bare())
    try:
        with pytest.raises(NotImplementedError, match="'bare_cut' is a cut family .* offers no cut_frames"):
            FAMILIES["bare_cut"].cut_frames(None, None)
    finally:
        unregister("bare_cut")
