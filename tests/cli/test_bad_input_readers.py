"""Bad input to the readers of traces and of the status file, and a full disk under the
writers of output files: refused at once with an English one-line error naming the file (and
line), never a hang, a MemoryError or Python's wording, and never an earlier good output file
replaced by a broken one. The cases of `test_bad_input` with their own list, for the special
files (named pipes, /dev/zero) and the compressed bombs they need set up.
"""

from __future__ import annotations

import errno
import gzip
import json
import os
import signal
import time
from pathlib import Path
from typing import Callable

import pytest

from mysched.cli.main import main

from .test_bad_input import REFUSED, SWF_OK, Case, run_case

PYTHON_WORDING = ("Errno", "Expecting value", "Expecting property", "UnicodeDecodeError", "codec can't",
                  "end-of-stream marker", "Invalid data stream", "Error -3", "RecursionError", "MemoryError",
                  "Traceback", "internal error")


class Hung(BaseException):
    """A case that blocked (not an OSError: a reader's own handling must not swallow it)."""


@pytest.fixture(autouse=True)
def no_hang():
    """A case that blocks (a named pipe read without a writer) fails after 20 s instead of
    hanging the suite."""
    def alarm(signum, frame):  # noqa: ANN001
        raise Hung("no answer in 20 s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(20)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def gzip_of(data: bytes, times: int) -> bytes:
    """`data` repeated `times` times, as a gzip file of that many members: 4 GiB of NULs in 4 MB."""
    return gzip.compress(data, 9) * times


def _fifo(name: str) -> Callable[[Path], None]:
    return lambda d: os.mkfifo(d / name)


def _link(name: str, to: str) -> Callable[[Path], None]:
    return lambda d: os.symlink(to, d / name)


def _sparse(name: str, size: int) -> Callable[[Path], None]:
    def make(d: Path) -> None:
        with open(d / name, "wb") as f:
            f.truncate(size)
    return make


def _future_status(d: Path) -> None:
    from .test_status_commands import make_status

    make_status(d, published=time.time() + 10 * 365 * 86400)


def _nul_bomb(d: Path) -> None:
    (d / "t.swf.gz").write_bytes(gzip_of(b"\0" * (16 << 20), 256))


def _comment_bomb(d: Path, jobs: str = "") -> None:
    (d / "t.swf.gz").write_bytes(gzip.compress(jobs.encode()) + gzip_of(b"; a comment of a trace header\n" * (1 << 19),
                                                                        192))


def _acct_dir_with_fifo(d: Path) -> None:
    (d / "acct").mkdir()
    os.mkfifo(d / "acct" / "20261122")


LOADS = """vos = { atlas = { groups = ["atlas"]; share = 50; }; };
load_sources = { se = { type = "file"; path = "/unused"; interval = 60; max_age = 86400; on_stale = "stop"; }; };
load_rules = { atlas_se = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; hysteresis = 0.05; }; };
"""
SIM = ["--nodes", "2", "--slots-per-node", "4", "--progress", "never"]


def _after(setup: Callable[[Path], None] | None, argv: Callable[[Path], list[str]]) -> Callable[[Path], list[str]]:
    """`argv`, once `setup` made the special file (a pipe, a link, a bomb): `run_case` asks for
    the arguments after writing the case's plain files."""
    def args(d: Path) -> list[str]:
        if setup is not None:
            setup(d)
        return argv(d)
    return args


def _sim(name: str, trace: str, where: str, setup: Callable[[Path], None] | None = None,
         files: dict | None = None, extra: tuple[str, ...] = ()) -> Case:
    return Case(name, "trace", REFUSED, _after(setup, lambda d: [a.replace("{d}", str(d)) for a in
                                                                  ["simulate", "--trace", trace, *SIM, *extra]]),
                files or {}, where)


def _status(name: str, where: str, setup: Callable[[Path], None] | None = None, files: dict | None = None,
            command: tuple[str, ...] = ("jobs",)) -> Case:
    return Case(name, "status", REFUSED, _after(setup, lambda d: [*command, "--state-dir", str(d)]), files or {}, where)


CASES = [
    # -- traces: what is no regular file, what has no end -----------------------------------
    _sim("trace is /dev/zero", "/dev/zero", "/dev/zero: cannot read: a character device, not a regular file"),
    _sim("trace links to /dev/zero", "{d}/t.swf", "t.swf: cannot read: a character device", _link("t.swf", "/dev/zero")),
    _sim("trace is a named pipe", "{d}/t.swf", "t.swf: cannot read: a named pipe", _fifo("t.swf")),
    _sim("trace is a directory of a named pipe", "{d}/acct", "20261122: cannot read: a named pipe", _acct_dir_with_fifo),
    _sim("gzip of 4 GiB of NULs", "{d}/t.swf.gz", "t.swf.gz:1: a line of over 1 MiB", _nul_bomb),
    _sim("gzip of 3 GiB of comments", "{d}/t.swf.gz", "t.swf.gz:100001: 100,001 blank or comment lines",
         _comment_bomb, extra=("--first", "2000")),
    _sim("a line of 2 MiB", "{d}/t.swf", "t.swf:2: a line of over 1 MiB", files={"t.swf": SWF_OK + "9" * (2 << 20)}),
    _sim("gzip expanding 1000-fold", "{d}/t.swf.gz", "expands to over 32 MiB from 68 KiB compressed",
         files={"t.swf.gz": gzip.compress((SWF_OK + ("x" * 100_000 + "\n") * 700).encode(), 9)}),
    _sim("gzip of blank lines", "{d}/t.swf.gz", "t.swf.gz:100003: 100,002 blank or comment lines against 1 job",
         files={"t.swf.gz": gzip.compress((SWF_OK + "\n" * (64 << 20)).encode(), 9)}),
    _sim("gzip cut short", "{d}/t.swf.gz", "t.swf.gz:2: cannot read: compressed data cut short",
         files={"t.swf.gz": gzip.compress((SWF_OK * 3).encode())[:-12]}),
    _sim("gzip damaged", "{d}/t.swf.gz", "t.swf.gz:1: cannot read: compressed data damaged",
         files={"t.swf.gz": b"\x1f\x8b\x08\x00" + bytes(range(60))}),
    _sim("bzip2 damaged", "{d}/t.swf.bz2", "t.swf.bz2:1: cannot read: compressed data damaged",
         files={"t.swf.bz2": b"BZh9" + bytes(range(60))}),
    _sim("zstd trace", "{d}/t.swf", "t.swf: zstd-compressed: decompress it first",
         files={"t.swf": b"\x28\xb5\x2f\xfd" + bytes(range(40))}),
    _sim("xz damaged", "{d}/t.swf.xz", "t.swf.xz:1: cannot read: compressed data damaged",
         files={"t.swf.xz": b"\xfd7zXZ\x00" + bytes(range(60))}),
    _sim("accounting gzip cut short", "{d}/20261122", "20261122:", files={"20261122": gzip.compress(
        ("11/22/2026 10:00:00;E;1.s;user=u group=g queue=q start=1795300000 end=1795300600\n" * 500).encode())[:-30]}),
    _sim("vo map is a named pipe", "{d}/t.swf", "vo.map: cannot read: a named pipe", _fifo("vo.map"),
         files={"t.swf": SWF_OK}, extra=("--vo-map", "{d}/vo.map")),
    _sim("load series is a named pipe", "{d}/t.swf", "series.csv: cannot read: a named pipe", _fifo("series.csv"),
         files={"t.swf": SWF_OK, "site.cfg": LOADS}, extra=("-c", "{d}/site.cfg", "--load-series", "{d}/series.csv")),
    _sim("load series of one endless line", "{d}/t.swf", "series.csv:1: a line of over 1 MiB",
         files={"t.swf": SWF_OK, "site.cfg": LOADS, "series.csv": "0,se," + "9" * (2 << 20)},
         extra=("-c", "{d}/site.cfg", "--load-series", "{d}/series.csv")),
    # -- the status file ----------------------------------------------------------------------
    _status("status.json is a named pipe", "status.json: unreadable status file: a named pipe", _fifo("status.json")),
    _status("status.json links to /dev/zero", "status.json: unreadable status file: a character device",
            _link("status.json", "/dev/zero")),
    _status("status.json is a directory", "status.json: unreadable status file: a directory",
            lambda d: (d / "status.json").mkdir()),
    _status("status.json of 1 GiB", "status.json: unreadable status file: 1 GiB: larger than a status file may be",
            _sparse("status.json", 1 << 30)),
    _status("status.json nested 100,000 deep", "status.json: not a mysched status file: nested too deeply",
            files={"status.json": "[" * 100_000 + "]" * 100_000}),
    _status("status.json not JSON", "status.json: not a mysched status file: not JSON (from line 2, column 2)",
            files={"status.json": "{\n}}"}),
    _status("status.json cut short", "status.json: not a mysched status file: not JSON (from line 1, column 13: "
            "cut short while written?)", files={"status.json": '{"format": 3'}),
    _status("status.json empty", "status.json: not a mysched status file: empty", files={"status.json": ""}),
    _status("status.json binary", "status.json: not a mysched status file: not UTF-8 text",
            files={"status.json": b'{"a": "\xff\xfe"}'}),
    _status("status.json published 10 years ahead", "status.json: status is not current", _future_status,
            command=("shares",)),
    _status("standby.json a named pipe beside no status", "status.json: no status file", _fifo("standby.json")),
    _status("standby.json links to /dev/zero beside a broken status", "status.json: not a mysched status file",
            _link("standby.json", "/dev/zero"), files={"status.json": "{"}),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_bad_input_to_a_reader_is_refused_at_once_in_english(case, tmp_path):
    outcome, rc, out, err = run_case(case, tmp_path)
    assert outcome == case.expect, (outcome, rc, out[-500:], err[-500:])
    assert case.where.replace("{d}", str(tmp_path)) in err, err[-500:]
    assert not any(w in err for w in PYTHON_WORDING), err[-500:]
    assert all(len(line) < 600 for line in err.splitlines())  # no 1-MiB value echoed


def test_a_huge_value_is_named_not_printed(tmp_path, capsys):
    cols = SWF_OK.split()
    cols[4] = "x" * 300_000
    (tmp_path / "t.swf").write_text(" ".join(cols) + "\n")
    assert main(["simulate", "--trace", str(tmp_path / "t.swf"), *SIM]) == 1
    err = capsys.readouterr().err
    assert "t.swf:1: non-numeric allocated processors (column 5): 'xxx" in err and len(err) < 600


def test_first_stops_the_reading_of_an_ordered_trace(tmp_path, capsys):
    """2,000 jobs asked, then 3 GiB of comments, then more jobs: the reading stops at the
    2,000th job (it went on to the next job line, through all the comments)."""
    jobs = "".join(f"{i} {i} 10 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n" for i in range(1, 2001))
    _comment_bomb(tmp_path, jobs)
    with open(tmp_path / "t.swf.gz", "ab") as f:
        f.write(gzip.compress(b"2001 2001 10 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n"))
    assert main(["simulate", "--trace", str(tmp_path / "t.swf.gz"), "--first", "2000", *SIM]) == 0
    assert ": 2000 jobs on 2 nodes" in capsys.readouterr().out


# -- a full disk under the writers ------------------------------------------------------------

class _FullDisk:
    """A file open for writing on a disk that fills after `room` bytes."""

    def __init__(self, f, room: int) -> None:  # noqa: ANN001
        self.f, self.room = f, room

    def write(self, data) -> int:  # noqa: ANN001
        if len(data) > self.room:
            self.f.write(bytes(data[:self.room]))
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.f.write(data)

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self.f, name)

    def __enter__(self) -> "_FullDisk":
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self.f.close()


SMALL = ["simulate", "--duration", "1", "--nodes", "2", "--slots-per-node", "4", "--progress", "never"]


@pytest.mark.parametrize("argv, name, what", [
    (SMALL + ["--json", "{f}"], "out.json", "cannot write JSON: No space left on device"),
    (SMALL + ["--plot", "{f}"], "out.png", "cannot write plot: No space left on device"),
    (["bench", "--nodes", "2", "--running", "1", "--queued", "1", "--repeat", "1", "--json", "{f}"], "bench.json",
     "cannot write JSON: No space left on device"),
    (SMALL + ["--farm-frames", "{d}/frames", "--frame-every", "20", "--farm-movie", "{f}"], "farm.gif",
     "cannot write movie: No space left on device"),
])
def test_a_full_disk_keeps_the_earlier_output_file(tmp_path, capsys, monkeypatch, argv, name, what):
    if "--plot" in argv or "--farm-movie" in argv:
        pytest.importorskip("matplotlib")
    target = tmp_path / name
    target.write_bytes(b"the earlier good file\n")
    os.chmod(target, 0o640)
    args = [a.replace("{f}", str(target)).replace("{d}", str(tmp_path)) for a in argv]
    if "--farm-movie" in argv:  # the frames fit; the movie is what the disk has no room for
        import mysched.sim.plot as plot

        real = plot.write_output

        def write_output(path, data, what):  # noqa: ANN001, ANN202
            if what == "movie":
                _full_disk_now(monkeypatch)
            return real(path, data, what)

        monkeypatch.setattr(plot, "write_output", write_output)
    else:
        _full_disk_now(monkeypatch)
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"{target}: {what}" in err and not any(w in err for w in PYTHON_WORDING), err
    assert target.read_bytes() == b"the earlier good file\n"
    assert [p.name for p in target.parent.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def _full_disk_now(monkeypatch) -> None:  # noqa: ANN001
    import mysched.files

    real = os.fdopen

    def fdopen(fd, mode="r", *a, **kw):  # noqa: ANN001, ANN002, ANN003, ANN202
        f = real(fd, mode, *a, **kw)
        return _FullDisk(f, 100) if "w" in mode else f

    monkeypatch.setattr(mysched.files.os, "fdopen", fdopen)


def test_a_full_disk_keeps_the_last_good_status_file(tmp_path, monkeypatch, capsys):
    from mysched.daemon.statusfile import FORMAT, write_status

    from .test_status_commands import make_status

    make_status(tmp_path)
    good = (tmp_path / "status.json").read_bytes()
    _full_disk_now(monkeypatch)
    with pytest.raises(OSError) as exc:
        write_status(str(tmp_path), {"format": 3, "jobs": ["x" * 1000]})
    assert exc.value.errno == errno.ENOSPC
    assert (tmp_path / "status.json").read_bytes() == good
    assert sorted(p.name for p in tmp_path.iterdir()) == ["status.json"]
    assert main(["jobs", "--state-dir", str(tmp_path)]) == 0  # the commands read the last good one
    assert json.loads(good)["format"] == FORMAT


def test_a_status_file_written_in_the_future_is_not_carried_over(tmp_path):
    """The daemon carries reservations over from a status file no older than ten intervals:
    one dated 10 years ahead (a clock set wrong) was 'fresh' for 10 years."""
    from mysched.daemon.restartstate import carried
    from mysched.daemon.statusfile import read_status
    from mysched.errors import StatusError

    from .test_status_commands import make_status

    make_status(tmp_path)
    future = time.time() + 10 * 365 * 86400
    os.utime(tmp_path / "status.json", (future, future))
    with pytest.raises(StatusError, match="status is not current: last written 31536\\d+ s in the future"):
        read_status(str(tmp_path), max_age=600)
    assert carried(str(tmp_path), time.time(), 600) == ({}, {}, {})


def _edit_status(d: Path, change: Callable[[dict], None]) -> None:
    from .test_status_commands import make_status

    make_status(d)
    doc = json.loads((d / "status.json").read_text())
    change(doc)
    (d / "status.json").write_text(json.dumps(doc))


def test_a_huge_key_of_a_damaged_status_is_named_not_printed(tmp_path, capsys):
    _edit_status(tmp_path, lambda doc: doc["vos"].update({"v" * 100_000: {"share": "x"}}))
    assert main(["shares", "--state-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "status.json: vos.vvv" in err and "..." in err and len(err) < 400, err[:500]


def test_what_a_status_or_standby_note_says_is_shown_cut_and_any_date_shown(tmp_path, capsys):
    """A daemon's error text of 1 MB, a host name of 100,000 characters, a standby 'since'
    of 1e300 (beyond the dates the C library shows: an internal error)."""
    now = time.time()
    _edit_status(tmp_path, lambda doc: doc.update(stale={"since": now - 60, "error": "e" * 1_000_000, "checked": now}))
    (tmp_path / "standby.json").write_text(json.dumps({"pid": 1, "host": "h" * 100_000, "since": 1e300,
                                                       "checked": now}))
    assert main(["jobs", "--state-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    notes = [line for line in (out + err).splitlines() if "STALE" in line or "standby" in line]
    assert len(notes) == 2 and all(len(line) < 600 for line in notes), [line[:300] for line in notes]
    assert "(since 1e+300 s after 1970)" in notes[1], notes[1][-200:]


def test_a_status_whose_interval_is_absurd_is_refused_not_fresh_for_ever(tmp_path, capsys):
    """How old a status may be is 3 of its intervals: one of 1e300 s was never stale."""
    _edit_status(tmp_path, lambda doc: doc.update(interval=1e300, published=time.time() - 10 * 86400))
    assert main(["jobs", "--state-dir", str(tmp_path)]) == 1
    assert "status.json: interval: expected seconds of at most a day, got 1e+300" in capsys.readouterr().err


@pytest.mark.parametrize("make, why", [(lambda p: os.mkfifo(p), "a named pipe (FIFO), not a regular file"),
                                       (lambda p: p.write_text("[" * 100_000), "nested too deeply"),
                                       (lambda p: p.write_text('{"se": '), "not a JSON document (from line 1")])
def test_a_load_file_that_is_a_pipe_or_no_json_is_a_located_error_at_once(tmp_path, make, why):
    """The daemon reads a load source's file every cycle: a named pipe there stalled it."""
    from mysched.backends.loads import SourceError, read_file
    from mysched.core.settings import LoadSource

    make(tmp_path / "load")
    with pytest.raises(SourceError) as exc:
        read_file(LoadSource("se", "file", path=str(tmp_path / "load"), key="se.value"))
    assert f"{tmp_path / 'load'}: " in str(exc.value) and why in str(exc.value)
    assert not any(w in str(exc.value) for w in PYTHON_WORDING)
