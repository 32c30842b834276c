"""The commands of ``flexmb`` that read a result (a run directory or a .npz file): ``export``
(ParaView files), ``plot`` (PNG time histories) and ``animate`` (a GIF or MP4 of the motion). What
they write inside a run directory is first recorded in its manifest (flexmb.results.manifest).
"""

from __future__ import annotations

from pathlib import Path

from flexmb.app.cli_common import EXIT_OK, say
from flexmb.app.run import frames_every
from flexmb.errors import AnimationError, CliError, ModelError, ResultFileError, RunDirError
from flexmb.results import animation, manifest, names
from flexmb.results.load import load
from flexmb.results.rundir import is_run_dir

__all__ = ["cmd_export", "cmd_plot", "cmd_animate", "PLOT_WORDS"]


def _load_result(path: str):
    try:
        return load(path)
    except ResultFileError as exc:
        raise CliError(str(exc), exc.hint) from exc


def _record_in_run_dir(src: Path, paths: list[Path]) -> None:
    """Record files an export or a plot will write inside the run folder ``src`` in its manifest
    (a later --overwrite of the run then removes them too); RunDirError if one would be written
    through a symbolic link there (manifest.refuse_links)."""
    if src.is_dir() and is_run_dir(src):
        manifest.refuse_links(src, paths)
        manifest.record(src, [p.absolute() for p in paths])  # the paths are relative to the working directory, not to src


def cmd_export(args) -> int:
    """flexmb export: write a result for ParaView (only inside the output folder; existing
    files only with --overwrite)."""
    # imported here: meshio and h5py take a while to load and only this command and `run` need them
    from flexmb.results.paraview import check_name, check_targets, export, planned_files, safe_name

    try:  # a name the user gives is refused if it is not a file name; one read from the result is made one
        if args.name is not None:
            check_name(args.name, "--name")
    except ValueError as exc:
        raise CliError(str(exc), f"e.g. --name {safe_name(args.name)}") from None
    res = _load_result(args.result)
    src = Path(args.result)
    stored = res.meta.get("case_name") or (src.stem if src.is_file() else src.name)
    name = args.name or safe_name(stored)  # a name read from the file is data, never a path
    out = Path(args.out) if args.out else (src / "paraview" if src.is_dir() else src.parent / f"{src.stem}_paraview")
    every = frames_every(len(res.t), args.every)
    files = planned_files(len(res.t), args.format, name, every)
    try:
        check_targets(out, files, args.overwrite)  # before recording them: a user's file is never claimed
        _record_in_run_dir(src, [out / f for f in files])  # before writing: see flexmb.app.run
        path = export(res, out, args.format, name, every, overwrite=True)
    except (RunDirError, ResultFileError) as exc:
        raise CliError(str(exc), exc.hint) from exc
    say(f"{args.format}: {path}  ({len(res.t)} output rows, status {res.status})")
    return EXIT_OK


PLOT_WORDS = {"energy": "energy balance (all terms)", "coordinates": "the first generalized coordinates",
              "drives": "drive forces/torques", "forces": "beam section forces, largest over all elements",
              "cuts": "loop-cut forces and moments (bushings, rigid cuts)",
              "steps": "the step-size history (accepted, rejected and failed steps, error estimate)"}


def cmd_plot(args) -> int:
    """flexmb plot: PNG time histories of named quantities."""
    # imported here: matplotlib takes a second to load and only this command and `run` need it
    from flexmb.results.plots import (
        default_coordinates,
        plot_coordinates,
        plot_cut_forces,
        plot_drive_forces,
        plot_element_forces,
        plot_energy,
        plot_histories,
        plot_node_positions,
        plot_steps,
    )

    res = _load_result(args.result)
    src = Path(args.result)
    out = Path(args.out) if args.out else (src / "plots" if src.is_dir() else src.parent)
    coords, nodes, elements, cuts, words, histories = [], [], [], [], [], []
    for q in args.quantity:
        if q in PLOT_WORDS:
            words.append(q)
        elif q in res.coordinate_names:
            coords.append(q)
        elif q in res.node_names:
            nodes.append(q)
        elif q in res.element_names:
            elements.append(q)
        elif q in res.cut_names:
            cuts.append(q)
        else:
            try:  # a rate, an acceleration, a spring-damper quantity (docs/results_by_name.md)
                names.resolve(res, q)
            except ModelError as exc:
                raise CliError(f"unknown quantity '{q}'",
                               f"use {', '.join(PLOT_WORDS)}, a node, beam element or cut name, or {exc}") from None
            histories.append(q)
    if "drives" in words and not res.driven_names:
        raise CliError("this result has no driven coordinates to plot", "plot energy, coordinates or forces instead")
    if "forces" in words and not res.element_names:
        raise CliError("this result has no beam elements whose forces could be plotted", "plot energy or coordinates instead")
    if "cuts" in words and not res.cut_names:
        raise CliError("this result has no loop cuts (bushings, rigid cuts) whose forces could be plotted",
                       "plot energy or coordinates instead")
    if "steps" in words and not len(res.steps.get("t", ())):
        raise CliError("this result has no step history (written by a flexmb before it was recorded)",
                       "run the case again to record it")
    if "coordinates" in words:
        coords = default_coordinates(res) + [c for c in coords if c not in default_coordinates(res)]
    plots = [(name, draw) for name, wanted, draw in (
        ("energy.png", "energy" in words, lambda f: plot_energy(res, f)),
        ("drive_forces.png", "drives" in words, lambda f: plot_drive_forces(res, f)),
        ("element_forces.png", "forces" in words, lambda f: plot_element_forces(res, f)),
        ("steps.png", "steps" in words, lambda f: plot_steps(res, f)),
        ("coordinates.png", bool(coords), lambda f: plot_coordinates(res, coords, f)),
        ("nodes.png", bool(nodes), lambda f: plot_node_positions(res, nodes, f)),
        ("element_forces_selected.png", bool(elements), lambda f: plot_element_forces(res, f, names=elements)),
        ("cut_forces.png", "cuts" in words, lambda f: plot_cut_forces(res, f)),
        ("cut_forces_selected.png", bool(cuts), lambda f: plot_cut_forces(res, f, names=cuts)),
        ("quantities.png", bool(histories), lambda f: plot_histories(res, histories, f)),
    ) if wanted]
    _record_in_run_dir(src, [out / name for name, _ in plots])  # before writing: see flexmb.app.run
    out.mkdir(parents=True, exist_ok=True)
    made = [draw(out / name) for name, draw in plots]
    for p in made:
        say(str(p))
    return EXIT_OK


def cmd_animate(args) -> int:
    """flexmb animate: a GIF (or MP4) of the mechanism's motion, for viewers without ParaView."""
    res = _load_result(args.result)
    src = Path(args.result)
    out = Path(args.out) if args.out else (src / "animation.gif" if src.is_dir() else src.with_suffix(".gif"))
    try:
        request = dict(every=args.every, fps=args.fps, view=args.view)
        animation.check_request(res, out, overwrite=args.overwrite, **request)  # before recording: a user's file is never claimed
        _record_in_run_dir(src, [out])  # before writing: see flexmb.app.run
        path = animation.animate(res, out, overwrite=True, **request)
    except (RunDirError, ResultFileError, AnimationError) as exc:
        raise CliError(str(exc), exc.hint) from exc
    say(f"animation: {path}  ({len(res.t)} output rows, status {res.status})")
    return EXIT_OK
