"""README.md (issue 36): it fits on two screens (at most 150 lines), and every command it shows runs.

The README shows three commands and one Python example:

* the Python example runs as it is and prints what it computes;
* ``bash scripts/demo.sh`` runs here as written, in a copy of the repository's layout whose
  ``scripts/setup.sh`` is a stub: the set-up is what this test run stands in (the tests run in the
  environment it made); the demo's own steps — ``flexmb run`` of the case and ``flexmb animate`` —
  run for real and must leave the animation, the plots and the summary;
* ``bash scripts/test.sh`` would run this test suite again (and so this test): its cheaper
  equivalent runs the script as written with the set-up scripts and the Python of ``.venv`` replaced
  by stubs that record their calls, and checks that it sets up, requires ParaView and runs the whole
  suite with pytest (CI runs the real one: .ci/run);
* ``bash scripts/docs.sh`` builds the site (minutes); the same kind of stub run checks that it sets
  up, installs the ``docs`` extra, runs sphinx-build with warnings as errors into docs/_build/html
  and then the site checks, tests/test_docs_site.py (CI runs the real one: .ci/run).

Any other command added to the README fails :func:`test_every_readme_command_is_covered` until it
is covered here.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
COVERED = {"bash scripts/demo.sh", "bash scripts/test.sh", "bash scripts/docs.sh"}


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", README, flags=re.M | re.S)


def _commands() -> list[str]:
    return [line.split("#", 1)[0].strip() for block in _blocks("bash") for line in block.splitlines()
            if line.split("#", 1)[0].strip()]


def test_readme_fits_on_two_screens():
    assert len(README.splitlines()) <= 150


def test_every_readme_command_is_covered():
    assert _commands() == ["bash scripts/demo.sh", "bash scripts/test.sh", "bash scripts/docs.sh"]
    assert set(_commands()) <= COVERED
    assert [b for b in _blocks(r"\w*") if b not in _blocks("bash") + _blocks("python")] == []


def test_ci_runs_exactly_the_readme_test_command_then_builds_the_site():
    """.ci/run's commands (after its cd to the repository) are the README's test and docs commands, as written."""
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()]
    commands = [line for line in lines if line and not line.startswith(("#", "set ", "cd "))]
    readme = _commands()
    assert commands == [c for c in readme if c in ("bash scripts/test.sh", "bash scripts/docs.sh")], commands
    assert commands == ["bash scripts/test.sh", "bash scripts/docs.sh"]


def test_readme_images_exist():
    for target in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", README):
        assert (ROOT / target).is_file(), target


def _env() -> dict:
    env = dict(os.environ, MPLBACKEND="Agg")
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def test_readme_python_example_runs(tmp_path):
    (example,) = _blocks("python")
    assert len(example.splitlines()) <= 15
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    p = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=_env(),
                       timeout=600)
    assert p.returncode == 0, p.stderr
    first, second = p.stdout.splitlines()
    assert first.startswith("finished ") and second.startswith("degrees of freedom: 50 velocity coordinates")


def _layout(tmp_path: Path, scripts: list[str]) -> Path:
    """A copy of the repository's layout in ``tmp_path``: the named scripts as they are, stubbed
    set-up scripts that record their calls in calls.txt, and the repository's cases/."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    for name in scripts:
        shutil.copy(ROOT / "scripts" / name, repo / "scripts" / name)
    for stub in ("setup.sh", "setup-paraview.sh"):
        (repo / "scripts" / stub).write_text(f'echo "{stub} $*" >> "$(dirname "$0")/../calls.txt"\n', encoding="utf-8")
    (repo / "cases").symlink_to(ROOT / "cases")
    return repo


def test_demo_script_runs_its_steps(tmp_path):
    repo = _layout(tmp_path, ["demo.sh"])
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "flexmb").symlink_to(Path(sys.executable).parent / "flexmb")
    out = tmp_path / "demo"
    p = subprocess.run(["bash", str(repo / "scripts" / "demo.sh"), str(out)], cwd=tmp_path, capture_output=True,
                       text=True, env=_env(), timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert (repo / "calls.txt").read_text() == "setup.sh \n"
    for f in ("animation.gif", "cut_force.png", "sigma_min.png", "summary.json", "paraview/change_point_four_bar.pvd"):
        assert (out / f).is_file(), f
    assert "Look at:" in p.stdout and "passed" in p.stdout


def _stub_python(repo: Path) -> None:
    (repo / ".venv" / "bin").mkdir(parents=True)
    py = repo / ".venv" / "bin" / "python"
    py.write_text('#!/usr/bin/env bash\necho "python $*" >> "$(dirname "$0")/../../calls.txt"\n', encoding="utf-8")
    py.chmod(0o755)


def test_test_script_sets_up_then_runs_the_whole_suite(tmp_path):
    repo = _layout(tmp_path, ["test.sh"])
    _stub_python(repo)
    p = subprocess.run(["bash", str(repo / "scripts" / "test.sh")], cwd=tmp_path, capture_output=True, text=True,
                       env={k: v for k, v in _env().items() if k != "FLEXMB_REQUIRE_PARAVIEW"}, timeout=60)
    assert p.returncode == 0, p.stderr
    assert (repo / "calls.txt").read_text().splitlines() == ["setup.sh ", "setup-paraview.sh ",
                                                                "python -m pytest -q -n 2 --durations=30"]
    assert "export FLEXMB_REQUIRE_PARAVIEW=1" in (ROOT / "scripts" / "test.sh").read_text()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_docs_script_sets_up_builds_with_warnings_as_errors_then_checks_the_site(tmp_path):
    repo = _layout(tmp_path, ["docs.sh"])
    _stub_python(repo)
    env = _env()
    if shutil.which("chromium") is None:  # the script would install it: stand in for it here
        fake = tmp_path / "bin"
        fake.mkdir()
        (fake / "chromium").write_text("#!/bin/sh\n", encoding="utf-8")
        (fake / "chromium").chmod(0o755)
        env["PATH"] = f"{fake}{os.pathsep}{env['PATH']}"
    p = subprocess.run(["bash", str(repo / "scripts" / "docs.sh")], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    calls = (repo / "calls.txt").read_text().splitlines()
    assert calls[0] == "setup.sh " and calls[1] == "python -m pip install -q -e .[docs]", calls
    assert calls[2].startswith("python -m sphinx -W --keep-going -b html") and calls[2].endswith("docs docs/_build/html")
    assert calls[3] == "python -m pytest -q -p no:cacheprovider tests/test_docs_site.py", calls
    assert "bash scripts/docs.sh" in (ROOT / ".ci" / "run").read_text()
