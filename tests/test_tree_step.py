"""The compiled Newton loop of rigid trees (flexmb/solvers/tree_step.py) against the Python step it
replaces: the same states bit for bit, step after step, for every feature a plain rigid tree may
have (joint springs and dampers, drives, applied joint forces, fixed nodal loads, ball joints,
prismatic joints, long chains without the position tangent), the Python step's error messages
where Newton fails, and the models it must leave to the Python step."""

from __future__ import annotations

import math

import numpy as np
import pytest

import flexmb as fm
from flexmb.errors import SolverError
from flexmb.solvers.generalized_alpha import GeneralizedAlpha


def _rod(mb: fm.ModelBuilder, name: str, x0: float, length: float = 1.0, mass: float = 1.0) -> None:
    mb.add_node(name, position=(x0, 0.0, 0.0))
    mb.add_body(f"{name}_body", node=name, mass=mass, com=(0.5 * length, 0.0, 0.0),
                inertia=np.diag([1e-3 * mass * length**2, mass * length**2 / 12, mass * length**2 / 12]))


def featured_tree() -> fm.Model:
    """Driven revolute, springy revolute, prismatic with a joint force, a spherical joint carrying a
    body with a fixed-axes load that varies in time; gravity."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    _rod(mb, "a", 0.0)
    mb.add_joint("ja", "revolute", parent="ground", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_drive("ja", lambda t: 0.5 * np.sin(2.0 * t))
    _rod(mb, "b", 1.0)
    mb.add_joint("jb", "revolute", parent="a", child="b", point=(1, 0, 0), axis=(0, 0, 1), q0=0.3, u0=-1.0)
    mb.add_joint_spring("jb", stiffness=40.0, damping=0.5, rest=0.1)
    _rod(mb, "c", 2.0, mass=0.5)
    mb.add_joint("jc", "prismatic", parent="b", child="c", point=(2, 0, 0), axis=(1, 0, 0), q0=0.05)
    mb.add_joint_spring("jc", stiffness=200.0, damping=1.0)
    mb.add_joint_force("jc", lambda t: 3.0 * np.cos(5.0 * t))
    _rod(mb, "d", 3.0, mass=0.7)
    mb.add_joint("jd", "spherical", parent="c", child="d", point=(3, 0, 0), q0=(0.1, -0.2, 0.3), u0=(1.0, 0.5, -2.0))
    mb.add_load("push", "d", force=lambda t: np.array([0.0, 0.0, 2.0 * np.sin(3.0 * t)]), moment=(0.0, 0.1, 0.0))
    return mb.compile()


def chain(n: int) -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    parent = "ground"
    for i in range(n):
        _rod(mb, f"n{i}", 0.1 * i, length=0.1, mass=0.1)
        mb.add_joint(f"j{i}", "revolute", parent=parent, child=f"n{i}", point=(0.1 * i, 0, 0), axis=(0, 0, 1))
        parent = f"n{i}"
    return mb.compile()


def free_body() -> fm.Model:
    mb = fm.ModelBuilder(gravity=(0.0, 0.0, 0.0))
    mb.add_node("b", position=(0, 0, 0))
    mb.add_body("body", node="b", mass=2.0, com=(0.0, 0.0, 0.0), inertia=np.diag([1.0, 2.0, 3.0]))
    mb.add_joint("free", "free", parent="ground", child="b", u0=(0.1, 0.0, 0.0, 0.2, 3.0, 0.1))
    return mb.compile()


def _pair(model: fm.Model, **kw) -> tuple[GeneralizedAlpha, GeneralizedAlpha]:
    compiled = GeneralizedAlpha(model, **kw)
    python = GeneralizedAlpha(model, **kw)
    python.tree_step = None
    return compiled, python


@pytest.mark.parametrize("build, steps, h", [(featured_tree, 400, 2e-3), (lambda: chain(10), 200, 1e-3),
                                             (lambda: chain(40), 100, 1e-3), (free_body, 300, 5e-3)],
                         ids=["featured", "chain10", "chain40", "free_body"])
def test_compiled_step_is_the_python_step_bit_for_bit(build, steps: int, h: float) -> None:
    model = build()
    A, B = _pair(model, rho_inf=0.8)
    assert A.tree_step is not None
    assert A.position_tangent == (model.free_u.size <= GeneralizedAlpha.position_tangent_max)
    sa, _ = A.initial_acceleration(model.initial_state())
    sb, _ = B.initial_acceleration(model.initial_state())
    aa, ab = sa.udot.copy(), sb.udot.copy()
    total_it = 0
    for _ in range(steps):
        sa, aa, eva, ia = A.step(sa, aa, h)
        sb, ab, evb, ib = B.step(sb, ab, h)
        for name in ("q", "balls", "u", "udot"):
            np.testing.assert_array_equal(getattr(sa, name), getattr(sb, name), err_msg=name)
        np.testing.assert_array_equal(aa, ab)
        assert (ia.iterations, ia.factorizations, ia.residual) == (ib.iterations, ib.factorizations, ib.residual)
        for name in ("x", "R", "V", "zeta", "S"):
            np.testing.assert_array_equal(getattr(eva.kin, name), getattr(evb.kin, name), err_msg=name)
        np.testing.assert_array_equal(eva.Mb, evb.Mb)
        np.testing.assert_array_equal(eva.bias, evb.bias)
        np.testing.assert_array_equal(eva.tau, evb.tau)
        np.testing.assert_array_equal(eva.residual(sa.udot), evb.residual(sb.udot))
        total_it += ia.iterations
    assert A.timings["compiled_step"] > 0.0 and B.timings["compiled_step"] == 0.0
    assert A.chol.n_factorize == B.chol.n_factorize
    assert total_it >= steps  # Newton really iterated: at least one correction per step
    assert np.abs(sa.u).max() > 0.1  # and the model moved


def test_simulate_takes_the_compiled_step_and_gives_the_python_results() -> None:
    model = featured_tree()
    res = fm.simulate(model, 0.5, 2e-3, output_every=25)
    assert res.stats["time_compiled_step"] > 0.0
    ref = fm.simulate(model, 0.5, 2e-3, output_every=25, reuse_factor=False)  # reuse_factor=False: same step, also compiled
    np.testing.assert_array_equal(res.q, ref.q)
    # energy balance of the recorded rows (springs, dampers, drive, joint force, load): the step is physics, not only bits
    e = res.energy
    total = e["kinetic"] + e["potential"] + e["dissipated"] - e["drive_work"] - e["load_work"]
    assert np.abs(total - total[0]).max() < 1e-3 * (np.abs(e["kinetic"]).max() + np.abs(e["potential"]).max())


def test_failure_falls_back_to_the_python_step_and_its_message() -> None:
    """A step that cannot converge: the compiled loop gives up and the Python step raises, naming
    the time and the coordinates."""
    model = chain(3)
    A, B = _pair(model, max_iter=1, rtol=1e-16)
    sa, _ = A.initial_acceleration(model.initial_state())
    sb, _ = B.initial_acceleration(model.initial_state())
    with pytest.raises(SolverError) as ea:
        A.step(sa, sa.udot.copy(), 1e-2)
    with pytest.raises(SolverError) as eb:
        B.step(sb, sb.udot.copy(), 1e-2)
    assert str(ea.value) == str(eb.value)
    assert "Newton did not converge" in str(ea.value) and "j" in str(ea.value)
    assert A.timings["compiled_step"] > 0.0


def test_models_the_compiled_step_leaves_to_python() -> None:
    """Friction, elements joining two nodes and an explicit reuse_factor=True keep the Python step (follower loads
    take the compiled step: tests/test_motion_load_compiled.py)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    _rod(mb, "a", 0.0)
    mb.add_joint("ja", "revolute", parent="ground", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_load("f", "a", force=(1.0, 0.0, 0.0), follower=True)
    assert GeneralizedAlpha(mb.compile()).tree_step is not None
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    _rod(mb, "a", 0.0)
    mb.add_joint("ja", "revolute", parent="ground", child="a", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_joint_friction("ja", mu=0.1, pin_radius=0.01)
    assert GeneralizedAlpha(mb.compile()).tree_step is None
    assert GeneralizedAlpha(chain(3), reuse_factor=True).tree_step is None
    assert GeneralizedAlpha(chain(3), linear_solver="cholmod").tree_step is None
    assert GeneralizedAlpha(chain(3)).tree_step is not None
    assert math.isfinite(fm.simulate(chain(3), 0.01, 1e-3).q[-1, 0])


def test_warm_up_passes_through_the_compiled_step_and_the_others() -> None:
    """scripts/setup.sh compiles the kernels with flexmb.app.warm_up: its first model takes the compiled step,
    the others the CHOLMOD paths (beam, bushing)."""
    from flexmb.app.warm_up import _models, warm_up

    models = _models()
    assert GeneralizedAlpha(models[0]).tree_step is not None
    assert all(GeneralizedAlpha(m).tree_step is None for m in models[1:])
    assert warm_up() > 0.0


def test_a_newton_correction_goes_into_a_copy_with_its_size() -> None:
    """tree_step.corrected (the Python Newton loop's update): u̇[free] - dx in a new array, the input
    unchanged, and max |dx| (NaN if dx has one, as _absmax)."""
    from flexmb.solvers.tree_step import corrected

    udot = np.linspace(-1.0, 1.0, 7)
    free = np.array([0, 2, 3, 6])
    dx = np.array([0.5, -2.0, 1e-3, 0.25])
    got, size = corrected(udot, free, dx)
    want = udot.copy()
    want[free] -= dx
    assert np.array_equal(got, want) and got is not udot
    assert np.array_equal(udot, np.linspace(-1.0, 1.0, 7))
    assert size == 2.0
    assert np.isnan(corrected(udot, free, np.array([0.0, np.nan, 1.0, 2.0]))[1])
