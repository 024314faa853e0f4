"""Accounting ingestion into the history store, on SQLite and (when MYSCHED_TEST_PG_URL
answers) PostgreSQL: every behaviour an admin relies on — nothing counted twice, nothing lost,
whatever happens to the files or the process."""

from __future__ import annotations

import gzip
import signal
import subprocess
import sys
import time

import pytest

import mysched.history.ingest as ingest_mod
from mysched.errors import InputError
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store, ingest_positions

from .helpers import APEL, both, lines, positions


@both
def test_apel_sample_ingested_once_with_cores_and_cput(store, traces):
    rep = ingest_accounting(store, str(traces / APEL), trust_all=True)
    assert (rep.files, rep.lines, rep.malformed) == (1, 7, 0)
    assert rep.records_added == 6 and rep.duplicates == 1  # one job id ends twice with the same start
    jobs = {j.id: j for j in store.finished_since(0)}
    assert jobs["21010040.lcgbatch01.gridpp.rl.ac.uk"].cores == 8
    assert jobs["21430205.b0"].cores == 4 and jobs["21414868.b0"].cores == 4
    assert jobs["21430205.b0"].cput == 18 * 3600 + 31 * 60 + 56 and jobs["37803854.b0"].cput == 9.0
    assert jobs["21010040.lcgbatch01.gridpp.rl.ac.uk"].nodes == ("lcg0766.gridpp.rl.ac.uk",)


@both
def test_malformed_line_reported_with_file_and_line_and_the_rest_ingested(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(2) + "garbage without fields\n" + lines(2, first=10))
    seen: list[str] = []
    rep = ingest_accounting(store, [str(tmp_path)], on_problem=seen.append, trust_all=True)
    assert rep.records_added == 4 and rep.malformed == 1 and rep.lines == 5
    assert rep.problems == seen and rep.problems[0].startswith(f"{f}:3: expected")
    # line numbers stay right when a later ingestion resumes in the middle of the file
    with open(f, "a") as fh:
        fh.write(lines(1, first=20) + "11/22/2026 10:00:00;E;9.srv;user=u start=900 end=800\n")
    rep = ingest_accounting(store, [str(tmp_path)], trust_all=True)
    assert rep.records_added == 1 and rep.problems == [f"{f}:7: end (800) before start (900)"]


@both
def test_importing_the_same_file_twice_adds_nothing(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(5))
    assert ingest_accounting(store, [str(f)], trust_all=True).records_added == 5
    again = ingest_accounting(store, [str(f)], trust_all=True)
    assert again.records_added == 0 and again.lines == 0  # the position says all is read
    # positions lost (or a copy under another name): the unique key still protects
    with store.engine.begin() as c:
        c.execute(ingest_positions.delete())
    copy = tmp_path / "backup.log"
    copy.write_bytes(f.read_bytes())
    rep = ingest_accounting(store, [str(f), str(copy)], trust_all=True)
    assert rep.records_added == 0 and rep.duplicates == 10
    assert store.count_finished() == 5


@both
def test_appended_lines_are_picked_up_alone(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(5))
    ingest_accounting(store, [str(tmp_path)], trust_all=True)
    with open(f, "a") as fh:
        fh.write(lines(3, first=100))
    rep = ingest_accounting(store, [str(tmp_path)], trust_all=True)
    assert (rep.lines, rep.records_added, rep.duplicates) == (3, 3, 0)
    assert store.count_finished() == 8


@both
def test_partial_trailing_line_waits_for_its_newline(store, tmp_path):
    f = tmp_path / "20261122"
    whole = lines(2)
    f.write_text(whole[:-40])  # pbs_server's stdio buffer flushed in the middle of line 2
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert rep.records_added == 1 and rep.malformed == 0
    assert positions(store)[str(f)]["offset"] == len(lines(1))
    assert ingest_accounting(store, [str(f)], trust_all=True).lines == 0  # unchanged: nothing read again
    with open(f, "a") as fh:
        fh.write(whole[-40:])
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert rep.records_added == 1 and rep.malformed == 0 and rep.lines == 1
    assert store.count_finished() == 2


@both
def test_midnight_rotation_counts_every_job_once(store, tmp_path):
    day1, day2 = tmp_path / "20261122", tmp_path / "20261123"
    tail = lines(1, first=50)
    day1.write_text(lines(3) + tail[:30])  # 23:59: last record half written
    (tmp_path / "notes.txt").write_text("not an accounting file\n")
    assert ingest_accounting(store, str(tmp_path), trust_all=True).records_added == 3
    with open(day1, "a") as fh:  # at midnight pbs_server closes (flushes) the old file ...
        fh.write(tail[30:])
    day2.write_text(lines(4, first=200, day="11/23/2026"))  # ... and opens the new one
    rep = ingest_accounting(store, str(tmp_path), trust_all=True)
    assert rep.records_added == 5 and rep.files == 2 and rep.duplicates == 0
    with open(day2, "a") as fh:
        fh.write(lines(2, first=300, day="11/23/2026"))
    rep = ingest_accounting(store, str(tmp_path), trust_all=True)
    assert rep.records_added == 2 and rep.files == 1  # yesterday's file is not read again
    assert store.count_finished() == 3 + 1 + 4 + 2
    assert ingest_accounting(store, str(tmp_path), trust_all=True).records_added == 0


@both
def test_truncated_or_replaced_file_is_reread_without_double_counting(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text(lines(4))
    ingest_accounting(store, [str(f)], trust_all=True)
    with open(f, "r+") as fh:  # truncated in place (same inode, now shorter than the offset)
        fh.truncate(0)
        fh.write(lines(2, first=40))
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert rep.records_added == 2 and rep.lines == 2
    f.unlink()  # replaced by a new file that starts like nothing seen (the inode may be reused)
    f.write_text(lines(1, first=70) + lines(4) + lines(2, first=40))
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert rep.records_added == 1 and rep.duplicates == 6
    assert store.count_finished() == 7


@both
def test_exception_mid_ingest_then_reingest_exact(store, tmp_path, monkeypatch):
    f = tmp_path / "20261122"
    f.write_text(lines(1000))
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 100)
    real, calls = ingest_mod.to_finished_job, [0]

    def dies_at_line_250(rec, dropped=None):
        calls[0] += 1
        if calls[0] == 250:
            raise RuntimeError("killed")
        return real(rec, dropped)

    monkeypatch.setattr(ingest_mod, "to_finished_job", dies_at_line_250)
    with pytest.raises(RuntimeError):
        ingest_accounting(store, [str(f)], trust_all=True)
    assert store.count_finished() == 200  # two whole batches committed, the third not at all
    assert positions(store)[str(f)]["line"] == 200
    monkeypatch.setattr(ingest_mod, "to_finished_job", real)
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert (rep.lines, rep.records_added, rep.duplicates) == (800, 800, 0)
    assert store.count_finished() == 1000


@both
def test_records_and_their_position_commit_together(store, tmp_path, monkeypatch):
    f = tmp_path / "20261122"
    f.write_text(lines(300))
    monkeypatch.setattr(ingest_mod, "BATCH_LINES", 100)
    real, calls = store._upsert, [0]

    def dies_writing_the_second_position(*args, **kw):
        calls[0] += 1
        if calls[0] == 2:  # batch 2's records are inserted, its position not yet written
            raise RuntimeError("killed")
        return real(*args, **kw)

    monkeypatch.setattr(store, "_upsert", dies_writing_the_second_position)
    with pytest.raises(RuntimeError):
        ingest_accounting(store, str(f), trust_all=True)
    assert store.count_finished() == 100 and positions(store)[str(f)]["line"] == 100
    monkeypatch.setattr(store, "_upsert", real)
    rep = ingest_accounting(store, str(f), trust_all=True)
    assert (rep.records_added, rep.duplicates) == (200, 0)


@both
def test_sigkill_mid_ingest_then_reingest_exact(db_url, tmp_path):
    """SIGKILL in the middle of a large ingestion: what was committed is whole (records and
    their position together), and re-running reads on from there, adding the rest exactly."""
    f = tmp_path / "20261122"
    n = 20_000
    f.write_text(lines(n))
    s = Store(db_url)
    code = ("import mysched.history.ingest as m; m.BATCH_LINES = 200; "
            f"m.ingest_accounting(m.Store({db_url!r}), {str(f)!r}, trust_all=True)")
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.time() + 60
        while time.time() < deadline and s.count_finished() < 400 and p.poll() is None:
            time.sleep(0.01)
        assert p.poll() is None, "ingestion finished before it could be killed"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    partial = s.count_finished()
    assert 0 < partial < n
    assert positions(s)[str(f)]["line"] == partial  # the position covers exactly what is stored
    rep = ingest_accounting(s, str(f), trust_all=True)
    assert (rep.records_added, rep.duplicates, rep.malformed) == (n - partial, 0, 0)
    assert s.count_finished() == n
    s.close()


@both
def test_concurrent_ingesters_and_a_reader(db_url, tmp_path):
    """The daemon and a `history import` backfill ingest the same logs at once while a
    status command reads: no lock errors, every job once."""
    for day, first in (("20261121", 0), ("20261122", 10_000)):
        (tmp_path / day).write_text(lines(10_000, first=first))
    Store(db_url).close()
    code = ("import mysched.history.ingest as m; m.BATCH_LINES = 500; "
            f"m.ingest_accounting(m.Store({db_url!r}), {str(tmp_path)!r}, trust_all=True)")
    procs = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE) for _ in range(2)]
    reader = Store(db_url, create=False)
    reads = 0
    while any(p.poll() is None for p in procs):
        reader.usage_summary(by="user")
        reads += 1
    errors = [p.stderr.read().decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert reads > 0 and reader.count_finished() == 20_000
    assert sum(r["jobs"] for r in reader.usage_summary(by="user")) == 20_000
    reader.close()


@both
def test_job_that_never_ran_is_not_malformed(store, tmp_path):
    f = tmp_path / "20261122"
    f.write_text("11/22/2026 10:00:00;E;3.srv;user=u group=g queue=q start=0 end=1795337406 Exit_status=-3\n"
                 "11/22/2026 10:00:00;D;4.srv;requestor=root@localhost\n" + lines(1))
    rep = ingest_accounting(store, str(f), trust_all=True)
    assert (rep.records_added, rep.ignored, rep.malformed) == (1, 2, 0)



def test_bad_accounting_paths(tmp_path):
    s = Store(f"sqlite:///{tmp_path}/h.db")
    with pytest.raises(InputError, match="no such accounting file or directory"):
        ingest_accounting(s, str(tmp_path / "missing"), trust_all=True)
    gz = tmp_path / "20261121.gz"
    gz.write_bytes(gzip.compress(lines(2).encode()))
    rep = ingest_accounting(s, str(gz), trust_all=True)
    assert rep.records_added == 0 and "gzip-compressed" in rep.problems[0]


def test_progress_counts_the_bytes_still_to_read(tmp_path):
    s = Store(f"sqlite:///{tmp_path}/h.db")
    f = tmp_path / "20261122"
    f.write_text(lines(2500))
    calls: list[tuple[int, int, int]] = []
    ingest_accounting(s, str(tmp_path), progress=lambda *a: calls.append(a), trust_all=True)
    size = f.stat().st_size
    assert calls[-1] == (size, size, 2500)
    assert [c[2] for c in calls[:-1]] == [1000, 2000]  # every PROGRESS_LINES lines on the way
    assert calls[0][0] < calls[1][0] < size and all(c[1] == size for c in calls)
    with open(f, "a") as fh:  # a later run reads, and counts, only what was appended
        fh.write(lines(10, first=9000))
    calls.clear()
    ingest_accounting(s, str(tmp_path), progress=lambda *a: calls.append(a), trust_all=True)
    assert calls == [(size_added := f.stat().st_size - size, size_added, 10)]
