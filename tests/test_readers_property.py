"""Property tests for the readers of whole files: any bytes -- plain or compressed, cut short,
one endless line -- and any special file given as a trace or as the status file end in a
result or in one located English error, at once: never an internal error, never a hang."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import io
import json
import lzma
import os
import signal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.cli.main import main
from mysched.daemon.statusfile import read_status
from mysched.errors import InputError, StatusError
from mysched.sim.workloads import load_trace

SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PYTHON_WORDING = ("Errno", "Expecting", "Decode", "codec", "marker", "Invalid data stream", "Error -",
                  "Recursion", "Memory", "Traceback", "object", "NoneType")


class Hung(BaseException):
    pass


@contextlib.contextmanager
def within(seconds: int):
    def alarm(signum, frame):  # noqa: ANN001
        raise Hung(f"no answer in {seconds} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


SWF = b"1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
ACCT = b"11/22/2026 10:00:00;E;1.s;user=u group=g queue=q start=1795300000 end=1795300600\n"
_pieces = st.one_of(st.binary(max_size=300), st.sampled_from([SWF, ACCT, b"; UnixStartTime: 1\n", b"\n", b"\0" * 50,
                                                             b"\r", b"\xff\xfe"]))
_body = st.lists(_pieces, max_size=12).map(b"".join)
_packing = st.sampled_from(["plain", "gzip", "bzip2", "xz"])
_cut = st.one_of(st.none(), st.integers(1, 40))
_special = st.sampled_from(["fifo", "dev-zero", "directory", "empty directory", "dangling link", "unreadable"])


def _pack(data: bytes, how: str, cut: int | None) -> bytes:
    packed = {"plain": lambda d: d, "gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}[how](data)
    return packed[:-cut] if cut and how != "plain" else packed


def _special_file(path, kind: str) -> None:  # noqa: ANN001
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "dev-zero":
        os.symlink("/dev/zero", path)
    elif kind == "directory":
        path.mkdir()
        os.mkfifo(path / "20261122")
    elif kind == "empty directory":
        path.mkdir()
    elif kind == "dangling link":
        os.symlink(path.parent / "nowhere", path)
    else:
        path.write_bytes(SWF)
        os.chmod(path, 0)


def _check_trace(path) -> None:  # noqa: ANN001
    with within(30):
        try:
            jobs, _ = load_trace(str(path), first=5)
        except InputError as exc:
            text = str(exc)
            assert str(path) in text and not any(w in text for w in PYTHON_WORDING), text
            assert len(text) < 1000
        else:
            assert len(jobs) <= 5


@SETTINGS
@given(_body, _packing, _cut)
def test_any_bytes_as_a_trace_give_jobs_or_one_located_error(tmp_path_factory, body, how, cut):
    path = tmp_path_factory.mktemp("trace") / "t.swf"
    path.write_bytes(_pack(body, how, cut))
    _check_trace(path)


@settings(SETTINGS, max_examples=25)
@given(st.integers(1, 3 << 20), st.sampled_from([b"9", b"\0", b";", b" ", b"\xff"]), _packing)
def test_one_huge_line_as_a_trace_gives_one_located_error(tmp_path_factory, length, byte, how):
    path = tmp_path_factory.mktemp("trace") / "t.swf"
    path.write_bytes(_pack(SWF + byte * length, how, None))
    _check_trace(path)


@settings(SETTINGS, max_examples=30)
@given(_special)
def test_a_special_file_as_a_trace_is_refused_at_once(tmp_path_factory, kind):
    path = tmp_path_factory.mktemp("trace") / "t.swf"
    _special_file(path, kind)
    if kind == "unreadable" and os.access(path, os.R_OK):  # root reads it anyway: a good trace
        return
    with within(30):
        try:
            load_trace(str(path))
        except InputError as exc:
            assert str(path) in str(exc) and not any(w in str(exc) for w in PYTHON_WORDING), str(exc)
        else:
            raise AssertionError(f"{kind} taken as a trace")


_json = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8)),
                     lambda inner: st.one_of(st.lists(inner, max_size=4),
                                             st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                     max_leaves=20)
_status_bytes = st.one_of(
    st.binary(max_size=300),
    _json.map(lambda v: json.dumps(v).encode()),
    _json.map(lambda v: json.dumps({"format": 3, "published": 0, "jobs": v}).encode()),
    st.integers(1, 200_000).map(lambda n: b"[" * n + b"]" * n),
    st.integers(1, 200_000).map(lambda n: b'{"a":' * n),
)


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue()


@SETTINGS
@given(_status_bytes)
def test_any_bytes_as_the_status_file_give_a_status_or_one_located_error(tmp_path_factory, data):
    d = tmp_path_factory.mktemp("state")
    (d / "status.json").write_bytes(data)
    with within(30):
        try:
            read_status(str(d))
        except StatusError as exc:
            assert "status.json" in str(exc) and not any(w in str(exc) for w in PYTHON_WORDING), str(exc)
        rc, err = _run(["jobs", "--state-dir", str(d)])
    assert rc == 1 and "status.json" in err and not any(w in err for w in PYTHON_WORDING), err[-300:]


@settings(SETTINGS, max_examples=30)
@given(_special, st.sampled_from(["status.json", "standby.json"]), st.sampled_from(["jobs", "why", "nodes"]))
def test_a_special_file_as_the_status_or_standby_file_is_refused_at_once(tmp_path_factory, kind, name, command):
    d = tmp_path_factory.mktemp("state")
    _special_file(d / name, kind)
    with within(30):
        rc, err = _run([command, "--state-dir", str(d)] + (["1"] if command == "why" else []))
    assert rc in (0, 1) and "status.json" in err and not any(w in err for w in PYTHON_WORDING), err[-300:]
