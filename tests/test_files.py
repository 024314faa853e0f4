"""`mysched.files`: reads that refuse what would block or flood them, writes that keep the
earlier file whole when they fail."""

from __future__ import annotations

import errno
import gzip
import io
import os
import signal
import stat
import threading

import pytest

from mysched.errors import InputError
from mysched.files import Unsuitable, open_regular, read_capped, text_lines, write_atomic


def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    os.mkfifo(tmp_path / "p")
    with pytest.raises(Unsuitable, match=r"a named pipe \(FIFO\), not a regular file"):
        open_regular(tmp_path / "p")  # a plain open() waits here for ever


@pytest.mark.parametrize("make, kind", [(lambda p: os.symlink("/dev/zero", p), "a character device"),
                                        (lambda p: p.mkdir(), "a directory")])
def test_devices_and_directories_are_refused(tmp_path, make, kind):
    make(tmp_path / "x")
    with pytest.raises(Unsuitable, match=kind):
        read_capped(tmp_path / "x", 1 << 20)


def test_a_file_over_the_cap_is_refused_before_it_is_read(tmp_path):
    with open(tmp_path / "big", "wb") as f:
        f.truncate(5 << 30)  # sparse: 5 GiB that take no room
    with pytest.raises(Unsuitable, match="5 GiB: larger than a status file may be \\(1 MiB\\)"):
        read_capped(tmp_path / "big", 1 << 20, "status file")
    (tmp_path / "small").write_bytes(b"x" * 10)
    assert read_capped(tmp_path / "small", 10) == b"x" * 10


def test_a_line_without_end_is_refused_at_its_line_as_the_bytes_come(tmp_path):
    data = b"one\ntwo\r\nthree\n" + b"\0" * (3 << 20)
    f = text_lines(io.BufferedReader(io.BytesIO(data)), "t.swf", "a workload trace")
    assert f.readline() == "one\n"
    with pytest.raises(InputError, match=r"^t\.swf:4: a line of over 1 MiB: not a workload trace$"):
        f.read()


def test_lines_just_under_the_cap_pass_and_the_expansion_cap_is_said(tmp_path):
    line = b"x" * ((1 << 20) - 1) + b"\n"
    assert len(text_lines(io.BufferedReader(io.BytesIO(line * 3)), "t", "x").readlines()) == 3
    z = gzip.GzipFile(fileobj=io.BytesIO(gzip.compress(b"a b c\n" * 100_000)))
    with pytest.raises(InputError, match=r"^t:\d+: expands to over 64 KiB, said why: not a trace$"):
        text_lines(z, "t", "a trace", max_bytes=1 << 16, why_max=", said why").read()


def test_an_atomic_write_replaces_the_file_whole_keeping_its_mode(tmp_path):
    f = tmp_path / "out.json"
    f.write_text("old")
    os.chmod(f, 0o640)
    write_atomic(f, b"new")
    assert f.read_text() == "new" and stat.S_IMODE(f.stat().st_mode) == 0o640
    write_atomic(tmp_path / "fresh", lambda out: out.write(b"made by a writer"))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "fresh").stat().st_mode) == 0o666 & ~umask
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh", "out.json"]


@pytest.mark.parametrize("fail", ["write", "fsync", "writer"])
def test_a_failed_write_keeps_the_earlier_file_and_leaves_no_temporary_one(tmp_path, monkeypatch, fail):
    f = tmp_path / "out.png"
    f.write_bytes(b"earlier")

    def full(*a, **kw):  # noqa: ANN002, ANN003, ANN202
        raise OSError(errno.ENOSPC, "No space left on device")

    data: object = b"x" * 100_000
    if fail == "fsync":
        monkeypatch.setattr(os, "fsync", full)
    elif fail == "write":
        data = lambda out: (out.write(b"half"), full())  # noqa: E731
    else:
        data = lambda out: (out.write(b"half"), 1 / 0)  # noqa: E731
    with pytest.raises(OSError if fail != "writer" else ZeroDivisionError):
        write_atomic(f, data)  # type: ignore[arg-type]
    assert f.read_bytes() == b"earlier"
    assert [p.name for p in tmp_path.iterdir()] == ["out.png"]


def test_an_atomic_write_through_a_link_keeps_the_link(tmp_path):
    (tmp_path / "real.json").write_text("old")
    os.symlink("real.json", tmp_path / "link.json")
    write_atomic(tmp_path / "link.json", b"new")
    assert os.path.islink(tmp_path / "link.json") and (tmp_path / "real.json").read_text() == "new"


def test_a_named_pipe_is_written_into_not_replaced(tmp_path):
    """`--json /dev/stdout`, a pipe: there is no earlier file to keep, and renaming over a
    device (as root, /dev/null) would replace it."""
    p = tmp_path / "pipe"
    os.mkfifo(p)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(p, "rb").read()))
    reader.start()
    write_atomic(p, b"through the pipe")
    reader.join(10)
    assert got == [b"through the pipe"] and stat.S_ISFIFO(os.lstat(p).st_mode)
    with pytest.raises(IsADirectoryError):
        write_atomic(tmp_path, b"x")


def test_the_daemons_files_replace_a_link_or_pipe_planted_in_their_place(tmp_path):
    """A root daemon writing status.json through a link planted in its state directory would
    overwrite the file it names; into a named pipe, it would wait for a reader for ever."""
    from mysched.daemon.statusfile import write_json

    (tmp_path / "victim").write_text("precious")
    os.symlink(tmp_path / "victim", tmp_path / "status.json")
    os.mkfifo(tmp_path / "standby.json")

    def hung(signum, frame):  # noqa: ANN001, ANN202
        raise AssertionError("waited for a reader of the pipe")

    old = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        write_json(str(tmp_path), "status.json", {"format": 3})
        write_json(str(tmp_path), "standby.json", {"pid": 1})
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert (tmp_path / "victim").read_text() == "precious"
    for name in ("status.json", "standby.json"):
        st = os.lstat(tmp_path / name)
        assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o644
