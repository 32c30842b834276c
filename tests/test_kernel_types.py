"""The compiled element step's inputs have one numba type whatever elements a model has.

numba compiles a kernel once per tuple of argument types: an array the model holds read-only is typed apart from a
writable one of the same shape, so a family whose arrays are read-only in one model and writable (empty) in another
would compile every kernel of the step (element_kernels.element_newton_step, element_run, ...) a second time, minutes
at a model's first run, after warm_up (flexmb/app/warm_up.py) compiled them for the other kind. The loads of the
motion's node array was such a case (a model with a drag load compiled the whole step again: 440-560 s of the test
suite on a loaded 2-core machine).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from numba import typeof

from flexmb.app import warm_up
from flexmb.engine.assembly import Assembler
from flexmb.solvers.element_step import ElementStep

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import motion_load_models as mlm  # noqa: E402


def _types(model) -> list[str]:
    """The numba types of every array in the compiled step's family tuples (ElementStep.fams), in order."""
    out: list[str] = []

    def walk(x) -> None:
        if isinstance(x, tuple):
            for y in x:
                walk(y)
        else:
            out.append(str(typeof(x)))

    walk(ElementStep(model, Assembler(model)).fams)
    return out


@pytest.mark.parametrize("build", [lambda: warm_up._loop("bushing"), lambda: warm_up._loop("bushing", extra="actuator"),
                                   mlm.drag_pendulum, mlm.pd_body, lambda: mlm.pd_body(0.01), mlm.follower_beam],
                         ids=["bushing", "actuator", "drag_load", "pd_load", "pd_sampled_load", "follower_beam"])
def test_every_model_gives_the_step_the_types_of_the_warm_up_model(build) -> None:
    reference = _types(warm_up._loop("rigid"))  # a model warm_up runs: its types are compiled at set-up
    types = _types(build())
    assert len(types) == len(reference)
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(reference, types)) if a != b]
    assert not differ, f"array types that would compile the step again (position, warm-up model, this model): {differ}"
