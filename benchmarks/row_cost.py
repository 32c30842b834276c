"""What an output row costs: the A02 N-four-bar with bushings (benchmarks/peer_loops.py) run with a row every
step and with one row at the end, process time, min of several repeats.

The steps of a fixed-step run without callback go through the whole-run call (flexmb/solvers/element_run.py)
between two output rows; each row then costs the Python side: the step's evaluation (ElementStep.evaluation),
the recorder's row (flexmb/solvers/recorder.py: energies, reactions, element outputs, the finiteness test),
the run loop's bookkeeping. Per row = (time with a row every step - time with one row) / (rows - 1).
Process time (the machine is shared), numba's compilation excluded by a warm-up run.

Run (from the repository root):

    python benchmarks/row_cost.py --n 10 40 --repeats 5 [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peer_loops import fm_n_four_bar  # noqa: E402

import flexmb as fm  # noqa: E402


def best(model: fm.Model, t_end: float, every: int, repeats: int) -> tuple[float, int]:
    """(min process time [s], rows) of ``repeats`` runs of ``t_end`` at dt 1 ms with a row every ``every`` steps."""
    times = []
    rows = 0
    for _ in range(repeats):
        t0 = time.process_time()
        res = fm.simulate(model, t_end=t_end, dt=1e-3, rho_inf=0.9, output_every=every)
        times.append(time.process_time() - t0)
        rows = res.t.size
    return min(times), rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[10, 40])
    ap.add_argument("--t-end", type=float, default=1.0)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--profile", action="store_true", help="also print the top of a cProfile of the row-every-step run")
    a = ap.parse_args(argv)
    print("| N | steps | every step: ms | one row: ms | per row: ms |")
    print("|---|---|---|---|---|")
    for n in a.n:
        model = fm_n_four_bar(fm, n, "elastic", 1e9)
        fm.simulate(model, t_end=0.02, dt=1e-3, rho_inf=0.9, output_every=1)  # numba's warm-up
        t1, r1 = best(model, a.t_end, 1, a.repeats)
        tn, rn = best(model, a.t_end, 10**9, a.repeats)
        print(f"| {n} | {round(a.t_end / 1e-3)} | {t1 * 1e3:.1f} | {tn * 1e3:.1f} | {(t1 - tn) / (r1 - rn) * 1e3:.3f} |",
              flush=True)
        if a.profile:
            pr = cProfile.Profile()
            pr.enable()
            fm.simulate(model, t_end=a.t_end, dt=1e-3, rho_inf=0.9, output_every=1)
            pr.disable()
            pstats.Stats(pr, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
