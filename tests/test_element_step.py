"""The compiled Newton iterates of models with beams (flexmb/solvers/element_step.py) against the
Python iterates they replace: the same run bit for bit (every row, the step history, the energies
and work, the counters) for every feature such a model may have (bodies, drives, joint springs and
dampers, applied joint forces, fixed nodal loads, ball joints, damped and undamped beams, dense
output and error-controlled steps, halved steps), the same message where a run fails, and the
models left to the Python iterates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_tree_run import _assert_same

import flexmb as fm
from flexmb.elements import register, unregister
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

SECTION = fm.BeamSection(E=2.1e11, G=8.1e10, A=1e-4, Iy=1e-9, Iz=1e-9, J=2e-9, rho=7800.0)


def falling_link(n: int = 6) -> fm.Model:
    """A steel strip pinned at one end, released horizontal under gravity (undamped beams only)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), n, SECTION)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    return mb.compile()


def featured_flexible(joint_force=lambda t: 0.2 * np.cos(3.0 * t)) -> fm.Model:
    """A driven crank (body) carrying a damped flexible link through a springy revolute; a body on a
    ball joint at the link's tip with a time-varying fixed-axes load; an applied joint force."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("crank", position=(0.0, 0.0, 0.0))
    mb.add_body("crank_body", node="crank", mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.diag([1e-3, 4e-3, 4e-3]))
    mb.add_joint("drive", "revolute", parent="ground", child="crank", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_drive("drive", lambda t: 2.0 * t + 0.3 * np.sin(5.0 * t))
    nodes = mb.add_flexible_link("link", (0.2, 0.0, 0.0), (0.7, 0.0, 0.0), 4, SECTION, damping=1e-4)
    mb.add_joint("elbow", "revolute", parent="crank", child=nodes[0], point=(0.2, 0, 0), axis=(0, 0, 1), q0=0.2)
    mb.add_joint_spring("elbow", stiffness=5.0, damping=0.05, rest=0.1)
    mb.add_joint_force("elbow", joint_force)
    mb.add_node("tip", position=(0.7, 0.0, 0.0))
    mb.add_body("tip_body", node="tip", mass=0.2, com=(0.05, 0.0, 0.0), inertia=np.diag([1e-4, 2e-4, 2e-4]))
    mb.add_joint("wrist", "spherical", parent=nodes[-1], child="tip", point=(0.7, 0, 0), q0=(0.1, -0.2, 0.3),
                 u0=(1.0, 0.5, -2.0))
    mb.add_load("push", "tip", force=lambda t: np.array([0.0, 0.0, 0.5 * np.sin(3.0 * t)]), moment=(0.0, 0.01, 0.0))
    return mb.compile()


def bushing_four_bar() -> fm.Model:
    """The Grashof four-bar of tests/cut_mechanisms.py closed by a revolute bushing (default damping),
    its crank driven from rest: bodies and a bushing only."""
    from cut_mechanisms import four_bar, ramp

    return four_bar("elastic", th0=1.0, drive=ramp(0.0, 2 * np.pi, 0.5), k=1e7)


def bushing_and_beam_loop() -> fm.Model:
    """A crank (body) driving a damped flexible coupler whose end is held to a rocker (body on a pin) by
    a spherical bushing with given damping, and a second, stiff bushing welding a mass to ground on a
    prismatic joint: beams and bushings (full, spherical) together, with a joint spring."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    mb.add_node("crank", position=(0.0, 0.0, 0.0))
    mb.add_body("crank_body", node="crank", mass=1.0, com=(0.1, 0.0, 0.0), inertia=np.diag([1e-3, 4e-3, 4e-3]))
    mb.add_joint("drive", "revolute", parent="ground", child="crank", point=(0, 0, 0), axis=(0, 0, 1))
    mb.add_drive("drive", lambda t: 2.0 * t)
    nodes = mb.add_flexible_link("coupler", (0.2, 0.0, 0.0), (0.7, 0.4, 0.0), 3, SECTION, damping=1e-4)
    mb.add_joint("A", "revolute", parent="crank", child=nodes[0], point=(0.2, 0, 0), axis=(0, 0, 1))
    mb.add_node("rocker", position=(0.6, 0.0, 0.0))  # a crank-rocker: crank 0.2, coupler 0.64, rocker 0.41, ground 0.6 m
    mb.add_body("rocker_body", node="rocker", mass=0.5, com=(0.05, 0.2, 0.0), inertia=np.diag([2e-3, 2e-3, 4e-3]))
    mb.add_joint("O4", "revolute", parent="ground", child="rocker", point=(0.6, 0, 0), axis=(0, 0, 1))
    mb.add_joint_spring("O4", stiffness=3.0, damping=0.02)
    mb.add_bushing("B", nodes[-1], "rocker", stiffness=[2e5, 2e5, 2e5, 0, 0, 0], damping=[20.0] * 3 + [0.0] * 3,
                   point=(0.7, 0.4, 0.0), free_rotation="all")
    mb.add_node("mass", position=(0.0, -0.5, 0.0))
    mb.add_body("mass_body", node="mass", mass=0.3, com=(0, 0, 0), inertia=np.eye(3) * 1e-3)
    mb.add_joint("slide", "prismatic", parent="ground", child="mass", axis=(0, 1, 0))
    mb.add_bushing("weld", "ground", "mass", stiffness=[1e4] * 6, point=(0.0, -0.5, 0.0))
    return mb.compile()


def rigid_cut_four_bar() -> fm.Model:
    """The Grashof four-bar closed by a rigid cut (augmented Lagrangian: element state, projections)."""
    from cut_mechanisms import four_bar, ramp

    return four_bar("rigid", th0=1.0, drive=ramp(0.0, 2 * np.pi, 0.5))


def rigid_cut_n_four_bar() -> fm.Model:
    """The IFToMM A02 N-four-bar with 3 windows closed by rigid cuts, undriven."""
    from cut_mechanisms import n_four_bar

    return n_four_bar(3, "rigid")


def rigid_cut_beam_coupler() -> fm.Model:
    """A four-bar whose coupler is a beam, cut rigidly at the rocker (elastic elements beside a rigid cut:
    the projections in their own metric)."""
    from test_rigid_cut import beam_coupler_four_bar

    return beam_coupler_four_bar("rigid")


def _both(monkeypatch, model: fm.Model, *args, **kw) -> tuple[fm.Result, fm.Result, dict]:
    """The run with the compiled iterates (or, on the dense factor, the compiled Newton loop), the run
    with the Python ones, and how often each compiled path was taken (``iterate``: iterates in the
    Python loop; ``newton``: whole Newton loops)."""
    count = {"iterate": 0, "newton": 0}
    iterate, newton = ElementStep.iterate, ElementStep.newton

    def counting_iterate(self, udot, evaluate, first):
        count["iterate"] += 1
        return iterate(self, udot, evaluate, first)

    def counting_newton(self, *a):
        count["newton"] += 1
        return newton(self, *a)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "iterate", counting_iterate)
        mp.setattr(ElementStep, "newton", counting_newton)
        mp.setattr(ElementRun, "applies", staticmethod(lambda integ, callback: False))  # one step per call (test_element_run.py)
        fast = fm.simulate(model, *args, **kw)
    with monkeypatch.context() as mp:
        mp.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
        slow = fm.simulate(model, *args, **kw)
    return fast, slow, count


def _compiled(fast: fm.Result, count: dict, solver: str) -> None:
    """Every iterate (CHOLMOD) or every step's Newton loop (dense and band factors) was compiled."""
    if solver == "cholmod":
        assert count["iterate"] >= fast.stats["newton_iterations"] >= fast.stats["steps"] and count["newton"] == 0
        assert fast.stats["dense_solver"] == fast.stats["band_solver"] == 0.0
    else:
        assert count["newton"] >= fast.stats["substeps"] >= fast.stats["steps"]
        assert fast.stats[f"{solver}_solver"] == 1.0


@pytest.mark.parametrize("solver", ["cholmod", "dense", "band"])
@pytest.mark.parametrize("build, t_end, dt, kw", [
    (falling_link, 0.2, 1e-3, {"output_every": 5}),
    (featured_flexible, 0.3, 1e-3, {"output_every": 1}),
    (featured_flexible, 0.3, "auto", {"tol": 1e-4, "output_every": 1}),  # error-controlled steps, dense output
    (falling_link, 0.1, 2e-2, {"output_every": 1}),  # steps of 20 ms fail and are halved
    (bushing_four_bar, 0.3, 1e-3, {"output_every": 1}),
    (bushing_and_beam_loop, 0.2, 1e-3, {"output_every": 2}),
    (bushing_and_beam_loop, 0.2, "auto", {"tol": 1e-4, "output_every": 1}),
    (rigid_cut_four_bar, 0.3, 1e-3, {"output_every": 1}),
    (rigid_cut_n_four_bar, 0.3, 1e-3, {"output_every": 3}),
    (rigid_cut_beam_coupler, 0.2, 1e-3, {"output_every": 1}),
    (rigid_cut_four_bar, 0.3, "auto", {"tol": 1e-4, "output_dt": 0.01}),
], ids=["falling_link", "featured", "featured_auto", "halved", "bushing_four_bar", "bushings_and_beams",
        "bushings_and_beams_auto", "rigid_cut_four_bar", "rigid_cut_n_four_bar", "rigid_cut_beam_coupler",
        "rigid_cut_auto_dense_output"])
def test_the_compiled_iterates_are_the_python_iterates_bit_for_bit(monkeypatch, build, t_end, dt, kw, solver) -> None:
    model = build()
    fast, slow, count = _both(monkeypatch, model, t_end, dt, linear_solver=solver, **kw)
    _assert_same(fast, slow)
    assert fast.status == "finished"
    _compiled(fast, count, solver)
    np.testing.assert_array_equal(fast.element_forces, slow.element_forces)
    np.testing.assert_array_equal(fast.energy["strain"], slow.energy["strain"])
    # the physics, not only the same bits: the energy balance of the rows holds
    e = fast.energy
    total = fast.total_energy
    assert np.abs(total - total[0]).max() < 1e-2 * (np.abs(e["kinetic"]).max() + np.abs(e["potential"]).max())


def test_halved_steps_are_taken(monkeypatch) -> None:
    """The 'halved' case above really halves: steps of 20 ms on the stiff strip fail in Newton."""
    fast, slow, _ = _both(monkeypatch, falling_link(), 0.1, 2e-2, output_every=1)
    assert fast.stats["failed_steps"] > 0 and fast.stats["substeps"] > fast.stats["steps"]


@pytest.mark.parametrize("solver", ["cholmod", "dense", "band"])
def test_a_seed_case_with_beams_is_the_same(monkeypatch, solver) -> None:
    """The six-link mechanism (bodies, damped beams, a drive, a monitor callback) for 0.2 s; its 18
    unknowns take the dense factor by default."""
    from cases import zahariev_six_link as case
    model = case.build()
    assert GeneralizedAlpha(model).chol.backend == "dense"
    fast, slow, count = _both(monkeypatch, model, 0.2, 1e-3, output_every=10, rho_inf=case.DEFAULTS["rho_inf"],
                              linear_solver=solver)
    _assert_same(fast, slow)
    assert fast.status == "finished" and fast.stats["steps"] == 200
    _compiled(fast, count, solver)


@pytest.mark.parametrize("solver", ["cholmod", "dense", "band"])
def test_a_failure_gives_the_python_message(monkeypatch, solver) -> None:
    """A joint force turning infinite at t > 0.05 on the featured model: the same status and rows."""
    model = featured_flexible(lambda t: math.inf if t > 0.05 else 0.2)
    fast, slow, count = _both(monkeypatch, model, 0.2, 1e-3, output_every=10, linear_solver=solver)
    _assert_same(fast, slow)
    assert fast.status.startswith("failed") and "non-finite" in fast.status and "elbow" in fast.status
    assert count["iterate"] > 0  # the failing step repeated by the Python loop (its message)
    assert count["newton"] > 0 if solver != "cholmod" else count["newton"] == 0


@pytest.mark.parametrize("kind", ["user_family", "uncompiled_load", "no_beam"])
def test_models_left_to_the_python_iterates(kind) -> None:
    """An element family with no compiled kernels (a user's), a load of the motion numba does not compile and
    rigid trees keep the Python iterates (or the tree step); bearing friction is compiled
    (tests/test_friction_compiled.py), follower loads too (tests/test_motion_load_compiled.py)."""
    mb = fm.ModelBuilder(gravity=(0.0, -9.81, 0.0))
    if kind == "no_beam":
        mb.add_node("a", position=(0, 0, 0))
        mb.add_body("a_body", node="a", mass=1.0, com=(0.5, 0, 0), inertia=np.diag([1e-3, 0.1, 0.1]))
        mb.add_joint("pin", "revolute", "ground", "a", axis=(0, 0, 1))
        integ = GeneralizedAlpha(mb.compile(), linear_solver="cholmod")
        assert integ.element_step is None
        return
    nodes = mb.add_flexible_link("link", (0.0, 0.0, 0.0), (0.5, 0.0, 0.0), 3, SECTION)
    mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    if kind == "user_family":
        from test_element_extension import Springs, SpringSpec

        family = register(Springs())
        try:
            mb.add_element(family.name, SpringSpec("spring", "ground", nodes[-1], 100.0, 0.0, (0.5, -0.5, 0.0)))
            model = mb.compile()
            assert ElementStep.applies(model, GeneralizedAlpha(model).asm, True) is False
            assert GeneralizedAlpha(model).element_step is None
        finally:
            unregister(family.name)
        return
    else:
        class Push:  # a Python object: numba does not type it
            f = np.array([0.0, 1.0, 0.0])

        push = Push()
        mb.add_load("follow", nodes[-1], lambda t, x, R, v, w: push.f + 0.0 * v)
    model = mb.compile()
    assert ElementStep.applies(model, GeneralizedAlpha(model).asm, True) is False
    assert GeneralizedAlpha(model).element_step is None


def test_the_beam_and_bushing_models_take_the_compiled_iterates() -> None:
    for model in (falling_link(), featured_flexible(), bushing_four_bar(), bushing_and_beam_loop(), rigid_cut_four_bar(),
                  rigid_cut_beam_coupler()):
        integ = GeneralizedAlpha(model)
        assert isinstance(integ.element_step, ElementStep)


def test_without_bodies_the_compiled_iterates_share_one_zero_mass_array_and_form_no_axes_rates() -> None:
    """A beam model without bodies: every step's Mb is the same all-zero array (nothing writes it)
    and the iterates' Kinematics has no Sdot (only the tree solver reads it); with bodies each step
    has its own Mb."""
    from flexmb.solvers.initial import relaxed_start

    model = falling_link()
    integ = GeneralizedAlpha(model)
    es = integ.element_step
    st, _ = integ.initial_acceleration(relaxed_start(model)[0])
    a = st.udot.copy()
    seen = []
    for _ in range(3):
        st, a, ev, _ = integ.step(st, a, 1e-3)
        seen.append(es.Mb)
        assert es.kinematics().Sdot is None
    assert all(m is seen[0] for m in seen) and not seen[0].any()
    assert np.abs(st.u).max() > 0.0  # it moved
    model = featured_flexible()
    integ = GeneralizedAlpha(model)
    st, _ = integ.initial_acceleration(relaxed_start(model)[0])
    a, mbs = st.udot.copy(), []
    for _ in range(2):
        st, a, _, _ = integ.step(st, a, 1e-3)
        mbs.append(integ.element_step.Mb)
    assert mbs[0] is not mbs[1] and mbs[1].any()


def test_a_matrix_made_indefinite_by_the_geometric_stiffness_is_refactorized_without_it(monkeypatch) -> None:
    """CHOLMOD refusing the 5th factorization (as it refuses an S made indefinite by compressive
    geometric stiffness): both iterates refill S with the material stiffness only (modified Newton),
    factorize that and go on: the same run bit for bit, one modified-Newton step counted."""
    from flexmb.engine.linalg import SparseCholesky
    from flexmb.errors import SolverError
    original = SparseCholesky.factorize
    refused = []

    def refusing(self, A=None):  # each run's solver refuses its 5th factorization once
        if self.n_factorize == 4 and self not in refused:
            refused.append(self)
            raise SolverError("iteration matrix is not positive definite (injected)")
        return original(self, A)
    monkeypatch.setattr(SparseCholesky, "factorize", refusing)
    model = featured_flexible()
    fast, slow, count = _both(monkeypatch, model, 0.05, 1e-3, output_every=5, linear_solver="cholmod")
    assert len(refused) == 2 and count["iterate"] > 0
    _assert_same(fast, slow)
    assert fast.stats["modified_newton_steps"] == slow.stats["modified_newton_steps"] == 1


def test_a_compiled_newton_loop_that_fails_is_repeated_by_the_python_loop(monkeypatch) -> None:
    """On the dense factor, a compiled Newton loop reporting a pivot that is not positive (injected
    at the 5th step, after it ran) leaves nothing behind: the Python loop repeats that step from its
    start with the same arithmetic, so the run is the Python run bit for bit."""
    from flexmb.solvers.tree_step import NOT_POSITIVE
    original = ElementStep.newton
    calls = [0]

    def failing(self, *a):
        calls[0] += 1
        out = original(self, *a)
        return (NOT_POSITIVE, *out[1:]) if calls[0] == 5 else out
    monkeypatch.setattr(ElementStep, "newton", failing)
    monkeypatch.setattr(ElementRun, "applies", staticmethod(lambda integ, callback: False))
    model = featured_flexible()
    fast = fm.simulate(model, 0.02, 1e-3, output_every=1)
    monkeypatch.setattr(ElementStep, "applies", staticmethod(lambda model, asm, cholmod: False))
    slow = fm.simulate(model, 0.02, 1e-3, output_every=1)
    assert calls[0] == 20 and fast.stats["dense_solver"] == 1.0
    _assert_same(fast, slow)


@pytest.mark.parametrize("build", [featured_flexible, lambda: __import__("test_tree_step").featured_tree()],
                         ids=["element_step", "tree_step"])
def test_the_compiled_steps_write_S_before_they_read_it(monkeypatch, build) -> None:
    """CompiledStep.buffers leaves the axes S and their rates Sd uninitialised (kinematics_arrays with
    zeroed=False: megabytes per step for a large model), because each evaluation writes every row of
    S and zeroes Sd first. With those arrays starting as NaN the runs are the same bit for bit, so no
    value is read before it is written (a NaN read would spread into the results)."""
    from flexmb.solvers import tree_step

    model = build()
    ref = fm.simulate(model, 0.05, 1e-3, linear_solver="cholmod" if build is featured_flexible else "auto")
    original = tree_step.kinematics_arrays

    def nan_arrays(m, zeroed=True):
        arrays = original(m, zeroed)
        if not zeroed:
            arrays[4].fill(np.nan)
            arrays[5].fill(np.nan)
        return arrays

    monkeypatch.setattr(tree_step, "kinematics_arrays", nan_arrays)
    got = fm.simulate(model, 0.05, 1e-3, linear_solver="cholmod" if build is featured_flexible else "auto")
    assert got.status == "finished"
    _assert_same(got, ref)
