"""Every tutorial script runs (docs/tutorials/, issue 36), and the getting-started page's example and
commands do what the page says.

Each tutorial runs as a user runs it, ``python docs/tutorials/<file>.py``, in a folder of its own,
and must end with exit code 0 and print what it checks (every run it makes finished, the numbers
it compares agree). The getting-started page shows docs/examples/first_mechanism.py, what it
prints, and the ``flexmb`` commands run on it: they run here, in a copy of the layout the page
assumes, and the printed lines must be the page's.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("tutorial_*.py"))
GETTING_STARTED = ROOT / "docs" / "getting_started.md"

#: what each tutorial must print (regular expressions), beyond its exit code
EXPECT = {
    "tutorial_01_pendulum_chain.py": [r"status: finished; period 1\.63\d+ s, closed form \(small swings\) 1\.63795 s",
                                      r"\|v - dx/dt\| at most \d\.\d+e-0[3-9] m/s"],
    "tutorial_02_four_bar_cuts.py": [r"bushing +finished: rocker within \d\.\de-0[6-9]",
                                     r"rigid +finished: rocker within \d\.\de-1\d",
                                     r"flexible +finished: rocker within \d\.\de-0[5-9]", r"damping chosen by flexmb"],
    "tutorial_03_flexible_link.py": [r" 8 elements: tip differs from 16 elements by \d\.\d+e-0[5-9] m"],
    "tutorial_04_singular.py": [r"σ_min at the start: 0\.0e\+00", r"status: finished; σ_min rose .* at t = 2\.0[67]\d s"],
    "tutorial_05_particles.py": [r"rod: largest difference of the joint angle \d\.\de-1[2-9] rad",
                                 r"plate: largest difference of the joint angle \d\.\de-1[2-9] rad"],
    "tutorial_06_statics_modal.py": [r"tip deflection 6\.34\d\d mm, beam theory 6\.3492 mm",
                                     r" 8 elements: \[ +8\.355 +25\.06"],
    "tutorial_07_study.py": [r"5 runs: 5 ran, 0 skipped", r"5 runs: 0 ran, 5 skipped",
                             r"the same final angles as the local sweep: True"],
    "tutorial_08_results.py": [r"status: finished \| rows: 2001", r"after node_position: \['x'\]",
                               r"window: 500 rows", r"short\.npz loads: finished True"],
}


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = dict(os.environ, MPLBACKEND="Agg")
    bin_dir = str(Path(sys.executable).parent)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")  # `flexmb` and `python` of this environment
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def test_every_tutorial_has_its_expectations():
    assert [p.name for p in TUTORIALS] == sorted(EXPECT)


@pytest.mark.parametrize("script", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_runs(script, tmp_path):
    p = _run([sys.executable, str(script)], cwd=tmp_path)
    assert p.returncode == 0, f"{script.name} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    for pattern in EXPECT[script.name]:
        assert re.search(pattern, p.stdout), f"{script.name}: {pattern!r} not in its output:\n{p.stdout}"
    assert "Traceback" not in p.stderr


def _page_blocks(kind: str) -> list[str]:
    text = GETTING_STARTED.read_text(encoding="utf-8")
    return re.findall(rf"^```{kind}\n(.*?)^```", text, flags=re.M | re.S)


def test_getting_started_example_prints_what_the_page_shows(tmp_path):
    p = _run([sys.executable, str(ROOT / "docs" / "examples" / "first_mechanism.py")], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    shown = _page_blocks("text")[0].strip()
    assert p.stdout.strip() == shown


def test_getting_started_commands_run(tmp_path):
    """Every ``flexmb`` and ``python`` command of the page, in a folder laid out as the page assumes
    (docs/examples/ of the repository; the run folders go to runs/ there)."""
    (tmp_path / "docs" / "examples").mkdir(parents=True)
    shutil.copy(ROOT / "docs" / "examples" / "first_mechanism.py", tmp_path / "docs" / "examples")
    commands = []
    for block in _page_blocks("bash"):
        for line in block.splitlines():
            cmd = line.split("#", 1)[0].strip()
            if cmd.startswith(("flexmb ", "python ")):
                commands.append(cmd)
    assert any(c.startswith("flexmb animate") for c in commands) and len(commands) >= 6, commands
    for cmd in commands:
        if cmd.startswith("python docs/examples"):
            args = [sys.executable, *shlex.split(cmd)[1:]]
        elif cmd.startswith("flexmb"):
            args = [str(Path(sys.executable).parent / "flexmb"), *shlex.split(cmd)[1:]]
        else:
            continue
        p = _run(args, cwd=tmp_path)
        assert p.returncode == 0, f"{cmd}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"
    run = tmp_path / "runs" / "first_mechanism"
    for f in ("paraview/first_mechanism.pvd", "energy.png", "coordinates.png", "animation.gif"):
        assert (run / f).exists(), f
    assert (tmp_path / "runs" / "short" / "end.json").exists()
