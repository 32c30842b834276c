"""Check that a code change leaves simulation results bit for bit the same.

    python scripts/same_results.py record DIR      # run a fixed set of seed cases (short runs) into DIR
    python scripts/same_results.py compare A B     # compare two such folders array by array

``record`` runs each case through the ``flexmb`` command (``flexmb run CASE --t-end T --out
DIR/<case> -q``), so it works on any revision of flexmb that has the command. ``compare`` reads
every chunk of every run directory with numpy (no flexmb import) and reports the first array
that differs; wall times and dates are ignored, the status and every output array must be
identical. Used for refactorings that must not change results (a structural move of modules,
a split of the model compiler): record before, record after, compare. Exit code 0 when all
runs are identical, 1 otherwise.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

# (case file, t_end, extra parameters): short runs that still pass through each case's features
CASES = [
    ("cases/sharma_saha_arm.py", 0.5, []),
    ("cases/change_point_four_bar.py", 0.3, []),
    ("cases/attia_3rrr.py", 0.2, []),
    ("cases/bennett_linkage.py", 0.2, []),
    ("cases/zahariev_six_link.py", 0.3, []),
    ("cases/four_bar_rigid_limit.py", 0.2, []),
    ("cases/zhao_stewart_platform.py", 0.3, ["--param", "forward_t_end=0"]),
    ("cases/issa_arczewski_systems.py", 0.3, ["--param", "system=floating"]),
    ("cases/spin_up_beam.py", 0.5, []),
    ("cases/bearing_friction_self_locking.py", 0.2, []),
]


def record(out: Path) -> int:
    root = Path(__file__).resolve().parents[1]
    exe = Path(sys.executable).with_name("flexmb")
    out.mkdir(parents=True, exist_ok=True)
    for case, t_end, extra in CASES:
        name = Path(case).stem
        cmd = [str(exe), "run", str(root / case), "--t-end", str(t_end), "--out", str(out / name), "-q", *extra]
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(f"{name}: exit {r.returncode}", flush=True)
        if r.returncode not in (0, 1):
            print(r.stderr, file=sys.stderr)
    return 0


def _arrays(run: Path) -> dict[str, np.ndarray]:
    parts: dict[str, list[np.ndarray]] = {}
    for f in sorted(run.glob("chunk_*.npz")):
        with np.load(f, allow_pickle=False) as z:
            for k in z.files:
                parts.setdefault(k, []).append(z[k])
    return {k: np.concatenate(v) for k, v in parts.items()}


def compare(a: Path, b: Path) -> int:
    bad = 0
    for case, _, _ in CASES:
        name = Path(case).stem
        ra, rb = a / name, b / name
        if not (ra / "meta.json").exists() or not (rb / "meta.json").exists():
            print(f"{name}: missing in {a if not (ra / 'meta.json').exists() else b}")
            bad += 1
            continue
        sa = json.loads((ra / "end.json").read_text())["status"]
        sb = json.loads((rb / "end.json").read_text())["status"]
        xa, xb = _arrays(ra), _arrays(rb)
        diff = [k for k in sorted(set(xa) | set(xb))
                if k not in xa or k not in xb or xa[k].shape != xb[k].shape or not np.array_equal(xa[k], xb[k])]
        if sa != sb or diff:
            bad += 1
            first = diff[0] if diff else None
            detail = ""
            if first and first in xa and first in xb and xa[first].shape == xb[first].shape:
                detail = f", max |difference| {np.abs(xa[first].astype(float) - xb[first].astype(float)).max():.3e}"
            print(f"{name}: DIFFERENT (status {sa!r} vs {sb!r}; arrays {diff[:6]}{detail})")
        else:
            rows = xa["t"].size if "t" in xa else 0
            print(f"{name}: identical ({rows} rows, {len(xa)} arrays, status {sa})")
    print("all identical" if not bad else f"{bad} of {len(CASES)} runs differ")
    return 0 if not bad else 1


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "record":
        return record(Path(argv[1]))
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
