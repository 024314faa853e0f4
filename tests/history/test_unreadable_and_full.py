"""The history's files where the system says no (issue 34, items 4 and 5): an accounting
directory this user may not read is "permission denied", not "not found"; a full disk leaves
no empty leader.lock and no traceback; a database on a read-only filesystem, or in a
directory this user cannot write, is still read by `mysched usage`; a database directory
that cannot be made is one line naming it."""

from __future__ import annotations

import errno
import os
import subprocess

import pytest

from mysched.cli.main import main
from mysched.errors import InputError, StoreError
from mysched.history import ingest, leader
from mysched.history.ingest import accounting_files, path_kind
from mysched.history.leader import FileLeadership, read_lock_file
from mysched.history.store import Store
from mysched.history.urls import make_sqlite_dir, read_only_url

from .helpers import lines


def _deny(monkeypatch, denied: str) -> None:
    """As a user without the right to enter `denied` (the tests run as root, who may)."""
    real = os.stat

    def stat(path, *a, **kw):
        if os.fspath(path).startswith(denied):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), path)
        return real(path, *a, **kw)

    monkeypatch.setattr(ingest.os, "stat", stat)


def test_an_accounting_directory_behind_a_closed_one_is_permission_denied(tmp_path, monkeypatch):
    acct = tmp_path / "server_priv" / "accounting"
    acct.mkdir(parents=True)
    _deny(monkeypatch, str(tmp_path / "server_priv"))
    assert path_kind(str(acct)).startswith("permission denied")  # was "not found": os.path.isdir said False
    with pytest.raises(InputError, match=r"accounting: permission denied"):
        accounting_files([str(acct)], False)
    assert path_kind(str(tmp_path / "nothing")) == "no such accounting file or directory"
    os.mkfifo(tmp_path / "fifo")
    assert path_kind(str(tmp_path / "fifo")).startswith("not a file or directory")


def test_a_full_disk_leaves_no_empty_lock_file_and_says_so(tmp_path, monkeypatch):
    path = str(tmp_path / "leader.lock")

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(leader.os, "pwrite", full)
    lead = FileLeadership(path, 4.0)
    with pytest.raises(StoreError, match=r"leader.lock: cannot write who holds it: No space left on device "
                                         r"\(the disk is full\)"):
        lead.acquire()
    assert not os.path.exists(path) and not lead.leader  # before: a 0-byte leader.lock, read as "nobody leads"
    monkeypatch.undo()
    assert lead.acquire() and read_lock_file(path)["pid"] == os.getpid()


def test_a_short_write_is_a_full_disk_too_and_an_old_lock_file_stays(tmp_path, monkeypatch):
    path = tmp_path / "leader.lock"
    path.write_text('{"host": "old", "pid": 1, "since": 0}\n')
    monkeypatch.setattr(leader.os, "pwrite", lambda fd, data, offset: len(data) // 2)
    with pytest.raises(StoreError, match="disk is full"):
        FileLeadership(str(path), 4.0).acquire()
    assert path.exists()  # not ours to remove


def test_a_database_directory_that_cannot_be_made_is_one_line(tmp_path):
    with pytest.raises(StoreError, match=r"cannot create its directory /proc/nodir: No such file or directory"):
        make_sqlite_dir("sqlite:////proc/nodir/h.db")
    (tmp_path / "file").write_text("")
    with pytest.raises(StoreError, match="cannot create its directory"):
        make_sqlite_dir(f"sqlite:///{tmp_path}/file/sub/h.db")
    make_sqlite_dir(f"sqlite:///{tmp_path}/new/h.db")
    assert (tmp_path / "new").is_dir()


def test_a_database_this_user_cannot_write_is_opened_read_only(tmp_path, monkeypatch):
    db = tmp_path / "h.db"
    url = f"sqlite:///{db}"
    Store(url).close()
    assert read_only_url(url) == url
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real(p, mode, **kw))
    ro = read_only_url(url)
    assert ro.startswith("sqlite:///file:") and "mode=ro" in ro and "uri=true" in ro and "immutable" not in ro


def _mount_tmpfs(where) -> bool:
    try:
        return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(where)],
                              capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


def test_usage_reads_a_database_on_a_read_only_filesystem(tmp_path, capsys):
    """Was: "unable to open database file (directory ... is not writable)" -- SQLite opened
    read-write wants its journal beside the file. Needs a mount (root): skipped without."""
    where = tmp_path / "ro"
    where.mkdir()
    if os.geteuid() != 0 or not _mount_tmpfs(where):
        pytest.skip("needs root to mount a read-only tmpfs")
    try:
        from mysched.history.ingest import ingest_accounting

        (where / "20261122").write_text(lines(3))
        url = f"sqlite:///{where}/h.db"
        store = Store(url)
        ingest_accounting(store, [str(where / "20261122")], trust_all=True)
        store.close()  # a file open for writing keeps the filesystem from going read-only
        subprocess.run(["mount", "-o", "remount,ro", str(where)], check=True, timeout=10)
        capsys.readouterr()
        assert main(["usage", "--db", url, "--by", "user", "--noheader"]) == 0
        out = capsys.readouterr().out
        assert [ln.split()[0] for ln in out.splitlines()] == ["u0", "u1", "u2"]
        assert "immutable=1" in read_only_url(url)
    finally:
        subprocess.run(["umount", "-l", str(where)], timeout=10)  # lazily: the store read may still be open


def test_a_store_opened_through_its_read_only_uri_reads_what_a_writer_stored(tmp_path, monkeypatch):
    from mysched.history.ingest import ingest_accounting

    (tmp_path / "20261122").write_text(lines(3))
    ingest_accounting(Store(f"sqlite:///{tmp_path}/h.db"), [str(tmp_path / "20261122")], trust_all=True)
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if mode & os.W_OK else real(p, mode, **kw))
    s = Store(f"sqlite:///{tmp_path}/h.db", create=False)
    assert len(s.usage_summary(by="user")) == 3 and s.suspects() == (0, [])
