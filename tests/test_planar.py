"""Planar models and planar loop cuts (docs/planar.md; flexmb.builder.planar): a planar cut holds only
the in-plane directions (P3) and follows the motion of the same mechanism closed by a spatial cut; a
planar model refuses what would move it out of its plane (P4)-(P6), naming it; bad planes are refused."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from cut_mechanisms import GRASHOF, Z, ramp, rocker_angle, rod_inertia
from test_element_run import _assert_same, _both

import flexmb as fm
from flexmb.app.describe import describe
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import peer_loops as pl  # noqa: E402

K_CUT = 1e8  # the bushings' stiffness [N/m] (N m/rad on the rotations)


def four_bar(cut: str, planar: bool, th0: float = 1.0, drive=None, plane=None) -> fm.Model:
    """The Grashof crank-rocker of tests/cut_mechanisms.four_bar (uniform 1 kg rods in the x-y plane,
    gravity -y), cut at B between coupler and rocker by a revolute rigid cut or bushing (free rotation
    z; the bushing of stiffness K_CUT in all its other directions, default damping); ``planar``: a
    planar model (ModelBuilder(planar="xy")); ``plane``: given to the cut."""
    a, b, c, d = GRASHOF
    A = np.array([a * np.cos(th0), a * np.sin(th0), 0.0])
    th4 = rocker_angle(th0, a, b, c, d)
    B = np.array([d + c * np.cos(th4), c * np.sin(th4), 0.0])
    O4 = np.array([d, 0.0, 0.0])
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0), planar="xy" if planar else None)
    for name, x0, x1, length in (("crank", np.zeros(3), A, a), ("coupler", A, B, b), ("rocker", O4, B, c)):
        mb.add_node(name, x0)
        mb.add_body(name, name, 1.0, (x1 - x0) / 2, rod_inertia(1.0, length, x1 - x0))
    mb.add_joint("O2", "revolute", "ground", "crank", point=(0, 0, 0), axis=Z)
    mb.add_joint("A", "revolute", "crank", "coupler", point=A, axis=Z)
    mb.add_joint("O4", "revolute", "ground", "rocker", point=O4, axis=Z)
    kw = {} if plane is None else {"plane": plane}
    if cut == "rigid":
        mb.add_rigid_cut("B", "coupler", "rocker", point=B, free_rotation="z", **kw)
    else:
        mb.add_bushing("B", "coupler", "rocker", stiffness=[K_CUT] * 5 + [0.0], point=B, free_rotation="z", **kw)
    if drive is not None:
        mb.add_drive("O2", *drive)
    return mb.compile()


def out_of_plane(F: np.ndarray) -> float:
    """The largest out-of-plane component (tz, mx, my in cut axes) of cut forces F (nt, 6) relative to
    the largest in-plane one."""
    return float(np.abs(F[:, 2:5]).max() / np.abs(F[:, [0, 1, 5]]).max())


# ------------------------------------------------------------------------------------------ the four-bar
def test_a_planar_rigid_cut_holds_only_the_in_plane_rows_and_follows_the_closed_form():
    """Crank driven from rest (tests/test_rigid_cut.py's Grashof case) with a planar rigid cut: it holds
    tx, ty only (a revolute pin in the plane, P3), none of its rows is redundant where the spatial cut's
    five rows hold three that the revolute joints already hold (6 - 3 per planar loop: Grübler); the
    rocker follows the closed form (F) within 1e-8 rad and the cut stays closed within its tolerance;
    the cut force has no out-of-plane part."""
    drive = ramp(0.0, 2 * np.pi, 0.5)
    spatial, planar = four_bar("rigid", False, drive=drive), four_bar("rigid", True, drive=drive)
    assert spatial.elements["rigid_cut"].mask[0].tolist() == [True] * 5 + [False]
    assert planar.elements["rigid_cut"].mask[0].tolist() == [True, True, False, False, False, False]
    assert spatial.elements["rigid_cut"].redundancy == 3 and planar.elements["rigid_cut"].redundancy == 0
    res = fm.simulate(planar, 1.0, 1e-3, rho_inf=0.8)
    assert res.status == "finished"
    th2 = 1.0 + res.coordinate("O2.q")
    th4 = rocker_angle(1.0) + res.coordinate("O4.q")
    assert np.abs(np.angle(np.exp(1j * (th4 - rocker_angle(th2, *GRASHOF))))).max() < 1e-8
    rc = planar.elements["rigid_cut"]
    pa = res.x[:, 1] + np.einsum("nij,j->ni", res.R[:, 1], rc.sa[0])
    pb = res.x[:, 2] + np.einsum("nij,j->ni", res.R[:, 2], rc.sb[0])
    assert np.linalg.norm(pb - pa, axis=1).max() <= rc.tol[0]
    assert out_of_plane(res.cut_force("B")) < 1e-12


@pytest.mark.parametrize("cut", ["rigid", "elastic"])
def test_planar_and_spatial_cuts_give_the_same_motion_of_the_swinging_four_bar(cut):
    """The undriven four-bar released at rest swings under gravity for 1 s. Planar and spatial cuts
    of the same kind give the same node paths: a rigid cut to the closure tolerance of the cut (both
    solve the same closed loop; measured 3e-14 m against 1e-10 m), a bushing to its compliance error
    |F|max / k (the give of the cut under its largest force, 2.2e-7 m; measured 0: the out-of-plane rows
    never deform, so the forces are the same).
    The planar bushing has no stiffness or damping out of the plane (P3), the default damping on its
    held rows only."""
    spatial, planar = four_bar(cut, False), four_bar(cut, True)
    r_s = fm.simulate(spatial, 1.0, 1e-3)
    r_p = fm.simulate(planar, 1.0, 1e-3)
    assert r_s.status == r_p.status == "finished"
    assert np.ptp(r_p.coordinate("O2.q")) > 0.5  # it swings
    F = r_p.cut_force("B")
    if cut == "rigid":
        bound = planar.elements["rigid_cut"].tol[0]
    else:
        bound = np.linalg.norm(F[:, :3], axis=1).max() / K_CUT
        bu = planar.elements["bushing"]
        out = [2, 3, 4]
        assert not bu.K[0][out].any() and not bu.K[0][:, out].any()
        assert not bu.C[0][out].any() and not bu.C[0][:, out].any()
        assert np.diag(bu.C[0])[[0, 1]].min() > 0  # default damping on the held translations
        assert np.isfinite(bu.m_eff[0][[0, 1]]).all()
    assert np.abs(r_p.x - r_s.x).max() <= bound
    assert out_of_plane(F) < 1e-12
    assert out_of_plane(r_s.cut_force("B")) < 1e-12  # the spatial cut's out-of-plane rows carry nothing either


def test_info_says_the_model_and_its_cuts_are_planar_and_counts_the_rows():
    """``flexmb info``: the plane, which directions each cut holds, and the cut rows (P7): the planar
    revolute rigid cut 2 rows where the spatial one holds 5."""
    text = describe(four_bar("rigid", True))
    assert "planar model: moves in the plane xy" in text
    assert "B: coupler - rocker, holds tx, ty (planar: normal along cut z)" in text
    assert "2 cut rows held (penalty terms and multipliers), 5 for the same cuts in space" in text
    text = describe(four_bar("elastic", True))
    assert "B: coupler - rocker, holds tx, ty (planar: normal along bushing z)" in text
    assert "planar" not in describe(four_bar("rigid", False))
    # a planar cut in a spatial model: said too
    assert "1 planar cut(s)" in describe(four_bar("rigid", False, plane="xy"))


@pytest.mark.parametrize("cut", ["rigid", "elastic"])
def test_a_planar_model_keeps_the_compiled_path_bit_for_bit(monkeypatch, cut):
    """The planar cuts are the cut families' own kernels with fewer rows: the compiled run and the
    Python step give the same result bit for bit, and the solver says it is compiled."""
    model = four_bar(cut, True, drive=ramp(0.0, 2 * np.pi, 0.5))
    text = GeneralizedAlpha(model).describe_solver()
    assert "compiled call" in text and "in Python" not in text
    fast, slow, calls = _both(monkeypatch, model, 0.05, 1e-3, output_every=5)
    assert calls and fast.status == "finished"
    _assert_same(fast, slow)


# ------------------------------------------------------------------------------------------ the N-four-bar
@pytest.mark.parametrize("cut", ["rigid", "elastic"])
def test_the_n_four_bar_with_planar_cuts_runs_as_far_as_with_spatial_cuts(cut):
    """IFToMM A02 with N = 4 windows (benchmarks/peer_loops.py's model) from upright through its first
    singular configuration (t = 0.72 s) to 1 s: planar cuts run as far as spatial ones, with no
    redundant row (spatial rigid cuts: 3 per window), and follow the exact motion as closely (B0's x
    against the one-degree-of-freedom solution; within 1 % of the spatial cuts' error, or 1e-9 m; measured
    1.397e-6 m for both rigid, 2.721e-6 m for both elastic)."""
    n, t_end = 4, 1.0
    runs = {}
    for planar in (False, True):
        model = pl.fm_n_four_bar(fm, n, cut, 1e9, math.pi / 2, planar=planar)
        if cut == "rigid":
            assert model.elements["rigid_cut"].redundancy == (0 if planar else 3 * n)
        res = fm.simulate(model, t_end, 1e-3, rho_inf=0.9)
        err = np.abs(res.node_position("coupler1")[:, 0] - pl.L * np.cos(pl.exact_angle(n, res.t, math.pi / 2))).max()
        runs[planar] = (res.t[-1], err)
    assert runs[True][0] >= runs[False][0] == pytest.approx(t_end)
    assert runs[True][1] <= max(1.01 * runs[False][1], 1e-9)


# ------------------------------------------------------------------------------------------ refusals
def _planar_builder(gravity=(0.0, -9.81, 0.0)) -> fm.ModelBuilder:
    mb = fm.ModelBuilder(gravity=gravity, planar="xy")
    mb.add_node("n1", (1.0, 0.0, 0.0))
    mb.add_body("b1", "n1", 1.0, (0.5, 0.0, 0.0), np.diag([0.01, 0.1, 0.1]))
    return mb


@pytest.mark.parametrize("case, words", [
    ("tilted revolute", ["joint 'j1'", "revolute axis", "rad off"]),
    ("spherical", ["joint 'j1'", "spherical joint moves out of the plane"]),
    ("prismatic across", ["joint 'j1'", "prismatic axis", "leaves the plane"]),
    ("free node", ["node 'n1'", "free joint"]),
    ("gravity", ["gravity", "along the normal"]),
    ("load force", ["load 'push'", "node 'n1'", "along the normal"]),
    ("load moment", ["load 'push'", "turns about an axis in the plane"]),
    ("load later", ["load 'push'", "at t = 0.001 s", "along the normal"]),
])
def test_a_planar_model_pushed_out_of_its_plane_is_refused_naming_the_offender(case, words):
    mb = _planar_builder(gravity=(0.0, -9.81, 0.5) if case == "gravity" else (0.0, -9.81, 0.0))
    if case == "tilted revolute":
        mb.add_joint("j1", "revolute", "ground", "n1", point=(0, 0, 0), axis=(0.0, 1e-6, 1.0))
    elif case == "spherical":
        mb.add_joint("j1", "spherical", "ground", "n1", point=(0, 0, 0))
    elif case == "prismatic across":
        mb.add_joint("j1", "prismatic", "ground", "n1", axis=(1.0, 0.0, 1e-6))
    elif case != "free node":
        mb.add_joint("j1", "revolute", "ground", "n1", point=(0, 0, 0), axis=Z)
    if case == "load force":
        mb.add_load("push", "n1", force=(1.0, 0.0, 0.1))
    if case == "load later":  # zero out of the plane at the start only
        mb.add_load("push", "n1", force=lambda t: (1.0, 0.0, np.sin(t)))
    if case == "load moment":
        mb.add_load("push", "n1", moment=(0.1, 0.0, 1.0))
    with pytest.raises(fm.ModelError) as exc:
        mb.compile()
    for w in words:
        assert w in str(exc.value)


def test_a_planar_model_takes_joints_and_loads_in_its_plane():
    """The accepted counterparts: revolute about -z, prismatic in the plane, a load in the plane with a
    moment about the normal, a follower load in the node's in-plane axes, gravity in the plane."""
    mb = _planar_builder()
    mb.add_node("n2", (2.0, 0.0, 0.3))
    mb.add_body("b2", "n2", 1.0)
    mb.add_joint("j1", "revolute", "ground", "n1", point=(0, 0, 0), axis=(0.0, 0.0, -1.0))
    mb.add_joint("j2", "prismatic", "n1", "n2", axis=(1.0, 1.0, 0.0))
    mb.add_load("push", "n1", force=(1.0, 2.0, 0.0), moment=(0.0, 0.0, 3.0))
    mb.add_load("follow", "n2", force=(0.0, 1.0, 0.0), follower=True)
    model = mb.compile()
    assert model.plane_normal.tolist() == [0.0, 0.0, 1.0]
    res = fm.simulate(model, 0.05, 1e-3)
    assert res.status == "finished"
    assert np.abs(res.x[:, :, 2] - res.x[0, :, 2]).max() == 0.0  # nothing moves along the normal


@pytest.mark.parametrize("value", ["xz!", "", 3, True, (0.0, 0.0, 0.0), (0.0, float("nan"), 1.0), (1.0, 2.0), "spatial"])
def test_bad_planar_values_are_refused(value):
    with pytest.raises(fm.ModelError, match="planar"):
        fm.ModelBuilder(planar=value)


def test_the_planes_by_name_and_by_normal():
    for name, n in (("xy", [0, 0, 1]), ("yz", [1, 0, 0]), ("zx", [0, 1, 0])):
        assert fm.ModelBuilder(planar=name).planar.tolist() == n
        assert fm.ModelBuilder(planar=name[::-1]).planar.tolist() == n
    assert np.allclose(fm.ModelBuilder(planar=(0.0, 0.0, -2.0)).planar, [0.0, 0.0, -1.0])


@pytest.mark.parametrize("method", ["add_bushing", "add_rigid_cut"])
@pytest.mark.parametrize("value, words", [
    ("ab", ["plane 'ab' is not a plane", "'spatial'"]),
    (1.0, ["plane = 1.0 is not a plane"]),
    ((0.0, 0.0, 0.0), ["plane", "zero length"]),
    ((0.0, 0.6, 0.8), ["plane: no axis of the cut is normal to its plane", "give axes"]),
])
def test_bad_plane_values_on_a_cut_are_refused_naming_the_cut(method, value, words):
    mb = _planar_builder()
    mb.add_joint("j1", "revolute", "ground", "n1", point=(0, 0, 0), axis=Z)
    kw = {"stiffness": [1e6] * 6} if method == "add_bushing" else {}
    with pytest.raises(fm.ModelError) as exc:
        getattr(mb, method)("cut", "ground", "n1", point=(1.0, 0.0, 0.0), plane=value, **kw)
    msg = str(exc.value)
    assert method in msg and "'cut'" in msg
    for w in words:
        assert w in msg


def test_a_cut_plane_along_another_cut_axis_and_the_spatial_opt_out():
    """plane="yz" on a cut whose x axis is the normal holds ty, tz, rx; axes turned so that the normal
    is the cut's y axis hold tx, tz, ry (a bushing keeps its stiffness and damping on those rows and
    their coupling, and drops the rest); plane="spatial" in a planar model holds all six."""
    mb = _planar_builder()
    mb.add_joint("j1", "revolute", "ground", "n1", point=(0, 0, 0), axis=Z)
    mb.add_rigid_cut("c1", "ground", "n1", point=(1.0, 0.0, 0.0), plane="yz")
    turned = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])  # columns: x, y = global z, z = -global y
    mb.add_rigid_cut("c2", "ground", "n1", point=(1.0, 0.0, 0.0), axes=turned)
    mb.add_rigid_cut("c3", "ground", "n1", point=(1.0, 0.0, 0.0), plane="spatial")
    rc = mb.rigid_cuts
    assert [rc["c1"].plane, rc["c2"].plane, rc["c3"].plane] == [0, 1, -1]
    mb.add_bushing("b1", "ground", "n1", stiffness=np.full((6, 6), 1e5) + np.eye(6) * 1e6, damping=np.full(6, 10.0),
                   point=(1.0, 0.0, 0.0), axes=turned)
    K, C = mb.bushings["b1"].stiffness, mb.bushings["b1"].damping
    held = [0, 2, 4]
    assert np.diag(K).tolist() == [1.1e6, 0.0, 1.1e6, 0.0, 1.1e6, 0.0] and np.diag(C).tolist() == [10.0, 0, 10.0, 0, 10.0, 0]
    assert np.count_nonzero(K) == 9 and (K[np.ix_(held, held)] > 0).all()  # the coupling among held rows is kept
