"""Fair-share usage forged through the accounting log (issue 34, item 1): TORQUE writes a job's
account string (``qsub -A``) unescaped, so a user who puts a newline and a well-formed `E`
record into it had that line charged as a real finished job -- 40 h on 16 cores to alice/atlas,
by carol -- and carol's own job, whose S and E lines the newline split, was charged nothing.

Replayed here through the daemon's ingest path and through ``mysched history import``: every
user's and VO's usage is what it is without the attack, carol's job is charged, and the forged
record is reported once, with its FILE:LINE, and counted in the daemon's metrics."""

from __future__ import annotations

import json
import time

import pytest
from prometheus_client import CollectorRegistry

from mysched.cli.main import main
from mysched.daemon.metrics import Metrics
from mysched.history.logread import Inside, iter_file
from mysched.history.accountingfeed import DAY, AccountingFeed
from mysched.history.ingest import ingest_accounting

from .helpers import both

DAYNAME = "20261122"
STAMP = "11/22/2026 {}"
NOW = time.mktime((2026, 11, 22, 12, 0, 0, 0, 0, -1))
T0 = 1795320000  # 11/22/2026 01:20 UTC: the jobs' starts, before the stamps of their lines

FORGED = ("11/22/2026 10:00:00;E;999.srv;user=alice group=atlas jobname=sim queue=atlas ctime=1 qtime=1 "
          f"etime=1 start={T0 - 100000} owner=alice@ui exec_host=wn09/0-15 Resource_List.nodes=1:ppn=16 "
          f"total_execution_slots=16 unique_node_count=1 end={T0 - 100000 + 40 * 3600} Exit_status=0 "
          "resources_used.cput=640:00:00 resources_used.walltime=40:00:00")
"""The record carol wrote into her -A: 40 h on 16 cores, alice/atlas."""


def _job(jid: str, user: str, group: str, start: int, hours: float, cores: int, stamp_s: str, stamp_e: str,
         account: str | None = None) -> str:
    """The S and E lines pbs_server writes for one job (TORQUE 6.1's order: account= after
    group=, before jobname=)."""
    acct = f" account={account}" if account is not None else ""
    end = start + int(hours * 3600)
    host = f"wn01/0-{cores - 1}" if cores > 1 else "wn01/0"
    s = (f"{STAMP.format(stamp_s)};S;{jid};user={user} group={group}{acct} jobname=j{jid} queue={group} ctime={start} "
         f"qtime={start} etime={start} start={start} owner={user}@ui exec_host={host} Resource_List.nodes=1:ppn={cores} "
         "Resource_List.walltime=48:00:00\n")
    e = (f"{STAMP.format(stamp_e)};E;{jid};user={user} group={group}{acct} jobname=j{jid} queue={group} "
         f"ctime={start} qtime={start} etime={start} start={start} owner={user}@ui exec_host={host} "
         f"Resource_List.nodes=1:ppn={cores} Resource_List.walltime=48:00:00 session=77 total_execution_slots={cores} "
         f"unique_node_count=1 end={end} Exit_status=0 resources_used.cput=00:10:00 "
         f"resources_used.walltime={int(hours):02d}:00:00\n")
    return s + e


def _log(carol_account: str) -> str:
    """A day of alice's, bob's and carol's jobs; carol's with the account string given. The
    lines of each job are apart (S at 01:2x, E at 0x:xx), as on a busy server."""
    lines = _job("10.srv", "alice", "atlas", T0, 2, 2, "01:20:00", "03:20:00")
    lines += _job("11.srv", "bob", "cms", T0 + 60, 3, 1, "01:21:00", "04:21:00")
    lines += _job("12.srv", "carol", "lhcb", T0 + 120, 1, 4, "01:22:00", "02:22:00", carol_account)
    return lines


ATTACKS = {
    "newline after the record": "x\n" + FORGED + "\n",  # the carrier's tail on a line of its own
    "no newline after it": "x\n" + FORGED,  # the tail runs on at the end of the forged line
    "several lines": "x\n" + FORGED + "\n" + FORGED.replace("999.srv", "998.srv") + "\n",
}


def _usage(store) -> dict[str, dict]:
    return {by: {r["key"]: (r["jobs"], round(r["wall_hours"], 6)) for r in store.usage_summary(by=by)}
            for by in ("user", "group")}


def _baseline(tmp_path, make_store) -> dict[str, dict]:
    d = tmp_path / "plain"
    d.mkdir()
    (d / DAYNAME).write_text(_log("x"))
    store = make_store(d / "h.db")
    AccountingFeed(store, str(d), 2 * DAY, wall=lambda: NOW)()
    return _usage(store)


@both
def test_the_baseline_charges_each_job_to_its_owner(tmp_path, store):
    (tmp_path / DAYNAME).write_text(_log("x"))
    assert ingest_accounting(store, [str(tmp_path)]).records_added == 3
    assert _usage(store)["user"] == {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)}


@both
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_record_in_an_account_string_changes_no_usage_through_the_daemons_feed(tmp_path, store, attack):
    from mysched.history.store import Store

    before = _baseline(tmp_path, lambda p: Store(f"sqlite:///{p}"))
    (tmp_path / DAYNAME).write_text(_log(ATTACKS[attack]))
    feed = AccountingFeed(store, str(tmp_path), 2 * DAY, wall=lambda: NOW)
    registry = CollectorRegistry()
    feed.on_suspicious = Metrics(registry).accounting_suspicious
    said: list[str] = []
    feed.on_problem = said.append
    feed()
    # before: alice charged 640 core-hours more (atlas's priority fell), carol nothing
    assert _usage(store) == before
    forged = 2 if attack == "several lines" else 1  # each once, though both of carol's lines carry it
    n, records = store.suspects()
    assert n == forged and feed.suspicious == forged
    assert registry.get_sample_value("mysched_accounting_suspicious_records_total") == forged
    first = records[0]
    assert (first["job_id"], first["user"], first["reason"], first["path"], first["line"]) == (
        "999.srv", "alice", "inside", str(tmp_path / DAYNAME), 6)
    assert [m for m in said if "suspicious" in m][0].startswith(f"{tmp_path / DAYNAME}:6: suspicious E record of "
                                                                "job 999.srv (alice/atlas")
    feed()  # read again: nothing new, nothing counted twice
    assert _usage(store) == before and store.suspects()[0] == forged


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_history_import_refuses_the_forged_record_and_charges_the_carrier(tmp_path, capsys, attack):
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / DAYNAME).write_text(_log("x"))
    (tmp_path / DAYNAME).write_text(_log(ATTACKS[attack]))
    usage = {}
    for name, path in (("plain", tmp_path / "plain"), ("attack", tmp_path / DAYNAME)):
        db = f"sqlite:///{tmp_path}/{name}.db"
        assert main(["history", "import", str(path), "--db", db, "--progress", "never"]) == 0
        out = capsys.readouterr()
        usage[name] = {}
        for by in ("user", "vo"):
            assert main(["usage", "--db", db, "--by", by, "--json"]) == 0
            usage[name][by] = json.loads(capsys.readouterr().out)
    assert "3 job record(s) added" in out.out and "suspicious record(s) not charged" in out.out
    assert f"{tmp_path / DAYNAME}:6: suspicious E record of job 999.srv" in out.err
    for by in ("user", "vo"):
        assert usage["attack"][by]["rows"] == usage["plain"][by]["rows"]
        assert usage["plain"][by]["suspicious"] == {"count": 0, "records": []}
    sus = usage["attack"]["vo"]["suspicious"]
    assert sus["count"] == (2 if attack == "several lines" else 1)
    assert (sus["records"][0]["path"], sus["records"][0]["line"], sus["records"][0]["user"]) == (
        str(tmp_path / DAYNAME), 6, "alice")
    if attack == "newline after the record":  # else carol's start= ran on after the forged line's
        assert sus["records"][0]["core_hours"] == 640.0
    # the plain table says it too, on stderr, with FILE:LINE
    assert main(["usage", "--db", f"sqlite:///{tmp_path}/attack.db"]) == 0
    assert f"not counted here: {tmp_path / DAYNAME}:6" in capsys.readouterr().err
    assert main(["history", "suspects", "--db", f"sqlite:///{tmp_path}/attack.db"]) == 0
    listed = capsys.readouterr().out
    assert f"{tmp_path / DAYNAME}:6" in listed and "inside" in listed and "alice" in listed


@both
def test_trust_all_still_refuses_a_line_inside_an_account_value(tmp_path, store):
    (tmp_path / DAYNAME).write_text(_log(ATTACKS["newline after the record"]))
    rep = ingest_accounting(store, [str(tmp_path)], trust_all=True)
    assert (rep.records_added, rep.suspicious) == (3, 1)
    assert _usage(store)["user"] == {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)}


@both
def test_an_e_record_without_its_start_is_charged_to_no_one_until_the_start_is_read(tmp_path, store):
    """An E record read before the S record of its job (the daemon reads older days after
    the recent ones) waits apart, charged when its start comes; one whose start never comes
    is never charged: a record that claims a job nobody ran."""
    log = _log("x").splitlines(keepends=True)
    starts, ends = [ln for ln in log if ";S;" in ln], [ln for ln in log if ";E;" in ln]
    (tmp_path / "20261123").write_text("".join(ends) + FORGED + "\n")
    rep = ingest_accounting(store, [str(tmp_path / "20261123")])
    assert (rep.records_added, rep.suspicious) == (0, 4) and _usage(store)["user"] == {}
    (tmp_path / "20261122").write_text("".join(starts))
    rep = ingest_accounting(store, [str(tmp_path / "20261122")])
    assert (rep.records_added, rep.promoted) == (3, 3)
    assert _usage(store)["user"] == {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)}
    n, records = store.suspects()
    assert n == 1 and (records[0]["job_id"], records[0]["reason"]) == ("999.srv", "unmatched")


@both
def test_a_start_mysched_recorded_is_evidence_of_the_owner(tmp_path, store):
    """On a farm where mysched starts every job its own record of the start is enough (the S
    record in a file not read); an E record of that job claiming another owner is not."""
    store.record_cycle(time=T0 - 5, duration=10.0, result="ok", n_started=2, n_failed=0, n_queued=0, n_running=0,
                       starts=[{"job_id": "10.srv", "placement": "wn01:ppn=2", "reason": "share", "result": "ok",
                                "user": "alice"},
                               {"job_id": "11.srv", "placement": "wn01:ppn=1", "reason": "share", "result": "ok",
                                "user": "bob"}])
    ends = [ln for ln in _log("x").splitlines(keepends=True) if ";E;" in ln]
    # 11.srv's record says alice: the owner mysched started it for is bob
    (tmp_path / DAYNAME).write_text(ends[0] + ends[1].replace("user=bob", "user=alice"))
    rep = ingest_accounting(store, [str(tmp_path)])
    assert (rep.records_added, rep.suspicious) == (1, 1)
    assert _usage(store)["user"] == {"alice": (1, 4.0)}


def test_the_reader_joins_the_carrier_and_says_each_line_of_its_account_value(tmp_path):
    f = tmp_path / DAYNAME
    f.write_text(_log(ATTACKS["no newline after it"]))
    items = [(item, at) for item, at in iter_file(str(f))]
    assert len(items) == 8  # one item a line, the forged ones included
    carrier = items[4][0]
    assert (carrier.type, carrier.job_id, carrier.attrs["user"], carrier.attrs["start"]) == (
        "S", "12.srv", "carol", str(T0 + 120))
    assert isinstance(items[5][0], Inside) and items[5][0].forged.attrs["user"] == "alice"
    assert items[4][1] is None and items[5][1] is not None  # no resuming inside a record


@both
def test_pruning_the_finished_jobs_prunes_their_evidence_too(tmp_path, store):
    from mysched.history.retention import prune

    (tmp_path / DAYNAME).write_text(_log(ATTACKS["newline after the record"]))
    ingest_accounting(store, [str(tmp_path)])
    assert store.suspects()[0] == 1
    got = prune(store, T0 + 30 * DAY, keep_cycles=float("inf"), keep_jobs=7 * DAY)
    assert (got.jobs, got.evidence) == (3, 1) and store.suspects()[0] == 0  # the S records wait a year more
    got = prune(store, T0 + 400 * DAY, keep_cycles=float("inf"), keep_jobs=7 * DAY)
    assert got.evidence == 3


@both
def test_a_record_of_the_same_job_inside_the_account_value_is_inside_too(tmp_path, store):
    """carol's -A holds a line that looks like her own job's E record cut the same way: were
    it taken for that record, her S record's tail would not be found (and a daemon waiting for
    it would read that file no more), and the E it made up would be charged in place of hers."""
    fake = "x\n11/22/2026 02:22:30;E;12.srv;user=carol group=lhcb start=1 end=2 account=y\n"
    (tmp_path / DAYNAME).write_text(_log(fake))
    said: list[str] = []
    rep = ingest_accounting(store, [str(tmp_path / DAYNAME)], on_problem=said.append)
    assert _usage(store)["user"] == {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)}
    assert rep.inside == 2 and any(m.startswith(f"{tmp_path / DAYNAME}:6: ") for m in said), said


@both
def test_a_record_cut_at_the_end_of_a_growing_file_waits_for_its_tail(tmp_path, store):
    """pbs_server writes the record and its account string's lines at once; a reader that
    came in between reads the record whole next time, and never stalls on it."""
    f = tmp_path / DAYNAME
    whole = _log("x\n" + FORGED + "\n")
    cut = whole.index("\n", whole.index(";S;12.srv;")) + 1
    f.write_text(whole[:cut])  # carol's S record, up to its account string's newline
    rep = ingest_accounting(store, [str(f)])
    assert (rep.records_added, rep.lines) == (2, 4)  # alice's and bob's; carol's S waits
    f.write_text(whole)
    rep = ingest_accounting(store, [str(f)])
    assert (rep.records_added, rep.suspicious, rep.lines) == (1, 1, 6)
    assert _usage(store)["user"] == {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)}


@both
def test_a_job_restarted_from_a_checkpoint_is_charged_from_its_restart(tmp_path, store):
    """TORQUE writes a T record when a checkpointed job restarts: its E record's start may be
    that of the restart, which no S record holds."""
    log = _log("x").replace(f"start={T0 + 60} owner=bob@ui exec_host=wn01/0 Resource_List.nodes=1:ppn=1 "
                            "Resource_List.walltime=48:00:00 session",
                            f"start={T0 + 600} owner=bob@ui exec_host=wn01/0 Resource_List.nodes=1:ppn=1 "
                            "Resource_List.walltime=48:00:00 session")
    restart = f"11/22/2026 01:30:00;T;11.srv;user=bob group=cms queue=cms start={T0 + 600} owner=bob@ui\n"
    (tmp_path / DAYNAME).write_text(log)
    assert ingest_accounting(store, [str(tmp_path)]).suspicious == 1  # bob's E: no start at T0 + 600
    (tmp_path / "20261121").write_text(restart)  # read in a later run, from a file of its own
    assert ingest_accounting(store, [str(tmp_path / "20261121")]).promoted == 1
    assert set(_usage(store)["user"]) == {"alice", "bob", "carol"}


@both
def test_a_user_and_group_in_an_account_string_do_not_take_the_job_from_its_owner(tmp_path, store):
    """An account string with blanks and no newline (``qsub -A "x user=alice group=atlas"``)
    put a second user= and group= into carol's S and E records; the last of each was taken,
    and her 4 core-hours were charged to alice/atlas. pbs_server writes its own before it."""
    (tmp_path / DAYNAME).write_text(_log("x user=alice group=atlas owner=alice@ui"))
    assert ingest_accounting(store, [str(tmp_path)]).records_added == 3
    assert _usage(store) == {"user": {"alice": (1, 4.0), "bob": (1, 3.0), "carol": (1, 4.0)},
                             "group": {"atlas": (1, 4.0), "cms": (1, 3.0), "lhcb": (1, 4.0)}}
