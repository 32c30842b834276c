"""
Reading results: fm.load, lazy fields, time windows
===================================================

A run streams its output rows to disk while it runs (``simulate(..., out=DIR)``, and always
``flexmb run``): a run folder with ``meta.json``, chunks of rows and ``end.json``
(docs/result_format.md). ``fm.load`` reads it back — lazily: the files are checked when they are
opened, each per-row field is read on first use, and a time window reads only the chunks that
hold it. Nothing is ever unpickled, and a damaged file is named, not trusted.
"""

# %%
# A run streamed to a folder
# --------------------------
# A flexible pendulum, 2 s. With ``out=`` the result that ``simulate`` returns is itself read
# lazily from the folder (``keep="none"``: memory is bounded by the model, not the run).
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import flexmb as fm

sec = fm.BeamSection(E=7e10, G=2.7e10, A=6e-5, Iy=2e-9, Iz=4.5e-11, J=1.8e-10, rho=2700)
mb = fm.ModelBuilder(gravity=(0, -9.81, 0))
nodes = mb.add_flexible_link("link", (0, 0, 0), (1, 0, 0), 8, sec)
mb.add_joint("pin", "revolute", "ground", nodes[0], axis=(0, 0, 1))
model = mb.compile()

folder = Path(tempfile.mkdtemp(prefix="flexmb_results_")) / "pendulum"
res = fm.simulate(model, t_end=2.0, dt=1e-3, out=folder)
print(res)
print(sorted(p.name for p in folder.iterdir())[:6], "...")

# %%
# Loading
# -------
# ``fm.load`` takes a run folder (or an ``.npz`` written by ``Result.save``). The status says how
# the run ended: ``finished``, ``stopped: …``, ``failed: …``, ``interrupted``, or ``incomplete: …``
# for a run killed before it could write ``end.json`` (its rows up to the last chunk still load).
r = fm.load(folder)
print("status:", r.status, "| rows:", len(r.t), "| coordinates:", r.coordinate_names[:3], "...")
print("fields read so far:", sorted(k for k in vars(r) if k in ("q", "x", "energy", "element_forces")))
tip = r.node_position("link.8")  # reads x on first use
print("after node_position:", sorted(k for k in vars(r) if k in ("q", "x", "energy", "element_forces")))

# %%
# ``fields=`` reads the named fields at once (and checks them now); ``t=(t0, t1)`` reads only the
# rows in that window — only the chunks that hold them are opened. ``res.window(t0, t1)`` does the
# same on a result already loaded.
late = fm.load(folder, fields=("q", "energy"), t=(1.5, 2.0))
print(f"window: {len(late.t)} rows from t = {late.t[0]:.3f} to {late.t[-1]:.3f} s")
w = r.window(0.0, 0.5)
print(f"r.window(0, 0.5): {len(w.t)} rows")

# %%
# What a result holds: coordinates ``q``, ``u``, ``udot``; node poses ``x``, ``R``; node
# ``twists``; joint ``reactions``; ``drive_forces``; beam section forces ``element_forces`` (axial
# force, shears, torque, bending moments) and ``element_energy``; ``cut_forces``; the ``energy``
# terms and their balance ``total_energy``; the step history ``steps``; ``stats`` and ``meta``.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
ax1.plot(r.t, r.energy["kinetic"], label="kinetic")
ax1.plot(r.t, r.energy["potential"], label="potential")
ax1.plot(r.t, r.energy["strain"], label="strain")
ax1.plot(r.t, r.total_energy - r.total_energy[0], "k", label="balance (change)")
ax1.set_xlabel("t [s]")
ax1.set_ylabel("J")
ax1.legend(fontsize="small")
root = r.element_force("link.e0")
ax2.plot(r.t, root[:, 5], label="bending moment at the root, e3")
ax2.plot(late.t, fm.load(folder, t=(1.5, 2.0)).element_force("link.e0")[:, 5], "--", label="the window 1.5–2 s")
ax2.set_xlabel("t [s]")
ax2.set_ylabel("N m")
ax2.legend(fontsize="small")
fig.tight_layout()

# %%
# A result kept in memory is saved to one ``.npz`` with ``Result.save`` and loads the same way.
# ParaView files: ``flexmb export RUN`` (or ``flexmb.results.paraview``); plots: ``flexmb plot``.
small = fm.simulate(model, t_end=0.2, dt=1e-3)
path = small.save(folder.parent / "short.npz")
back = fm.load(path)
print(path.name, "loads:", back.status, np.array_equal(back.q, small.q))
shutil.rmtree(folder.parent)
plt.show()
