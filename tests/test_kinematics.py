"""Kinematics of every joint kind: zeta = B'u against a finite difference of B u along the
motion, rigid-body consistency of B, and the vectorised tree recursion's basic invariants."""

import numpy as np
import pytest

import flexmb as fm
from flexmb.engine.assembly import Assembler
from flexmb.engine.reference import mbar_via_B
from flexmb.rotations import expm

KINDS = ["revolute", "prismatic", "cylindrical", "universal", "spherical", "free", "fixed", "revolute"]
NCOORD = {"revolute": 1, "prismatic": 1, "cylindrical": 2, "universal": 2, "spherical": 3, "free": 6, "fixed": 0}


def spatial_chain(seed: int) -> fm.Model:
    """A branched spatial tree with every joint kind, random geometry, coordinates and rates."""
    rng = np.random.default_rng(seed)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    prev = "ground"
    for i, k in enumerate(KINDS):
        mb.add_node(f"n{i}", rng.normal(size=3), expm(rng.normal(size=3)))
        mb.add_body(f"b{i}", f"n{i}", 1.0 + i, rng.normal(size=3), np.diag([1.0, 2.0, 2.5]))
        kw = {}
        if k in ("revolute", "prismatic", "cylindrical"):
            kw["axis"] = rng.normal(size=3)
        if k == "universal":
            kw["axes"] = [rng.normal(size=3), rng.normal(size=3)]
        if k != "fixed":
            kw["point"] = rng.normal(size=3)
        kw["q0"] = rng.normal(size=NCOORD[k])
        kw["u0"] = rng.normal(size=NCOORD[k])
        mb.add_joint(f"j{i}", k, prev, f"n{i}", **kw)
        prev = f"n{i}" if i != 4 else "n2"  # a branch at n2
    mb.add_node("loose", (1, 2, 3))
    return mb.compile(require_mass=False)  # the loose node has no mass: kinematics only


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_zeta_is_time_derivative_of_B_along_motion(seed):
    m = spatial_chain(seed)
    asm = Assembler(m)
    st = m.initial_state()
    st.u = np.random.default_rng(seed + 10).normal(size=m.n_u)
    ev = asm.evaluate(st)
    eps = 1e-6
    plus = st.retract(m, eps * st.u)
    minus = st.retract(m, -eps * st.u)
    Bu_p = asm.evaluate(plus).B @ st.u
    Bu_m = asm.evaluate(minus).B @ st.u
    fd = (Bu_p - Bu_m) / (2 * eps)
    zeta = ev.kin.zeta.ravel()
    # central differences: truncation ~ eps^2 * |third derivative|, round-off ~ 1e-16/eps
    assert np.abs(fd - zeta).max() <= 1e-7 * max(1.0, np.abs(zeta).max())


@pytest.mark.parametrize("seed", [0, 1])
def test_node_twists_are_rigid_within_fixed_joint(seed):
    m = spatial_chain(seed)
    st = m.initial_state()
    ev = Assembler(m).evaluate(st)
    i5, i6 = m.node_index("n5"), m.node_index("n6")
    V = ev.kin.V
    # nodes joined by a fixed joint move as one rigid body: same w, v6 = v5 + w x (x6 - x5)
    assert np.allclose(V[i5, 3:], V[i6, 3:], atol=1e-12)
    assert np.allclose(V[i6, :3], V[i5, :3] + np.cross(V[i5, 3:], ev.kin.x[i6] - ev.kin.x[i5]), atol=1e-12)


def test_assembly_configuration_is_reproduced_at_zero_coordinates():
    rng = np.random.default_rng(5)
    mb = fm.ModelBuilder()
    X = rng.normal(size=(3, 3))
    Rs = [expm(rng.normal(size=3)) for _ in range(3)]
    for i in range(3):
        mb.add_node(f"n{i}", X[i], Rs[i])
    mb.add_joint("a", "universal", "ground", "n0", axes=[(1, 0, 0), (0, 1, 0)])
    mb.add_joint("b", "cylindrical", "n0", "n1", axis=(0, 0, 1), point=(0.1, 0.2, 0.3))
    mb.add_joint("c", "spherical", "n1", "n2", point=(0, 0, 0))
    m = mb.compile(require_mass=False)  # no bodies: kinematics only
    ev = Assembler(m).evaluate(m.initial_state())
    assert np.allclose(ev.kin.x, X, atol=1e-14)
    assert np.allclose(ev.kin.R, np.array(Rs), atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tree_products_equal_B_products(seed):
    """M̄ by composite inertias equals B^T M B, and the tree-sum residual equals the one with B."""
    m = spatial_chain(seed)
    asm = Assembler(m)
    st = m.initial_state()
    st.udot = np.random.default_rng(seed).normal(size=m.n_u)
    ev = asm.evaluate(st)
    A = asm.mbar(ev).toarray()
    B = mbar_via_B(asm, ev).toarray()
    assert np.abs(A - B).max() <= 1e-13 * np.abs(B).max()
    assert np.allclose(A, A.T, rtol=0, atol=1e-14 * np.abs(A).max())
    assert np.linalg.eigvalsh(A[:-6, :-6]).min() > 0  # the last node is massless (free, no body)
    Bm = ev.B
    wn = np.einsum("nij,nj->ni", ev.Mb, (Bm @ st.udot).reshape(-1, 6)) + ev.bias
    r_ref = Bm.T @ wn.ravel() - ev.tau
    assert np.abs(ev.residual(st.udot) - r_ref).max() <= 1e-13 * np.abs(r_ref).max()


GROUND_KINDS = ["free", "spherical", "prismatic", "fixed", "free"]


def _on_ground(seed: int, via_base: bool) -> fm.Model:
    """Joints without rotation coordinates hung on ground (``via_base`` False: _forward_joints's
    ground branch and its shortcut for joints without rotation axes) or on a massless node fixed at
    the origin with the identity rotation (the parent's pose and twists read from the arrays)."""
    rng = np.random.default_rng(seed)
    mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
    parent = "ground"
    if via_base:
        mb.add_node("base", (0.0, 0.0, 0.0))
        mb.add_joint("base", "fixed", "ground", "base", point=(0.0, 0.0, 0.0))
        parent = "base"
    for i, k in enumerate(GROUND_KINDS):
        mb.add_node(f"n{i}", rng.normal(size=3), expm(rng.normal(size=3)))
        mb.add_body(f"b{i}", f"n{i}", 1.0 + i, rng.normal(size=3), np.diag([1.0, 2.0, 2.5]))
        kw = {"axis": rng.normal(size=3)} if k == "prismatic" else {}
        if k != "fixed":
            kw.update(point=rng.normal(size=3), q0=rng.normal(size=NCOORD[k]), u0=rng.normal(size=NCOORD[k]))
        mb.add_joint(f"j{i}", k, parent, f"n{i}", **kw)
    return mb.compile(require_mass=False)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_joints_on_ground_without_rotation_coordinates_take_the_general_values(seed):
    """Free, spherical, prismatic and fixed joints on ground (the free FE nodes' and free bodies'
    case, with the shortcut for joints without rotation axes) against the same joints under a
    parent at the origin: the same poses, axes, rates, twists and ζ (equal as numbers)."""
    fast, general = _on_ground(seed, False), _on_ground(seed, True)
    ka = Assembler(fast).evaluate(fast.initial_state()).kin
    kb = Assembler(general).evaluate(general.initial_state()).kin
    nodes = [general.node_names.index(n) for n in fast.node_names]
    assert fast.n_u == general.n_u == 6 + 3 + 1 + 0 + 6
    for name in ("x", "R", "V", "zeta", "Vs", "As"):
        np.testing.assert_array_equal(getattr(ka, name), getattr(kb, name)[nodes], err_msg=name)
    for name in ("S", "Sdot"):
        np.testing.assert_array_equal(getattr(ka, name), getattr(kb, name), err_msg=name)
    np.testing.assert_array_equal(ka.joint_point, kb.joint_point[1:])
    assert np.abs(ka.zeta).max() > 0.1 and np.abs(ka.Sdot).max() > 0.1  # moving, with velocity products


def test_the_zero_mass_product_is_the_mass_product_with_zero_blocks_bit_for_bit():
    """zero_mass_times_add (no node masses) gives what mass_times_add gives with every block +0, to the
    sign of zero, and NaN exactly where an entry of the node's a is not finite (in place too)."""
    from flexmb.engine.kinematics import mass_times_add, zero_mass_times_add

    rng = np.random.default_rng(4)
    a, b = rng.normal(size=(50, 6)), rng.normal(size=(50, 6))
    a[::3] *= -1.0
    b[::4, 1] = -0.0
    b[5, 2] = 0.0
    a[7, 3], a[9, 0], a[11, 5] = np.inf, -np.inf, np.nan
    want = np.empty((50, 6))
    mass_times_add(np.zeros((50, 6, 6)), a, b, want)
    got = np.empty((50, 6))
    zero_mass_times_add(a, b, got)
    bad = np.isnan(want)
    assert bad.any() and np.array_equal(np.isnan(got), bad)
    assert np.array_equal(got[~bad].view(np.int64), want[~bad].view(np.int64))  # the sign of zero included
    assert np.any(np.signbit(b) & (b == 0.0)) and not np.any(np.signbit(got) & (got == 0.0))
    inplace = b.copy()
    zero_mass_times_add(a, inplace, inplace)
    assert np.array_equal(np.isnan(inplace), bad) and np.array_equal(inplace[~bad].view(np.int64), want[~bad].view(np.int64))


@pytest.mark.parametrize("seed", [0, 1])
def test_forward_without_the_axes_rates_gives_the_same_kinematics_bit_for_bit(seed):
    """_forward with an Sd of no rows (the beams' compiled iterates, which do not read the axes' rates)
    skips them and leaves every other output as with them, every joint kind and the ground shortcut."""
    from flexmb.engine import kinematics as K

    for model in (spatial_chain(seed), _on_ground(seed, False)):
        state = model.initial_state()
        t = K.TreePattern(model)
        full = K.KinematicsBuffers(model, t)
        full.forward(state)
        arrays = K.kinematics_arrays(model)._replace(Sd=np.empty((0, 6)))
        K._forward(t.joint_tree, np.ascontiguousarray(state.q, dtype=float),
                   np.ascontiguousarray(state.balls.reshape(-1, 3, 3), dtype=float),
                   np.ascontiguousarray(state.u, dtype=float), arrays, 1)
        names = ("x", "R", "Vs", "As", "S", "Sd", "P", "V", "zeta")
        for k, name in enumerate(names):
            if name != "Sd":
                np.testing.assert_array_equal(arrays[k], full.arrays[k], err_msg=name)
        assert np.abs(full.Sd).max() > 0.1 and np.abs(full.As).max() > 0.1  # the rates exist and feed As
