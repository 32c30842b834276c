"""benchmarks/step_regression.py measures the checkout it names, elements included.

A checkout without its own virtual environment runs with ``PYTHONPATH=DIR``; ``flexmb.elements`` is the top-level
folder ``elements/`` mapped into the package by the editable install, so without help such a worker imported DIR's
flexmb/ beside the installed checkout's elements/ (what the 2026-11-28 A/B runs measured). The worker's finder maps
``flexmb.elements`` to DIR/elements, and the driver refuses a worker whose imports lie outside DIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import step_regression  # noqa: E402


def test_a_checkout_without_a_venv_imports_its_own_elements(tmp_path, monkeypatch) -> None:
    (tmp_path / "elements").mkdir()
    (tmp_path / "elements" / "__init__.py").write_text("")
    cmd, env = step_regression._command(tmp_path)
    assert cmd == [sys.executable] and env["PYTHONPATH"] == env["STEP_REGRESSION_CHECKOUT"] == str(tmp_path)
    monkeypatch.setenv("STEP_REGRESSION_CHECKOUT", str(tmp_path))
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))
    step_regression._elements_from_checkout()
    spec = sys.meta_path[0].find_spec("flexmb.elements", None)
    assert Path(spec.origin) == tmp_path / "elements" / "__init__.py"
    assert spec.submodule_search_locations == [str(tmp_path / "elements")]  # flexmb.elements.beam etc. from there too
    assert sys.meta_path[0].find_spec("flexmb", None) is None  # flexmb itself: from PYTHONPATH


def test_a_checkout_with_its_venv_needs_no_mapping(tmp_path) -> None:
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").write_text("")
    cmd, env = step_regression._command(tmp_path)
    assert cmd == [str(tmp_path / ".venv" / "bin" / "python")] and "STEP_REGRESSION_CHECKOUT" not in env
