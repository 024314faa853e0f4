"""Accounting files as a crash, a full disk or an admin leaves them: a record cut short and run
into the next one, NUL bytes, bytes that are not UTF-8, compressed old days. Nothing may be
charged to the wrong account, and nothing whole may be lost."""

from __future__ import annotations

import bz2
import gzip
import lzma

import pytest

from mysched.history.accounting import LineProblem, Spliced, parse_line, to_finished_job
from mysched.history.logread import iter_file
from mysched.history.ingest import ingest_accounting

from .helpers import both, lines

# job 12 cut short while pbs_server wrote it (stdio buffer flushed mid-line, then killed); the
# restarted server appends job 13 right after it, on the same line
CUT = ("11/25/2026 09:56:40;E;12.srv;user=alice group=atlas queue=atlas start=1795600000 end=1795600600 "
       "exec_host=wn01/0 Exit_st")
WHOLE = ("11/25/2026 09:58:20;E;13.srv;user=bob group=cms queue=cms start=1795600100 end=1795600700 "
         "exec_host=wn01/1 Exit_status=0\n")


def test_a_record_cut_short_is_reported_and_the_record_after_it_read():
    with pytest.raises(Spliced, match="a record cut short") as exc:
        parse_line(CUT + WHOLE)
    fj = to_finished_job(exc.value.record)
    # before: job 12 with bob's group and job 13's times, job 13 lost
    assert (fj.id, fj.user, fj.group, fj.start) == ("13.srv", "bob", "cms", 1795600100.0)
    # cut anywhere, even inside the time stamp, the whole record after it is found
    for at in (1, 10, 19, 21, 40, len(CUT)):
        with pytest.raises(Spliced) as exc:
            parse_line(CUT[:at] + WHOLE)
        assert exc.value.record.job_id == "13.srv"
    # the record after the cut is of a type not asked for: the cut is still said
    with pytest.raises(Spliced) as exc:
        parse_line(CUT + "11/25/2026 09:58:20;Q;14.srv;queue=atlas", types=("E",))
    assert exc.value.record is None


def test_nul_bytes_before_a_record_are_skipped_and_inside_one_refused():
    with pytest.raises(Spliced, match="4 NUL bytes") as exc:
        parse_line("\x00" * 4 + WHOLE)
    assert exc.value.record.job_id == "13.srv"
    # PostgreSQL refuses a NUL in a string, and with it the whole batch, every time again
    with pytest.raises(ValueError, match="NUL bytes inside the record"):
        parse_line(WHOLE.replace("user=bob", "user=b\x00ob"))


def test_a_value_with_semicolons_is_no_cut():
    rec = parse_line(WHOLE.replace("exec_host", "jobname=a;b;c exec_host"))
    assert rec.attrs["jobname"] == "a;b;c" and rec.attrs["user"] == "bob"


@both
def test_after_a_crash_mid_line_the_next_record_is_charged_to_its_owner(store, tmp_path):
    f = tmp_path / "20261125"
    f.write_text(lines(2) + CUT)  # the server died here
    seen: list[str] = []
    assert ingest_accounting(store, [str(tmp_path)], on_problem=seen.append, trust_all=True).records_added == 2
    with open(f, "a") as fh:  # the restarted server appends
        fh.write(WHOLE + "\x00" * 3 + WHOLE.replace("13.srv", "14.srv"))
    rep = ingest_accounting(store, [str(tmp_path)], on_problem=seen.append, trust_all=True)
    assert (rep.records_added, rep.malformed, rep.lines) == (2, 2, 2)
    assert seen[0].startswith(f"{f}:3: a record cut short ('11/25/2026 09:56:40;E;12.srv;") and seen[1].startswith(
        f"{f}:4: 3 NUL bytes")
    jobs = {j.id: j for j in store.finished_since(0)}
    assert "12.srv" not in jobs and (jobs["13.srv"].user, jobs["13.srv"].group) == ("bob", "cms")
    assert jobs["14.srv"].group == "cms"


@both
def test_nul_bytes_in_a_name_do_not_stop_the_import(store, tmp_path):
    """On PostgreSQL the driver refused the batch with a ValueError: an 'internal error' that
    came back at every run and stopped the daemon's ingestion for good."""
    f = tmp_path / "20261125"
    f.write_text(lines(2) + WHOLE.replace("user=bob", "user=b\x00ob") + lines(2, first=10))
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert (rep.records_added, rep.malformed) == (4, 1) and rep.problems[0].startswith(f"{f}:3: NUL bytes")


def test_names_that_are_not_utf8_stay_apart(tmp_path):
    f = tmp_path / "20261125"
    e_acute, e_grave = (WHOLE.replace("user=bob", "user=" + c).encode("latin-1")
                        for c in ("\xe9ric", "\xe8ric"))
    f.write_bytes(e_acute + e_grave.replace(b"13.srv", b"14.srv") + WHOLE.replace("bob", "j\xf6rg").encode())
    users = [to_finished_job(item).user for item, _ in iter_file(str(f))]
    assert users == ["\\xe9ric", "\\xe8ric", "j\xf6rg"]  # were both '\ufffdric': two users made one


def test_odd_digits_and_signs_are_said_not_lost():
    rec = parse_line(WHOLE.replace("Exit_status=0", "Exit_status=\xb2"))
    dropped: list[str] = []
    fj = to_finished_job(rec, dropped)  # was 'invalid literal for int()': the job lost
    assert fj.exit_status is None and dropped == ["Exit_status='\xb2'"]
    fj = to_finished_job(parse_line(WHOLE.replace("end=1795600700", "end=1795600700 total_execution_slots=\xb2")))
    assert fj.cores == 1
    # start=0 is TORQUE's "never ran"; a negative one is a garbled value, said (was ignored unsaid)
    with pytest.raises(ValueError, match="before 1970"):
        to_finished_job(parse_line(WHOLE.replace("start=1795600100", "start=-5")))


# -- compressed old days ----------------------------------------------------------------------

def _compressed(tmp_path):
    d = tmp_path / "accounting"
    d.mkdir()
    (d / "20261120.gz").write_bytes(gzip.compress(lines(3, day="11/20/2026").encode()))
    (d / "20261121.bz2").write_bytes(bz2.compress(lines(3, first=10, day="11/21/2026").encode()))
    (d / "20261122.xz").write_bytes(lzma.compress(lines(3, first=20, day="11/22/2026").encode()))
    (d / "20261123").write_text(lines(3, first=30, day="11/23/2026"))
    (d / "20261123.gz").write_bytes(gzip.compress(lines(3, first=30, day="11/23/2026")[:-1].encode()))
    (d / "README.gz").write_bytes(gzip.compress(b"not an accounting file\n"))
    return d


@both
def test_compressed_days_in_a_directory_are_read_once(store, tmp_path):
    d = _compressed(tmp_path)
    seen: list[str] = []
    rep = ingest_accounting(store, [str(d)], compressed=True, on_problem=seen.append, trust_all=True)
    # the same day plain and gzipped (gzip running): each job once; the last line of a
    # compressed file is read without its newline (the file is finished)
    assert (rep.files, rep.records_added, rep.duplicates, rep.malformed, seen) == (5, 12, 3, 0, [])
    assert ingest_accounting(store, [str(d)], compressed=True, trust_all=True).files == 0  # unchanged: not read again
    assert store.count_finished() == 12


@both
def test_a_compressed_file_cut_short_keeps_its_whole_lines_and_goes_on(store, tmp_path):
    d = tmp_path / "accounting"
    d.mkdir()
    data = gzip.compress(lines(400).encode(), compresslevel=0)
    (d / "20261121.gz").write_bytes(data[:len(data) // 2])  # gzip still writing it
    (d / "20261122").write_text(lines(3, first=1000))
    seen: list[str] = []
    rep = ingest_accounting(store, [str(d)], compressed=True, on_problem=seen.append, trust_all=True)
    assert rep.malformed == 1 and seen[0].startswith(f"{d}/20261121.gz: compressed data damaged or cut short after")
    got = rep.records_added
    assert 150 < got < 400 and store.count_finished() == got  # every whole line before the cut, and 20261122
    (d / "20261121.gz").write_bytes(data)  # gzip done
    rep = ingest_accounting(store, [str(d)], compressed=True, trust_all=True)
    assert store.count_finished() == 403 and rep.malformed == 0


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_the_daemon_leaves_compressed_days_alone(store, tmp_path):
    d = _compressed(tmp_path)
    rep = ingest_accounting(store, [str(d)], trust_all=True)  # as the daemon calls it: only the plain YYYYMMDD files
    assert (rep.files, rep.records_added, rep.problems) == (1, 3, [])
    f = d / "20261124"
    f.write_bytes((d / "20261120.gz").read_bytes())  # gzipped in place, name kept
    rep = ingest_accounting(store, [str(f)], trust_all=True)
    assert rep.unread_files == 1 and rep.problems == [f"{f}: gzip-compressed; read it with 'mysched history import'"]


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_zstd_is_named_not_misread(store, tmp_path):
    f = tmp_path / "20261122.zst"
    f.write_bytes(b"\x28\xb5\x2f\xfd" + bytes(40))
    rep = ingest_accounting(store, [str(f)], compressed=True, trust_all=True)
    assert rep.unread_files == 1 and rep.problems == [f"{f}: zstd-compressed; decompress it first"]


def test_iter_file_gives_one_item_per_line_whatever_the_bytes(tmp_path):
    f = tmp_path / "junk"
    f.write_bytes(b"\x00\xff\xfe;E;\x01\n" + CUT.encode() + WHOLE.encode() + b"\n" + bytes(range(11, 256)) + b"\n")
    items = [i for i, _ in iter_file(str(f))]
    assert len(items) == 4 and all(isinstance(i, LineProblem) or i is None for i in items)
    assert items[1].record.job_id == "13.srv"


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_finished_file_ending_in_a_cut_record_does_not_charge_it(store, tmp_path):
    """pbs_server died in the last second of the day and came back after midnight: yesterday's
    file ends inside a record, which was read, once the file was finished, as it stood: here
    1 core (exec_host cut from node03/0-7) until the line's stamp (end= never written)."""
    f = tmp_path / "20261124"
    cut = ("11/22/2026 10:05:00;E;60.srv;user=bob group=atlas jobname=b queue=atlas ctime=900 qtime=900 etime=900 "
           "start_count=1 start=1795335000 owner=bob@ce exec_host=node03/0")
    f.write_text(lines(2) + cut)
    seen: list[str] = []
    rep = ingest_accounting(store, [str(f)], finished_after=600, now=f.stat().st_mtime + 601,
                            on_problem=seen.append, trust_all=True)
    assert (rep.records_added, rep.malformed) == (2, 1)
    assert seen == [f"{f}:3: the last line, without its newline, stops before Exit_status=: a record cut short "
                    "(pbs_server stopped while writing it?): skipped"]
    assert "60.srv" not in {j.id for j in store.finished_since(0)}
    g = tmp_path / "20261125"
    g.write_text(lines(2)[:-1])  # whole but for its newline (a copy, a hand edit): read
    assert ingest_accounting(store, [str(g)], finished_after=600, now=g.stat().st_mtime + 601, trust_all=True).duplicates == 2


def test_simulate_replays_the_record_after_a_cut_one(tmp_path):
    """`simulate --trace` reads accounting logs with the same parser: the cut record is said
    and counted, the whole one after it replayed (it said 'the record after it is read' and
    dropped it)."""
    from mysched.sim.workloads.acctrace import read_accounting_trace

    f = tmp_path / "20261125"
    f.write_text(CUT + WHOLE)
    said: list[str] = []
    jobs, counts = read_accounting_trace(str(f), warn=said.append)
    assert [tj.job.id for tj in jobs] == ["13.srv"] and jobs[0].job.group == "cms"
    assert counts["malformed"] == 1 and said[0].startswith(f"{f}:1: a record cut short")
