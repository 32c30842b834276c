"""The generalized-α step written once (flexmb/solvers/newton_loop.py) and its compiled back-ends
(flexmb/solvers/step_backends.py; docs/architecture.md P8):

* the back-end is chosen once per integrator, with the reason ``flexmb info`` prints (the compiled
  tree step for a plain rigid tree, the compiled element Newton step on the dense factor, none on
  CHOLMOD or where a test takes the compiled step away), and chosen again only then;
* a back-end whose ``try_step`` declines (returns None, as the compiled steps do where they do not
  succeed) leaves the step to the Python Newton loop: the states after every step are those of the
  compiled back-end and of an integrator with the Python iterates alone, bit for bit (three paths:
  the compiled step, the Python loop around the compiled iterates, the Python loop and iterates),
  failed and halved steps included;
* what the step (newton_loop), the back-ends and the whole runs (tree_run, element_run) read and write of the
  integrator is exactly what the ``Integrator`` Protocol names (flexmb/solvers/integrator_protocol.py: they
  import no GeneralizedAlpha, docs/architecture.md P4), and a GeneralizedAlpha has all of it.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import numpy as np
import pytest
from test_element_step import featured_flexible
from test_tree_step import chain, featured_tree

from flexmb.solvers import step_backends
from flexmb.solvers.generalized_alpha import GeneralizedAlpha
from flexmb.solvers.integrator_protocol import Integrator

STEP_MODULES = ("newton_loop", "step_backends", "tree_run", "element_run")  # below the integrator, reading it


def test_the_backend_is_chosen_once_with_its_reason() -> None:
    tree = GeneralizedAlpha(chain(3))
    assert tree.backend is not None and tree.backend.name == "tree_step"
    assert tree.backend is tree.backend  # chosen once, not per step
    assert tree.step_path().startswith("each step's Newton loop in one compiled call") and \
        tree.step_path() in tree.describe_solver()
    tree.tree_step = None  # as the tests comparing with the Python loop do: chosen again
    assert tree.backend is None and tree.step_path().startswith("Newton in Python")
    flexible = GeneralizedAlpha(featured_flexible())
    assert flexible.chol.kind == "dense" and flexible.backend.name == "element_newton_step"
    assert flexible.step_path() == flexible.newton_path() and flexible.step_path() in flexible.describe_solver()
    cholmod = GeneralizedAlpha(featured_flexible(), linear_solver="cholmod")
    assert cholmod.backend is None and "CHOLMOD is called from Python" in cholmod.step_path()


class _Declining:
    """A back-end that never takes a step (counts the offers)."""

    name = "declining"

    def __init__(self) -> None:
        self.offers = 0

    def try_step(self, integ, b):
        self.offers += 1
        return None


def _states(integ: GeneralizedAlpha, steps: int, h: float) -> list[np.ndarray]:
    """The states after each of ``steps`` steps of size h (GeneralizedAlpha.advance: a step that fails
    is halved, as in a run; the flexible model's first step of 1 ms is)."""
    st, _ = integ.initial_acceleration(integ.model.initial_state())
    a = st.udot.copy()
    out = []
    for _ in range(steps):
        st, a, _, _ = integ.advance(st, a, h)
        out.append(np.concatenate([st.q, st.balls.ravel(), st.u, st.udot, a]))
    return out


@pytest.mark.parametrize("build, python_only, steps, h",
                         [(featured_tree, "tree_step", 150, 2e-3), (featured_flexible, "element_step", 60, 1e-3)],
                         ids=["tree", "flexible"])
def test_a_declining_backend_leaves_the_python_step_bit_for_bit(monkeypatch, build, python_only, steps, h) -> None:
    model = build()
    compiled = GeneralizedAlpha(model)
    assert compiled.backend is not None
    python = GeneralizedAlpha(model)
    setattr(python, python_only, None)  # the Python iterates alone, no back-end
    assert python.backend is None
    declining = _Declining()
    monkeypatch.setattr(step_backends, "choose_backend", lambda integ: (declining, "declines every step"))
    offered = GeneralizedAlpha(model)
    assert offered.backend is declining and offered.step_path() == "declines every step"
    a, b, c = _states(compiled, steps, h), _states(python, steps, h), _states(offered, steps, h)
    assert declining.offers >= offered.substeps >= steps  # every attempt offered, failed and halved ones too
    assert compiled.substeps == python.substeps == offered.substeps
    for k, (x, y, z) in enumerate(zip(a, b, c)):
        assert np.array_equal(x, y) and np.array_equal(y, z), f"step {k}"


def _integrator_reads(source: str) -> set[str]:
    """The attributes a module reads or writes of the integrator: of ``integ`` and of ``self.integ``."""
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            v = node.value
            if (isinstance(v, ast.Name) and v.id == "integ") or (isinstance(v, ast.Attribute) and v.attr == "integ"):
                out.add(node.attr)
    return out


def test_the_integrator_protocol_names_what_the_step_modules_use_and_the_integrator_has_it() -> None:
    assert _integrator_reads("integ.a = self.integ.b(integ.c)\nx.integ_d = 1") == {"a", "b", "c"}
    named = set(Integrator.__annotations__) | {n for n, v in vars(Integrator).items()
                                               if inspect.isfunction(v) and not n.startswith("__")}
    folder = Path(step_backends.__file__).parent
    used = set().union(*(_integrator_reads((folder / f"{m}.py").read_text()) for m in STEP_MODULES))
    assert used == named, f"used, not named: {sorted(used - named)}; named, not used: {sorted(named - used)}"
    for integ in (GeneralizedAlpha(chain(3)), GeneralizedAlpha(featured_flexible())):
        assert not [n for n in sorted(named) if not hasattr(integ, n)]
