"""Crafted and tampered result files: a saved result (.npz) whose member declares far more data
than the rest of the file accounts for is refused from its headers, before any of that data is
inflated; output times that are not finite or do not increase strictly (in a saved result, in
a run folder's chunk or from one chunk to the next) are refused naming the file and the first
bad row, as every other damage is (flexmb.results.checks)."""

from __future__ import annotations

import io
import re
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

import flexmb as fm
from flexmb.app.casefile import load_case
from flexmb.app.cli import EXIT_USAGE, main
from flexmb.errors import ResultFileError
from flexmb.results.rundir import RunWriter
from flexmb.solvers.simulate import simulate

PENDULUM = Path(__file__).resolve().parent / "cases" / "flexible_pendulum.py"
GiB = 2**30


@pytest.fixture(scope="module")
def saved(tmp_path_factory) -> Path:
    """The flexible pendulum's default run (21 rows) saved by Result.save."""
    case = load_case(PENDULUM)
    p = case.defaults
    res = simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"])
    assert res.status == "finished" and res.t.size == 21
    return res.save(tmp_path_factory.mktemp("saved") / "pendulum.npz")


def replaced(src: Path, dst: Path, name: str, write) -> Path:
    """A copy of the .npz ``src`` whose member ``name`` is written by ``write(zf, info)`` instead."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename == f"{name}.npy":
                member = zipfile.ZipInfo(info.filename)
                member.compress_type = zipfile.ZIP_DEFLATED
                write(zout, member)
            else:
                zout.writestr(info, zin.read(info))
    return dst


def zeros_declaring(shape: tuple, dtype: str = "<f8"):
    """A member: a .npy header declaring ``shape`` followed by that many zero bytes (deflated:
    1 GiB of zeros takes 1 MB), a valid member of a zip file (size and CRC right)."""
    def write(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> None:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, {"descr": dtype, "fortran_order": False, "shape": shape})
        left = int(np.prod(shape)) * np.dtype(dtype).itemsize
        block = bytes(2**20)
        with zf.open(info, "w", force_zip64=True) as f:
            f.write(head.getvalue())
            while left:
                f.write(block[:min(left, len(block))])
                left -= min(left, len(block))
    return write


@pytest.fixture
def inflated(monkeypatch) -> list[int]:
    """The number of bytes zipfile inflates from now on (one entry: the running total)."""
    total = [0]
    real = zipfile._get_decompressor

    class Counting:
        def __init__(self, d):
            self.d = d

        def decompress(self, data, max_length=0):
            out = self.d.decompress(data, max_length)
            total[0] += len(out)
            return out

        def __getattr__(self, name):
            return getattr(self.d, name)

    monkeypatch.setattr(zipfile, "_get_decompressor", lambda kind: Counting(real(kind)) if kind == zipfile.ZIP_DEFLATED
                        else real(kind))
    return total


@pytest.mark.parametrize("member, shape, what", [
    ("t", (GiB // 8,), r"'t' \(declared shape \(134217728,\), 1073741824 bytes\) and 'q' \(declared shape \(21, \d+\)"),
    ("q", (GiB // 8 // 21 + 1, 21), r"'t' \(declared shape \(21,\), 168 bytes\) and 'q' \(declared shape \(6391321, 21\)"),
    ("node_names", (2**24,), r"array 'node_names' declares shape \(16777216,\)"),
])
def test_a_member_declaring_a_gigabyte_is_refused_before_it_is_inflated(saved, tmp_path, inflated, member, shape, what):
    honest = inflated[0]
    fm.load(saved)  # what loading the honest file inflates: the members' headers, 't', the names and texts
    honest = inflated[0] - honest
    dtype = "<U16" if member.endswith("names") else "<f8"
    bomb = replaced(saved, tmp_path / "bomb.npz", member, zeros_declaring(shape, dtype))
    assert bomb.stat().st_size < 2 * 2**20  # a 1 MB file
    with zipfile.ZipFile(bomb) as zf:
        assert zf.getinfo(f"{member}.npy").file_size > GiB  # whose member declares (and inflates to) a gigabyte
    before = inflated[0]
    with pytest.raises(ResultFileError) as info:
        fm.load(bomb)
    assert inflated[0] - before < honest  # less than the honest file: nothing of the gigabyte
    assert re.search(what, str(info.value)) and str(bomb) in str(info.value), str(info.value)


# ------------------------------------------------------------------------ output times: finite, strictly increasing
def _set(i: int, value: float):
    def change(t: np.ndarray) -> None:
        t[i] = value
    return change


def _swap(t: np.ndarray) -> None:
    t[1], t[2] = t[2], t[1]


def _repeat(t: np.ndarray) -> None:
    t[2] = t[1]


TIMES = {  # how the times of chunk 1 (rows 3, 4, 5 of the run) or of the saved result are changed, the row named, the words
    "NaN": (_set(1, np.nan), 4, "is nan, not a finite number"),
    "decreasing": (_swap, 5, "do not increase: output row 5"),
    "constant": (_repeat, 5, "do not increase: output row 5"),
    "inf": (_set(2, np.inf), 5, "is inf, not a finite number"),
    "-inf": (_set(0, -np.inf), 3, "is -inf, not a finite number"),
}


@pytest.fixture(scope="module")
def chunked(tmp_path_factory) -> Path:
    """The flexible pendulum's default run streamed in 7 chunks of 3 rows."""
    out = tmp_path_factory.mktemp("chunked") / "run"
    case = load_case(PENDULUM)
    p = case.defaults
    simulate(case.build(p), p["t_end"], p["dt"], rho_inf=p["rho_inf"], out=RunWriter(out, flush_rows=3, flush_seconds=1e9))
    assert len(list(out.glob("chunk_*.npz"))) == 7 and fm.load(out).status == "finished"
    return out


def _rewrite(path: Path, change, compressed: bool) -> None:
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    change(arrays["t"])
    with open(path, "wb") as f:
        (np.savez_compressed if compressed else np.savez)(f, **arrays)


@pytest.mark.parametrize("name", list(TIMES))
def test_output_times_that_are_not_finite_or_do_not_increase_are_refused_in_a_run_folder(chunked, tmp_path, name, capsys):
    change, row, words = TIMES[name]
    run = tmp_path / "run"
    shutil.copytree(chunked, run)
    _rewrite(run / "chunk_00001.npz", change, compressed=False)
    with pytest.raises(ResultFileError) as info:
        fm.load(run)
    msg = str(info.value)
    assert str(run / "chunk_00001.npz") in msg and words in msg and f"output row {row} (row {row - 3} of this file)" in msg, msg
    capsys.readouterr()
    assert main(["export", str(run)]) == EXIT_USAGE and words in capsys.readouterr().err
    assert not (run / "paraview").exists()


def test_a_chunk_that_starts_before_the_one_before_it_ended_is_refused(chunked, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(chunked, run)
    with np.load(run / "chunk_00000.npz") as z:
        last = float(z["t"][-1])
    _rewrite(run / "chunk_00001.npz", _set(0, last), compressed=False)
    with pytest.raises(ResultFileError, match=r"chunk_00001.npz' is damaged: the output times do not increase: output row 3 "
                       rf"\(row 0 of this file\) has t = {last!r} after t = {last!r}"):
        fm.load(run)


@pytest.mark.parametrize("name", list(TIMES))
def test_output_times_that_are_not_finite_or_do_not_increase_are_refused_in_a_saved_result(saved, tmp_path, name):
    change, _, words = TIMES[name]
    npz = tmp_path / "tampered.npz"
    shutil.copy(saved, npz)
    _rewrite(npz, lambda t: change(t[3:]), compressed=True)  # rows 3, 4, 5 as in the run folder
    with pytest.raises(ResultFileError) as info:
        fm.load(npz)
    msg = str(info.value)
    assert str(npz) in msg and words in msg and f"output row {TIMES[name][1]} " in msg, msg
