"""`flexmb info` names the whole-run path (GeneralizedAlpha.run_path, ElementRun.refusal): whether a run's steps
between two output rows go through one compiled call (flexmb/solvers/tree_run.py, element_run.py) or one by one,
and why. What it says is checked against what a run does: a short fixed-step run without callback takes the
compiled run's call exactly where the text says "whole runs compiled between output rows"."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cut_mechanisms import four_bar, n_four_bar
from test_actuator_compiled import flexible_boom
from test_actuator_compiled import four_bar as pushed_four_bar
from test_element_run import beam_loop, bushing_loop, mixed_loop, wound_disk
from test_tree_step import chain

import flexmb as fm
from flexmb.app.cli import EXIT_OK, main
from flexmb.solvers.element_run import ElementRun
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.tree_run import TreeRun

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from motion_load_models import follower_beam, follower_pendulum  # noqa: E402

WHOLE = "whole runs compiled between output rows"

MODELS = {
    "bushing_loop": (lambda: bushing_loop(), {}),
    "bushing_loop_cholmod": (lambda: bushing_loop(), {"linear_solver": "cholmod"}),
    "bushing_loop_reused_factor": (lambda: bushing_loop(), {"reuse_factor": True}),
    "rigid_cut_n_four_bar": (lambda: n_four_bar(3, "rigid"), {}),
    "rigid_cuts_beside_beams": (lambda: beam_loop(rigid=True), {}),
    "rigid_cut_four_bar": (lambda: four_bar("rigid"), {}),
    "rigid_cut_beside_force_law": (lambda: mixed_loop(spring_damper=True, law=True), {}),  # projected in the call
    "rigid_cut_beside_rotational": (lambda: mixed_loop(rotational=True), {}),
    "chain": (lambda: chain(4), {}),
    "rotational_spring_damper": (lambda: wound_disk(), {}),  # element state: the turns counted inside the call
    "rotational_torque_law_band": (lambda: wound_disk(law=True), {"linear_solver": "band"}),
    "follower_beam": (follower_beam, {}),  # follower loads: their values per step evaluated before the call
    "follower_tree": (follower_pendulum, {}),
    "actuator_beside_rigid_cut": (pushed_four_bar, {"linear_solver": "band"}),  # their projections in the call
    "actuator_beside_beams": (flexible_boom, {}),
}


def _calls(monkeypatch, model: fm.Model, **kw) -> int:
    """Steps a fixed-step run of 20 steps without callback took in compiled whole-run calls."""
    taken = [0]
    for cls in (ElementRun, TreeRun):
        original = cls.run

        def counting(self, st, a, dt, n, original=original):
            out = original(self, st, a, dt, n)
            taken[0] += len(out[3])
            return out
        monkeypatch.setattr(cls, "run", counting)
    res = fm.simulate(model, t_end=0.02, dt=1e-3, output_every=5, **kw)
    assert res.status == "finished"
    return taken[0]


@pytest.mark.parametrize("name", list(MODELS))
def test_what_info_says_is_what_a_run_does(monkeypatch, name) -> None:
    """A model whose text says "whole runs compiled between output rows" runs all its steps but the last in
    compiled whole-run calls; one whose text says "steps one by one" takes none, and names a reason."""
    build, kw = MODELS[name]
    model = build()
    text = GeneralizedAlpha(model, **kw).run_path(fixed_steps=True, callback=False)
    taken = _calls(monkeypatch, model, **kw)
    if text.startswith(WHOLE):
        assert taken == 19, (text, taken)  # every step but the last (Python: it may be shortened)
    else:
        assert text.startswith("steps one by one from Python (no whole-run call: ") and taken == 0, (text, taken)


@pytest.mark.parametrize("name", ["rotational_spring_damper", "rotational_torque_law_band", "follower_beam",
                                  "follower_tree", "rigid_cut_beside_force_law", "rigid_cut_beside_rotational",
                                  "rigid_cuts_beside_beams", "actuator_beside_rigid_cut", "actuator_beside_beams"])
def test_turning_springs_and_follower_loads_take_the_whole_run(name) -> None:
    """Rotational spring-dampers (their reference angles (R3a) set in the call) and follower loads (their values at
    every step's end evaluated before it), on the element run and the tree run, rigid cuts beside a force law, a
    rotational spring-damper or beams (their power at the projected state in the call), and prescribed-length
    actuators beside a rigid cut or beams (their projections in the call): `flexmb info` names the whole run."""
    build, kw = MODELS[name]
    text = GeneralizedAlpha(build(), **kw).run_path(fixed_steps=True, callback=False)
    module = "tree_run" if name == "follower_tree" else "element_run"
    assert text.startswith(WHOLE) and f"flexmb/solvers/{module}.py" in text, text


def test_the_reasons_named() -> None:
    """CHOLMOD and a factor kept over steps keep the Newton loop out of one call; a callback, error-controlled
    steps; the element run's reason is ElementRun.refusal's."""
    cholmod = GeneralizedAlpha(bushing_loop(), linear_solver="cholmod")
    assert "no whole-run call: each step's Newton loop is not one compiled call" in cholmod.run_path()
    assert ElementRun.refusal(cholmod) == "each step's Newton loop is not one compiled call"
    integ = GeneralizedAlpha(bushing_loop())
    assert ElementRun.refusal(integ) == "" and ElementRun.refusal(integ, lambda st, ev: None) != ""
    assert integ.run_path(fixed_steps=True, callback=False).startswith(WHOLE + ": all steps between two output rows "
                                                                       "in one call (flexmb/solvers/element_run.py)")
    assert "error-controlled steps" in integ.run_path(fixed_steps=False, callback=False)
    assert "callback sees every step's state" in integ.run_path(fixed_steps=True, callback=True)
    unknown = integ.run_path()  # conditions not known: named
    assert unknown.startswith("with fixed steps and no callback, " + WHOLE) and "callback one by one" in unknown
    assert "flexmb/solvers/tree_run.py" in GeneralizedAlpha(chain(4)).run_path(True, False)
    assert WHOLE in GeneralizedAlpha(bushing_loop()).describe_solver(fixed_steps=True, callback=False)


def test_flexmb_info_says_it_for_the_case(capsys) -> None:
    """`flexmb info`: the Bennett linkage (bushings, fixed steps, no monitor) and the excavator (cylinders, a rigid
    cut and a flexible stick) run whole; the six-link case's monitor sees every step, so its run goes step by step;
    with --param dt=auto, error-controlled steps."""
    for case in ("bennett_linkage.py", "excavator.py"):
        assert main(["info", str(ROOT / "cases" / case)]) == EXIT_OK
        out = capsys.readouterr().out
        assert WHOLE in out and "flexmb/solvers/element_run.py" in out, case
    assert main(["info", str(ROOT / "cases" / "zahariev_six_link.py")]) == EXIT_OK
    out = capsys.readouterr().out
    assert "steps one by one from Python (the run's callback sees every step's state)" in out
    assert main(["info", str(ROOT / "cases" / "bennett_linkage.py"), "--param", "dt='auto'"]) == EXIT_OK
    assert "error-controlled steps: the whole-run call takes fixed steps only" in capsys.readouterr().out
