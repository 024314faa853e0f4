"""TORQUE accounting lines: real E records from WLCG sites (APEL's fixtures), TORQUE 6.1's
format, and the ways lines go wrong."""

from __future__ import annotations

import calendar
import time

import pytest

from mysched.history.accounting import (AccountingRecord, LineProblem, NotRun, parse_attrs, parse_line, parse_stamp,
                                        to_finished_job)
from mysched.history.logread import iter_file

APEL = "apel-test_pbs-torque-accounting-E-records.log"

# As TORQUE 6.1 writes it (accounting.c: acct_job + account_jobend), on the loopback test farm.
TORQUE61_E = ("11/22/2026 08:50:06;E;4.vm;user=bob group=atlas jobname=b2 queue=atlas ctime=1795337380 "
              "qtime=1795337380 etime=1795337380 start_count=1 start=1795337386 owner=bob@localhost "
              "exec_host=node03/0-1 Resource_List.nodes=1:ppn=2 Resource_List.walltime=00:05:00 "
              "Resource_List.nodect=1 session=4242 total_execution_slots=2 unique_node_count=1 end=1795337406 "
              "Exit_status=0 resources_used.cput=0 resources_used.mem=6856kb resources_used.vmem=11640kb "
              "resources_used.walltime=00:00:20 \n")


@pytest.fixture
def apel(traces) -> dict[str, list]:
    """Job id -> finished jobs of the APEL sample (one id ends twice)."""
    out: dict[str, list] = {}
    for line in (traces / APEL).read_text().splitlines():
        rec = parse_line(line)
        assert rec is not None and rec.type == "E"
        out.setdefault(rec.job_id, []).append(to_finished_job(rec))
    return out


def test_apel_sample_every_line_parses(apel):
    assert sum(len(v) for v in apel.values()) == 7
    assert len(apel["24940336.b0"]) == 2  # the same job ended twice in the sample


def test_apel_ral_jobs_cores_from_exec_host(apel):
    eight = apel["21010040.lcgbatch01.gridpp.rl.ac.uk"][0]
    assert eight.cores == 8  # no total_execution_slots: eight exec_host entries on one node
    assert eight.nodes == ("lcg0766.gridpp.rl.ac.uk",)
    assert (eight.user, eight.group, eight.queue) == ("plhcb010", "prodlhcb", "gridWN")
    one = apel["21048463.lcgbatch01.gridpp.rl.ac.uk"][0]  # the line whose walltime is truncated (19:23:4)
    assert one.cores == 1 and one.cput == 18 * 3600 + 15 * 60 + 24
    assert (one.start, one.end) == (1317509945.0, 1317534104.0)


def test_apel_westgrid_four_core_jobs(apel):
    typo = apel["21414868.b0"][0]  # exec_host b372/4+b372/5+b372/6+b372/7, nodes=1pn=4, no slots field
    assert typo.cores == 4 and typo.nodes == ("b372",)
    assert typo.cput == 13 * 3600 + 1 * 60 + 39
    prefixed = apel["21430205.b0"][0]  # the line with the 20150327: file prefix
    assert prefixed.cores == 4 and prefixed.user == "atprd006"
    assert prefixed.cput == 18 * 3600 + 31 * 60 + 56 and prefixed.end == 1427439987.0


def test_apel_cput_in_seconds_and_exit_status(apel):
    first, second = apel["24940336.b0"]
    assert first.cput == 3 * 3600 + 32 * 60 + 2 and first.exit_status == 271
    assert second.cput == 12722.0 and second.exit_status == 0
    assert apel["37803854.b0"][0].cput == 9.0


def test_prefix_is_stripped_and_e_time_is_the_end_epoch(traces):
    line = (traces / APEL).read_text().splitlines()[5]
    assert line.startswith("20150327:")
    rec = parse_line(line)
    assert rec.job_id == "21430205.b0" and rec.time == 1427439987.0


def test_torque61_line():
    rec = parse_line(TORQUE61_E)
    fj = to_finished_job(rec)
    assert (fj.id, fj.user, fj.group, fj.queue) == ("4.vm", "bob", "atlas", "atlas")
    assert (fj.start, fj.end, fj.cores, fj.cput, fj.exit_status) == (1795337386.0, 1795337406.0, 2, 0.0, 0)
    assert fj.nodes == ("node03",)


@pytest.mark.parametrize("fields, cores", [
    ("exec_host=node/0-3+node2/4", 5),
    ("exec_host=node/0-3,6", 5),
    ("Resource_List.nodes=2:ppn=4", 8),
    ("Resource_List.nodes=1pn=4", 4),
    ("exec_host=wn01/0-1 total_execution_slots=6", 6),
    ("", 1),
])
def test_cores_fallbacks(fields, cores):
    rec = parse_line(f"11/22/2026 10:00:00;E;1.s;user=u group=g queue=q start=100 end=200 {fields}")
    assert to_finished_job(rec).cores == cores


def test_values_may_contain_blanks():
    attrs = parse_attrs("user=u jobname=my  analysis job queue=atlas Resource_Request_2.0=a b ")
    assert attrs == {"user": "u", "jobname": "my analysis job", "queue": "atlas", "Resource_Request_2.0": "a b"}


def test_garbled_optional_fields_keep_the_wall_clock():
    rec = parse_line("11/22/2026 10:00:00;E;1.s;user=u group=g queue=q start=100 end=700 exec_host=/x "
                     "resources_used.cput=abc Exit_status=?")
    dropped: list[str] = []
    fj = to_finished_job(rec, dropped)
    assert (fj.start, fj.end, fj.cores, fj.cput, fj.exit_status) == (100.0, 700.0, 1, None, None)
    # each one is said, so the ingestion reports the line (nothing is dropped in silence)
    assert [d.split("=")[0] for d in dropped] == ["exec_host", "resources_used.cput", "Exit_status"]


def test_ingestion_reports_a_record_kept_without_its_garbled_fields(tmp_path):
    from mysched.history.ingest import ingest_accounting
    from mysched.history.store import Store

    (tmp_path / "20261122").write_text(
        "11/22/2026 10:00:00;E;1.s;user=u group=g queue=q start=100 end=700 resources_used.cput=-5\n"
        "11/22/2026 10:00:00;E;2.s;user=u group=g queue=q start=100 end=700 resources_used.cput=00:01:00\n")
    said: list[str] = []
    rep = ingest_accounting(Store(f"sqlite:///{tmp_path}/h.db"), [str(tmp_path / "20261122")], on_problem=said.append, trust_all=True)
    assert rep.records_added == 2 and rep.repaired == 1 and rep.malformed == 0
    assert said == [f"{tmp_path}/20261122:1: garbled resources_used.cput='-5' ignored; the wall-clock record is kept"]


def test_stamp_is_local_time_of_the_server(monkeypatch):
    stamp = "07/01/2026 12:00:00"
    utc = float(calendar.timegm((2026, 7, 1, 12, 0, 0)))
    try:
        monkeypatch.setenv("TZ", "UTC")
        time.tzset()
        assert parse_stamp(stamp) == utc
        monkeypatch.setenv("TZ", "Europe/Zurich")  # CEST, UTC+2 in July
        time.tzset()
        assert parse_stamp(stamp) == utc - 7200
        rec = parse_line(f"{stamp};D;7.s;requestor=root@localhost")
        assert rec.type == "D" and rec.time == utc - 7200
    finally:
        monkeypatch.undo()
        time.tzset()


def test_start_record_time_is_its_start_epoch():
    rec = parse_line("11/22/2026 08:49:46;S;4.vm;user=bob start=1795337386 exec_host=node03/0-1")
    assert rec.time == 1795337386.0 and rec.attrs["exec_host"] == "node03/0-1"


@pytest.mark.parametrize("line, words", [
    ("garbage without fields", "expected 'MM/DD/YYYY"),
    ("2026-11-22 10:00:00;E;1.s;user=u", "bad time stamp"),
    ("13/22/2026 10:00:00;E;1.s;user=u", "out of range"),
    ("11/22/2026 10:00:00;End;1.s;user=u", "bad record type"),
    ("11/22/2026 10:00:00;E;;user=u", "bad job id"),
])
def test_malformed_lines_say_what_is_wrong(line, words):
    with pytest.raises(ValueError, match=words):
        parse_line(line)


def test_unused_lines_are_none():
    assert parse_line("\n") is None
    assert parse_line("11/22/2026 10:00:00;L;license;floating license hour:0") is None  # PBS Pro, not TORQUE
    assert parse_line("11/22/2026 10:00:00;Q;5.s;queue=atlas", types=("E",)) is None
    assert parse_line("11/22/2026 10:00:00;Q;5.s;queue=atlas") == AccountingRecord(
        "Q", parse_stamp("11/22/2026 10:00:00"), "5.s", {"queue": "atlas"})


def test_e_records_without_usable_times():
    with pytest.raises(NotRun):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u start=0 end=1795337406"))
    with pytest.raises(ValueError, match="before start"):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u start=500 end=400"))
    with pytest.raises(ValueError, match="without a valid start"):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u end=400"))
    # end=0 (completion time unset): the record's own time stands in
    fj = to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u group=g start=1795300000 end=0"))
    assert fj.end == parse_stamp("11/22/2026 10:00:00")


def test_e_records_that_would_charge_the_wrong_account_are_refused():
    """A record without its user or group, or with an absurd run time, is reported, not
    charged to 'unknown' or allowed to swamp every VO's usage."""
    with pytest.raises(ValueError, match="without user="):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;group=g start=500 end=600"))
    with pytest.raises(ValueError, match="without group="):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u start=500 end=600"))
    with pytest.raises(ValueError, match="days"):
        to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;user=u group=g start=1795337386 end=99999999999"))
    fj = to_finished_job(parse_line("11/22/2026 10:00:00;E;1.s;owner=bob@ce group=g start=500 end=600 "
                                    "resources_used.cput=garbage"))
    assert (fj.user, fj.group, fj.cput) == ("bob", "g", None)  # unknown CPU time, not 0


def test_iter_file_keeps_a_partial_last_line_and_resumes(tmp_path):
    f = tmp_path / "20261122"
    good = "11/22/2026 10:00:00;Q;5.s;queue=atlas\n"
    f.write_text(good + "bad line\n" + TORQUE61_E + TORQUE61_E[:50])
    items = list(iter_file(str(f)))
    assert len(items) == 3  # the partial fourth line is not returned
    assert isinstance(items[0][0], AccountingRecord) and items[0][1] == len(good)
    problem = items[1][0]
    assert isinstance(problem, LineProblem) and str(problem).startswith(f"{f}:2: expected")
    assert items[2][0].type == "E"
    end = items[2][1]
    assert end == len(good) + len("bad line\n") + len(TORQUE61_E)
    with open(f, "a") as fh:
        fh.write(TORQUE61_E[50:] + "oops\n")
    rest = list(iter_file(str(f), end, first_line=4))
    assert rest[0][0].job_id == "4.vm" and str(rest[1][0]).startswith(f"{f}:5: ")
    assert rest[-1][1] == f.stat().st_size


def test_iter_file_skips_attribute_parsing_of_other_types(tmp_path):
    f = tmp_path / "20261122"
    f.write_text("11/22/2026 08:49:46;S;4.vm;user=bob\n" + TORQUE61_E)
    assert [i is None for i, _ in iter_file(str(f), types=("E",))] == [True, False]


def test_a_record_without_its_end_keeps_its_length_across_the_end_of_dst(monkeypatch, tmp_path):
    """Europe/Berlin, 25 Oct 2026: 02:00-03:00 comes twice. Read in file order, the stamps of
    that hour are taken the first time (CEST): a job of 90 min ending at 02:10 the second time
    (CET), written with end=0, came out 30 min -- and a shorter one 'ended before it started'."""
    try:
        monkeypatch.setenv("TZ", "Europe/Berlin")
        time.tzset()
        cet = calendar.timegm((2026, 10, 25, 1, 10, 0))  # 02:10 CET; 02:10 CEST is an hour before
        e = "E;{j}.srv;user=v group=atlas queue=q start={s} end={e} exec_host=wn/0 resources_used.walltime={w}\n"
        f = tmp_path / "20261025"
        f.write_text("10/25/2026 01:50:00;" + e.format(j=1, s=cet - 4800, e=cet - 4800, w="00:00:00") +
                     "10/25/2026 02:10:00;" + e.format(j=2, s=cet - 7200, e=cet - 3600, w="01:00:00") +
                     "10/25/2026 02:10:00;" + e.format(j=3, s=cet - 5400, e=0, w="01:30:00") +
                     "10/25/2026 02:10:00;" + e.format(j=4, s=cet - 1200, e=0, w="00:20:00"))
        jobs = [to_finished_job(rec) for rec, _ in iter_file(str(f))]
        assert [j.end - j.start for j in jobs] == [0, 3600, 5400, 1200]
        assert jobs[2].end == jobs[3].end == cet
    finally:
        monkeypatch.undo()
        time.tzset()
