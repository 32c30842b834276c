"""Spring-dampers over the tree path between their nodes (docs/spring_damper.md §7, (S14)-(S17)):
the assembly over the relative coordinates against an independent computation with the full
Jacobians, the vanishing generalized forces on the common coordinates, and a chain with
spring-dampers between neighbouring links on the O(n) tree factor with its compiled step and run:
the same as the Python Newton loop bit for bit, and the dense factor's motion to Newton's tolerance.
"""

from __future__ import annotations

import numpy as np
import pytest

import flexmb as fm
from flexmb.elements import FAMILIES
from flexmb.engine.assembly import Assembler
from flexmb.engine.reference import iteration_matrix_via_B
from flexmb.errors import SettingsError
from flexmb.solvers import tree_run
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.tree_run import TreeRun

L, M = 0.2, 0.5  # link length [m], mass [kg]
K, C = 400.0, 0.5  # spring-damper stiffness [N/m], damping [N s/m]


def spring_chain(n: int, skip: bool = False) -> fm.Model:
    """n links along x in 3D: revolute joints about z and y in turn, the third a universal joint and the
    fifth spherical (joint blocks of 2 and 3 coordinates); a spring-damper from ground to the first link
    and between every pair of neighbouring links, off the joint axes, one with its ends given child
    first. ``skip``: one more from link 0 to link 2 (two joints between its nodes)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    inertia = np.diag([1e-4, M * L**2 / 12.0, M * L**2 / 12.0])
    parent = "ground"
    for i in range(n):
        node, x = f"n{i}", i * L
        mb.add_node(node, (x, 0.0, 0.0))
        mb.add_body(f"link{i}", node, M, (0.5 * L, 0.0, 0.0), inertia)
        if i == 2:
            mb.add_joint(f"j{i}", "universal", parent, node, point=(x, 0.0, 0.0), axes=((0.0, 0.0, 1.0), (0.0, 1.0, 0.0)))
        elif i == 4:
            mb.add_joint(f"j{i}", "spherical", parent, node, point=(x, 0.0, 0.0))
        else:
            mb.add_joint(f"j{i}", "revolute", parent, node, point=(x, 0.0, 0.0),
                         axis=(0.0, 0.0, 1.0) if i % 2 == 0 else (0.0, 1.0, 0.0))
        pa, pb = (x - 0.05, 0.04, 0.01), (x + 0.06, 0.03, -0.02)
        if i == 3:  # given child first: its end a is the joint's child
            mb.add_spring_damper(f"sd{i}", node, parent, stiffness=K, damping=C, point_a=pb, point_b=pa, rest_length=0.08)
        else:
            mb.add_spring_damper(f"sd{i}", parent, node, stiffness=K, damping=C, point_a=pa, point_b=pb, rest_length=0.08)
        parent = node
    if skip:
        mb.add_spring_damper("skip", "n0", "n2", stiffness=K, point_a=(0.1, 0.05, 0.0), point_b=(0.5, 0.05, 0.0))
    return mb.compile()


def _random_state(model: fm.Model, seed: int = 3) -> fm.State:
    rng = np.random.default_rng(seed)
    st = model.initial_state()
    st.q[:] = 0.4 * rng.standard_normal(st.q.size)
    st.u[:] = rng.standard_normal(st.u.size)
    return st


def test_generalized_forces_on_the_common_coordinates_vanish() -> None:
    """(S14): Bᵀ of a spring-damper's node wrenches is zero on every coordinate moving both its nodes
    (measured against the same projection on the coordinates between them)."""
    model = spring_chain(6, skip=True)
    asm = Assembler(model)
    ev = asm.evaluate(_random_state(model))
    d = model.elements["spring_damper"]
    fe = ev.elements["spring_damper"]
    B = ev.B.toarray()
    N = model.n_nodes
    for e in range(d.n):
        w = np.zeros((N + 1, 6))
        a = N if d.a[e] < 0 else d.a[e]
        w[a] += fe.G[e, :6] * fe.F[e]
        w[d.b[e]] += fe.G[e, 6:] * fe.F[e]
        Q = B.T @ w[:N].ravel()
        moves_a = np.zeros(model.n_u, bool) if a == N else np.abs(B[6 * a:6 * a + 6]).max(axis=0) > 0
        moves_b = np.abs(B[6 * d.b[e]:6 * d.b[e] + 6]).max(axis=0) > 0
        common, path = moves_a & moves_b, moves_a ^ moves_b
        assert path.any() and fe.F[e] != 0.0
        scale = np.abs(Q[path]).max()
        assert np.abs(Q[common]).max(initial=0.0) <= 1e3 * np.finfo(float).eps * scale, d.names[e]


def test_relative_assembly_is_the_full_jacobians_without_the_common_columns() -> None:
    """(S16): S over the relative coordinates equals the full-Jacobian reference Bᵀ E B minus, per
    spring-damper, B_eᵀ E_e B_e + B_rᵀ E_e B_r, formed here with numpy; its material part (S10) is
    unchanged."""
    model = spring_chain(6, skip=True)
    asm = Assembler(model)
    ev = asm.evaluate(_random_state(model))
    cols = np.asarray(model.free_u)
    gp, bp = 0.02, 2e-4
    d = model.elements["spring_damper"]
    fam = FAMILIES["spring_damper"]
    E = fam.blocks(model, d, None, ev.elements["spring_damper"], ev.kin, bp, gp, 1.0, False, False)
    B = ev.B.toarray()[:, cols]
    correction = np.zeros((cols.size, cols.size))
    for e in range(d.n):
        Ba = np.zeros((6, cols.size)) if d.a[e] < 0 else B[6 * d.a[e]:6 * d.a[e] + 6]
        Bb = B[6 * d.b[e]:6 * d.b[e] + 6]
        Be = np.vstack([Ba, Bb])
        common = (np.abs(Ba).max(axis=0) > 0) & (np.abs(Bb).max(axis=0) > 0)
        Br = Be.copy()
        Br[:, common] = 0.0
        correction += Br.T @ E[e] @ Br - Be.T @ E[e] @ Be
    assert np.abs(correction).max() > 0.0  # the string term of an element in tension did couple them
    for material in (True, False):
        S = asm.iteration_matrix(ev, cols, gp, bp, np.zeros(cols.size), material_only=material).toarray()
        R = iteration_matrix_via_B(asm, ev, cols, gp, bp, np.zeros(cols.size), material_only=material).toarray()
        tol = 1e3 * np.finfo(float).eps * np.abs(R).max()
        if material:
            assert np.abs(S - R).max() <= tol
        else:
            assert np.abs(S - (R + correction)).max() <= tol


def test_a_neighbouring_link_chain_takes_the_tree_factor_and_the_compiled_paths() -> None:
    model = spring_chain(6)
    integ = GeneralizedAlpha(model)
    assert integ.chol.kind == "tree" and integ.tree_step is not None
    text = integ.describe_solver(fixed_steps=True, callback=False)
    assert "O(n) tree factorization" in text and "spring-dampers across single joints" in text
    assert "each step's Newton loop in one compiled call" in text and "tree_run.py" in text
    # a spring-damper spanning two joints couples them: no tree factor, and flexmb info says why
    other = spring_chain(6, skip=True)
    assert GeneralizedAlpha(other).chol.kind != "tree"
    assert "no single joint joins" in Assembler(other).tree_pairs_refusal
    with pytest.raises(SettingsError):
        GeneralizedAlpha(other, linear_solver="tree")


def test_compiled_tree_step_is_the_python_step_bit_for_bit() -> None:
    model = spring_chain(6)
    A, B = GeneralizedAlpha(model, rho_inf=0.8), GeneralizedAlpha(model, rho_inf=0.8)
    B.tree_step = None
    sa, _ = A.initial_acceleration(model.initial_state())
    sb, _ = B.initial_acceleration(model.initial_state())
    aa, ab = sa.udot.copy(), sb.udot.copy()
    for _ in range(60):
        sa, aa, eva, ia = A.step(sa, aa, 2e-3)
        sb, ab, evb, ib = B.step(sb, ab, 2e-3)
        for name in ("q", "balls", "u", "udot"):
            np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
        assert (ia.iterations, ia.factorizations, ia.residual) == (ib.iterations, ib.factorizations, ib.residual)
        assert eva.strain_energy == evb.strain_energy and eva.element_dissipation == evb.element_dissipation
        np.testing.assert_array_equal(eva.elements["spring_damper"].F, evb.elements["spring_damper"].F)
    assert A.timings["compiled_step"] > 0.0 and B.timings["compiled_step"] == 0.0
    assert np.abs(sa.u).max() > 0.1


def test_compiled_tree_run_is_the_python_run_and_closes_the_energy_balance(monkeypatch) -> None:
    model = spring_chain(6)
    calls: list[int] = []
    original = TreeRun.run

    def counting(self, st, a, dt, n):
        out = original(self, st, a, dt, n)
        calls.append(len(out[3]))
        return out
    with monkeypatch.context() as mp:
        mp.setattr(TreeRun, "run", counting)
        fast = fm.simulate(model, 0.3, 1e-3, output_every=10)
    with monkeypatch.context() as mp:
        mp.setattr(TreeRun, "applies", staticmethod(lambda integ, callback: False))
        slow = fm.simulate(model, 0.3, 1e-3, output_every=10)
    assert calls and max(calls) == 10 <= tree_run.MAX_STEPS
    for name in ("q", "u", "udot", "x", "spring_dampers"):
        np.testing.assert_array_equal(getattr(fast, name), getattr(slow, name), err_msg=name)
    for key in ("kinetic", "potential", "strain", "dissipated"):
        np.testing.assert_array_equal(fast.energy[key], slow.energy[key], err_msg=key)
    e = fast.energy
    total = e["kinetic"] + e["potential"] + e["strain"] + e["dissipated"]
    assert e["dissipated"][-1] > 0.0
    # generalized-α's own energy error is O(h²) of the energy exchanged; a per mille of it bounds it here
    assert np.abs(total - total[0]).max() < 1e-3 * (np.abs(e["kinetic"]).max() + np.abs(e["strain"]).max())


def test_tree_factor_gives_the_dense_factors_motion() -> None:
    """Both converge on the same residual (S5) with different tangents (the tree's carries the position
    tangent, engine/tree_solver.py), so their states differ by what Newton's tolerance leaves: the
    difference falls with the tolerance rtol (measured: 2.3e-5 rad at rtol 1e-6, 1.3e-9 at 1e-10),
    i.e. both runs approach one motion."""
    model = spring_chain(6)
    diff = {}
    for rtol in (1e-6, 1e-10):
        tree = fm.simulate(model, 0.2, 1e-3, rtol=rtol, output_every=20)
        dense = fm.simulate(model, 0.2, 1e-3, rtol=rtol, output_every=20, linear_solver="dense")
        assert tree.stats["tree_solver"] == 1.0 and dense.stats["dense_solver"] == 1.0
        diff[rtol] = np.abs(tree.q - dense.q).max()
    motion = np.abs(tree.q[-1] - tree.q[0]).max()
    assert motion > 0.1  # the chain moved
    assert diff[1e-10] <= 1e-3 * diff[1e-6]  # four decades of tolerance: at least three of difference
    assert diff[1e-10] <= 1e-10 * 1e2 * motion  # and at rtol 1e-10 a hundred times the tolerance of the motion


def test_the_speed_benchmarks_chain_takes_the_compiled_tree_path() -> None:
    """benchmarks/spring_chain.py's 100-link chain (issue 34: per step at most 1.5 times the chain with joint
    springs, on a compiled path, benchmarks/results/2026-11-28-spring_chain.md): both variants take the O(n) tree
    factor, each step's Newton loop in one compiled call and the whole-run call between output rows, and the
    solver's text (what ``flexmb info`` prints after "linear solver:") says so, naming the spring-dampers."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    import spring_chain as bench

    for variant in ("tsda", "joint"):
        model = bench.chain(100, variant, 2000.0, 2.0)
        integ = GeneralizedAlpha(model, rho_inf=0.9)
        assert integ.chol.kind == "tree" and integ.tree_step is not None, variant
        assert TreeRun.applies(integ, None), variant
        text = integ.describe_solver(fixed_steps=True, callback=False)
        assert "O(n) tree factorization" in text and "each step's Newton loop in one compiled call" in text, text
        assert "in Python" not in text, text
        assert ("spring-dampers across single joints" in text) == (variant == "tsda"), text
