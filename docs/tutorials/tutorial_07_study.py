"""
A parameter study, local and on a Dask cluster
==============================================

``flexmb.sweep`` (the ``flexmb sweep`` command) runs a case file for many parameter sets — a grid,
a list, or random samples — each into its own run folder, and collects one row per run in a CSV
table. The runs go to local worker processes (one per core) or, unchanged, to a Dask distributed
cluster. A sweep that is run again resumes: finished runs are not repeated.

This tutorial sweeps the double pendulum of the getting-started page
(``docs/examples/first_mechanism.py``) over its rod length.
"""

# %%
# A sweep on local processes
# --------------------------
# ``grid`` takes every combination of the values given; ``params`` fixes others (here the run
# setting ``t_end``); ``outputs`` adds columns (``coordinate:NAME`` the final value of a
# coordinate, ``node:NAME`` a node's final position, ``peak_force:GLOB`` the peak axial force of
# the matching beam elements). The workers are *spawned* processes, which import this file again:
# as in any Python script that starts processes, the work is under ``if __name__ == "__main__"``.
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm
from flexmb.app.study import read_table

try:
    REPO = Path(__file__).resolve().parents[2]
except NameError:  # run without a file (sphinx-gallery, a notebook): the repository around the working folder
    REPO = next(p for p in [Path.cwd(), *Path.cwd().parents] if (p / "docs" / "examples").is_dir())
CASE = REPO / "docs" / "examples" / "first_mechanism.py"
OUT = Path(tempfile.mkdtemp(prefix="flexmb_study_"))

if __name__ == "__main__":
    s = fm.sweep(CASE, grid={"length": [0.5, 0.75, 1.0, 1.25, 1.5]}, params={"t_end": 1.0},
                 outputs=["coordinate:elbow.q"], out_dir=OUT / "local", workers=2, progress=False)
    print(s.line())
    tab = read_table(s.table)
    print("columns:", ", ".join(list(tab)[:12]), "...")
    for L, q, st in zip(tab["length"], tab["elbow.q"], tab["status"]):
        print(f"length {L:4.2f} m: {st}, elbow angle at 1 s {q:+.4f} rad")

# %%
# Each row's run folder (``run_0000`` …) is an ordinary result: ``fm.load`` reads it.
if __name__ == "__main__":
    fig, ax = plt.subplots(figsize=(7, 3))
    for i in range(5):
        res = fm.load(OUT / "local" / f"run_{i:04d}")
        ax.plot(res.t, res.coordinate("elbow.q"), label=f"length {res.meta['params']['length']} m")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("elbow.q [rad]")
    ax.legend(fontsize="small")
    fig.tight_layout()

# %%
# Running it again resumes: every run has ended, so none is repeated.
if __name__ == "__main__":
    again = fm.sweep(CASE, grid={"length": [0.5, 0.75, 1.0, 1.25, 1.5]}, params={"t_end": 1.0},
                     outputs=["coordinate:elbow.q"], out_dir=OUT / "local", workers=2, progress=False)
    print(again.line())

# %%
# On a Dask cluster
# -----------------
# The same sweep runs on a Dask distributed cluster given as ``client=`` (or ``--scheduler
# tcp://HOST:8786`` on the command line); ``pip install 'flexmb[cluster]'`` brings Dask. On real
# machines: ``dask scheduler`` on one, ``NUMBA_NUM_THREADS=1 dask worker tcp://HOST:8786
# --nthreads 1`` on each, the case file and the sweep folder on a shared file system. Here a local
# cluster of two worker processes stands in for it; the table is the same, number for number.
if __name__ == "__main__":
    import logging

    import distributed

    # silence_logs: a worker whose heartbeat meets the scheduler already closed at the end logs that with a
    # traceback (Dask's shutdown order, not an error of the sweep): only critical messages are shown
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, worker_dashboard_address=None,
                                  silence_logs=logging.CRITICAL) as cluster, \
            distributed.Client(cluster) as client:
        d = fm.sweep(CASE, grid={"length": [0.5, 0.75, 1.0, 1.25, 1.5]}, params={"t_end": 1.0},
                     outputs=["coordinate:elbow.q"], out_dir=OUT / "dask", client=client, progress=False)
    print(d.line())
    same = np.array_equal(read_table(d.table)["elbow.q"], tab["elbow.q"])
    print("the same final angles as the local sweep:", same)
    shutil.rmtree(OUT)  # the study's folders were temporary
    plt.show()
