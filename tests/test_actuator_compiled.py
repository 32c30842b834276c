"""Prescribed-length actuators in the compiled Newton step (flexmb/solvers/actuator_step.py,
docs/actuator.md §7) against the Python step they replace:

* the same run bit for bit (every row, the step history, energies and work, the actuators' length,
  rate and force) on the dense, band and CHOLMOD factors, for a boom lifted by a cylinder, a four-bar
  closed by a rigid cut and pushed by a cylinder, a flexible boom (beams) lifted by a cylinder and a
  force actuator (a spring-damper with a force law, compiled by flexmb/solvers/law_step.py);
* and not only the same bits: the compiled run holds the lengths on L(t) to the closure tolerance
  (AL4) and its energy balance closes with the actuators' drive work to the balance's round-off;
* a length beyond reach fails with the Python step's message, naming the actuator;
* a length function numba could not compile (it calls a Python object) keeps the compiled path:
  the lengths are evaluated in Python once per step;
* the model's solver description names the compiled path.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_actuator import L0, A, boom
from test_element_run import _assert_same as _same_run
from test_element_run import _both as _both_runs
from test_element_step import _both
from test_tree_run import _assert_same

import flexmb as fm
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.element_step import ElementStep
from flexmb.solvers.generalized_alpha import GeneralizedAlpha

G0 = 9.81
WHOLE = "whole runs compiled between output rows"  # what `flexmb info` says of the whole-run call (test_run_path.py)
SECTION = fm.BeamSection(E=7e10, G=2.7e10, A=4e-4, Iy=2e-7, Iz=2e-7, J=4e-7, rho=2700.0)


def _stroke(t):
    """L(t) of the boom's cylinder: a stroke of 0.2 m amplitude."""
    return L0 + 0.2 * np.sin(3 * t)


def four_bar() -> fm.Model:
    """A four-bar closed by a rigid cut at B, its crank pushed by a cylinder from a ground point P
    (tests/test_actuator.py's rigid loop)."""
    return four_bar_builder().compile()


def four_bar_builder() -> fm.ModelBuilder:
    """The builder of :func:`four_bar`, not compiled (tests/test_coupling_run.py adds a geared flywheel)."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    O, A_, B_, C = np.zeros(3), np.array([0.0, 1.0, 0.0]), np.array([2.0, 1.2, 0.0]), np.array([2.0, 0.0, 0.0])
    for name, at, m, com in (("crank", O, 1.0, (0, 0.5, 0)), ("coupler", A_, 2.0, (1.0, 0.1, 0)),
                             ("rocker", C, 1.0, (0, 0.6, 0))):
        mb.add_node(name, at)
        mb.add_body(name, name, m, com, np.eye(3) * 0.1)
    mb.add_joint("O", "revolute", "ground", "crank", axis=(0, 0, 1))
    mb.add_joint("A", "revolute", "crank", "coupler", axis=(0, 0, 1))
    mb.add_joint("C", "revolute", "ground", "rocker", axis=(0, 0, 1))
    mb.add_rigid_cut("B", "coupler", "rocker", point=B_, free_rotation="z")
    P, Q = np.array([-1.0, -0.5, 0.0]), np.array([0.0, 0.5, 0.0])
    Lc = float(np.linalg.norm(Q - P))
    mb.add_actuator("cyl", "ground", "crank", point_a=P, point_b=Q, length=lambda t: Lc + 0.1 * np.sin(2 * t))
    return mb


def flexible_boom() -> fm.Model:
    """An aluminium beam of 2 m (2 elements) hinged to ground, lifted at its middle node by a cylinder
    from the ground point A (beams beside an actuator: its penalty blocks over the beam's node)."""
    mb = fm.ModelBuilder(gravity=(0.0, -G0, 0.0))
    nodes = mb.add_flexible_link("arm", (0.0, 0.0, 0.0), (2.0, 0.0, 0.0), 2, SECTION)
    mb.add_joint("pivot", "revolute", "ground", nodes[0], axis=(0.0, 0.0, 1.0))
    mb.add_body("tip", nodes[-1], 2.0, (0.0, 0.0, 0.0), np.eye(3) * 1e-3)
    d0 = float(np.linalg.norm(np.array([1.0, 0.0, 0.0]) - A))
    mb.add_actuator("cyl", "ground", nodes[1], point_a=A, length=lambda t: d0 + 0.05 * (1 - np.cos(4 * t)))
    return mb.compile()


def force_boom() -> fm.Model:
    """The boom held by a force actuator (a spring-damper with a force law: the compiled law path)."""
    return boom(force=lambda t, l, ldot: 400.0 * (l - L0) + 30.0 * ldot - 50.0 * (1 + 0.5 * np.sin(3 * t)))


MODELS = {"boom": lambda: boom(length=_stroke), "four_bar": four_bar, "flexible_boom": flexible_boom,
          "force_actuator": force_boom}


@pytest.mark.parametrize("solver", ["dense", "band", "cholmod"])
@pytest.mark.parametrize("name", list(MODELS))
def test_the_compiled_actuators_are_the_python_actuators_bit_for_bit(monkeypatch, name, solver) -> None:
    model = MODELS[name]()
    fast, slow, count = _both(monkeypatch, model, 0.2, 1e-3, output_every=2, linear_solver=solver)
    assert fast.status == slow.status == "finished"
    _assert_same(fast, slow)
    np.testing.assert_array_equal(fast.actuator("cyl"), slow.actuator("cyl"))
    np.testing.assert_array_equal(fast.energy["strain"], slow.energy["strain"])
    # every step compiled: its whole Newton loop (dense, band) or every iterate (CHOLMOD)
    if solver == "cholmod":
        assert count["iterate"] >= fast.stats["newton_iterations"] >= fast.stats["steps"] > 0 and count["newton"] == 0
    else:
        assert count["newton"] >= fast.stats["steps"] > 0 and fast.stats[f"{solver}_solver"] == 1.0
    # the physics of the compiled run: it moves, the energy balance closes with the actuator's drive work,
    # and a prescribed length is held to the closure tolerance (AL4). The balance's error is generalized-α's
    # own: O((ω h)²) of the energy in the modes it damps at ρ∞ = 0.8; the flexible boom's overhang (1 m, its
    # 2 kg tip: k = 3EI/l³ = 4.2e4 N/m, ω ≈ 140 rad/s, (ω h)² ≈ 2e-2) rings with at most a tenth of the
    # energy exchanged in the start's transient, hence 2e-3 (measured 8e-7 boom, 1e-8 four-bar, 3e-5
    # flexible boom)
    e = fast.energy
    exchanged = max(np.abs(e["kinetic"]).max(), np.abs(e["potential"]).max(), np.abs(e["drive_work"]).max())
    assert exchanged > 0.0 and np.abs(fast.q - fast.q[0]).max() > 1e-3
    assert np.abs(fast.total_energy - fast.total_energy[0]).max() <= 2e-3 * exchanged
    if name != "force_actuator":
        target = model.elements["actuator"].length[0]
        L = np.array([target(t)[0] for t in fast.t])
        assert np.abs(fast.actuator("cyl", "length") - L).max() <= model.elements["actuator"].tol[0]


def test_a_length_beyond_reach_fails_with_the_python_message(monkeypatch) -> None:
    """The stroke past |A| + |B| stalls the closure at the largest penalty: the compiled loop gives the step
    back to the Python loop, which names the actuator as the Python step does, at the same time."""
    model = boom(lambda t: L0 + 2.0 * t)
    fast, slow, _ = _both(monkeypatch, model, 1.0, 1e-3, output_every=50, linear_solver="dense")
    assert fast.status.startswith("failed") and "actuator 'cyl'" in fast.status
    assert fast.status == slow.status
    _assert_same(fast, slow)


class _Table:
    """A length given by a Python object numba does not compile (a table looked up by a method)."""

    def __init__(self) -> None:
        self.t, self.L = np.linspace(0.0, 1.0, 101), L0 + 0.2 * np.sin(3 * np.linspace(0.0, 1.0, 101))

    def __call__(self, t: float) -> float:
        return float(np.interp(t, self.t, self.L))


def test_a_length_numba_cannot_compile_keeps_the_compiled_path(monkeypatch) -> None:
    """The length is evaluated in Python once per step (docs/actuator.md §7): any callable keeps the model on
    the compiled Newton loop, bit for bit with the Python step, and the description says the path."""
    model = boom(length=_Table(), velocity=lambda t: 0.6 * np.cos(3 * t), acceleration=lambda t: -1.8 * np.sin(3 * t))
    text = GeneralizedAlpha(model).describe_solver()
    assert "whole Newton loop in one compiled call" in text and "not compiled" not in text
    assert WHOLE in GeneralizedAlpha(model).describe_solver(fixed_steps=True, callback=False)
    fast, slow, count = _both(monkeypatch, model, 0.1, 1e-3, output_every=10)
    _assert_same(fast, slow)
    assert count["newton"] >= fast.stats["steps"] > 0


def test_the_actuator_models_take_the_compiled_step() -> None:
    """ElementStep applies to models with prescribed-length actuators on every matrix factor."""
    for build in MODELS.values():
        integ = GeneralizedAlpha(build())
        assert ElementStep.refusal(integ.model, integ.asm, True) == ""


@pytest.mark.parametrize("name, solver, every", [("boom", "dense", 7), ("boom", "band", 1), ("four_bar", "dense", 10),
                                                 ("four_bar", "band", 3), ("flexible_boom", "dense", 5),
                                                 ("flexible_boom", "band", 1)])
def test_actuator_runs_are_compiled_between_rows_bit_for_bit(monkeypatch, name, solver, every) -> None:
    """The whole-run call with the actuators' begin and end of step in it (actuator_projection.py) against the same
    run step by step (their projections in Python): every row, the actuator's length, rate and force, the step
    history, the energy balance with the drive work, the counters equal; on the boom the actuator projects with
    the Newton factor, on the four-bar beside the rigid cut with the projection factor of both (rigid_cut._elastic),
    on the flexible boom with the beams' mass in it (and their dissipation taken at the projected state)."""
    model = MODELS[name]()
    assert ElementRun.refusal(GeneralizedAlpha(model, linear_solver=solver)) == ""
    fast, slow, calls = _both_runs(monkeypatch, model, 0.3, 1e-3, output_every=every, linear_solver=solver)
    assert fast.status == "finished"
    _same_run(fast, slow)
    np.testing.assert_array_equal(fast.actuator("cyl"), slow.actuator("cyl"))
    assert calls and sum(calls) >= fast.stats["steps"] - len(fast.t)
    assert np.abs(fast.energy["drive_work"]).max() > 0.0


def test_a_length_not_finite_ends_the_call_and_the_python_step_names_it(monkeypatch) -> None:
    """A length that becomes NaN at t = 0.05 s: the compiled calls take the steps before it, the Python step
    fails at it with the message of the step-by-step run."""
    model = boom(lambda t: L0 + 0.1 * t if t < 0.05 else float("nan"))
    fast, slow, calls = _both_runs(monkeypatch, model, 0.1, 1e-3, output_every=10, linear_solver="dense")
    assert fast.status.startswith("failed") and "actuator 'cyl'" in fast.status and "not finite" in fast.status
    _same_run(fast, slow)
    assert sum(calls) >= 40
