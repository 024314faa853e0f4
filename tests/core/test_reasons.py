"""Wait and start reasons are `Reason` members, and everything a user reads -- `mysched jobs
--json`, `why`, the status file, `simulate --json` and its report, the metrics' labels --
shows their plain spelling, as it did when they were bare strings."""

from __future__ import annotations

import json
import time

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model import reasons
from mysched.core.model.batch import JobState, Node
from mysched.core.planner import plan
from mysched.core.model.reasons import (BLOCKING, NODE_REFUSALS, NODE_REJECTIONS, REASONS, REPLAY_REASONS,
                                         START_REASONS, Reason)
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status
from mysched.sim.result import SimResult
from mysched.sim.report import format_result

from ..conftest import queued, running, snap

NOW = 1_000_000.0
CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 60; max_running = 1; }; '
                       'cms = { groups = ["cms"]; share = 40; }; };')


def test_every_reason_has_one_text_a_user_reads():
    tables = (REASONS, START_REASONS, REPLAY_REASONS, NODE_REFUSALS)
    for r in Reason:
        assert sum(r in t for t in tables) == 1, r
        text = next(t[r] for t in tables if r in t)
        assert text.strip() and r.value not in ("", text)
    assert BLOCKING <= set(REASONS) and set(NODE_REJECTIONS) <= set(REASONS)
    assert all(NODE_REJECTIONS.values())


def test_a_reason_is_its_spelling():
    assert Reason("no_free_slot") is Reason.NO_FREE_SLOT
    assert Reason.NO_FREE_SLOT == "no_free_slot" and hash(Reason.HOT) == hash("hot")
    assert {"vo_limit": 1}[Reason.VO_LIMIT] == 1 and "vo_limit" in BLOCKING  # an older status file's strings
    assert REASONS["held"] is REASONS[Reason.HELD]
    with pytest.raises(ValueError):
        Reason("no_free_slots")


@pytest.mark.parametrize("base", [reasons.StrEnum, reasons._StrEnum], ids=["stdlib", "python3.10"])
def test_a_member_prints_formats_and_serializes_as_its_value(base):
    """What Python 3.11's StrEnum does, and what the 3.10 stand-in must do too: a plain
    (str, Enum) prints 'R.HOT' with str() and %s, so a log line or a label would change."""
    r = base("R", {"HOT": "hot", "NO_FREE_SLOT": "no_free_slot"})
    m, w = r("hot"), r("no_free_slot")
    assert (str(m), f"{m}", "%s" % m, format(m), f"{w:>14}|") == ("hot", "hot", "hot", "hot", "  no_free_slot|")
    assert json.dumps({m: [w]}) == '{"hot": ["no_free_slot"]}'
    assert json.dumps({"b": 1, m: 2}, sort_keys=True) == '{"b": 1, "hot": 2}'


def _status(tmp_path):
    """A status file whose plan's reasons are `Reason` members (as the planner gives them once
    it is converted), from a farm where one job runs, one is held, two wait."""
    jobs = [running("r1", "alice", "atlas", "wn01", start=NOW - 600),
            queued("h1", "erin", "cms", state=JobState.HELD, submit=NOW - 100),
            queued("q1", "carol", "atlas", submit=NOW - 300), queued("q2", "dave", "cms", submit=NOW - 200),
            queued("q3", "dave", "cms", submit=NOW - 150)]
    s = snap([j._replace(walltime=3600.0) for j in jobs], [Node("wn01", 2)])
    s = s.__class__(NOW, s.jobs, s.nodes, s.queues)
    p = plan(s, CFG, Usage(), NOW)
    p.waits = {k: w._replace(reason=Reason(w.reason)) for k, w in p.waits.items()}
    p.starts = [st._replace(reason=Reason(st.reason)) for st in p.starts]
    write_status(str(tmp_path), build_status(s, p, CFG, published=time.time(), usage=Usage()))
    return p


def test_jobs_json_why_and_the_table_show_plain_reasons(tmp_path, capsys):
    p = _status(tmp_path)
    assert {type(w.reason) for w in p.waits.values()} == {Reason} and p.starts
    raw = next(tmp_path.iterdir()).read_text()
    assert "Reason." not in raw
    assert main(["jobs", "--state-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_id = {j["id"]: j for j in doc["jobs"]}
    assert by_id["h1"]["reason"] == "held" and by_id["h1"]["class"] == "blocked"
    assert by_id["q1"]["reason"] == "vo_limit" and by_id["q1"]["class"] == "blocked"
    assert by_id[p.starts[0].job_id]["reason"] in ("hot", "share", "fairshare")
    assert main(["why", "q1", "--state-dir", str(tmp_path), "--json"]) == 0
    why = json.loads(capsys.readouterr().out)
    assert why["job"]["reason"] == "vo_limit" and why["reason_text"] == REASONS[Reason.VO_LIMIT]
    assert main(["jobs", "--state-dir", str(tmp_path), "--noheader"]) == 0
    out = capsys.readouterr().out
    assert " vo_limit " in out and " held " in out and "Reason" not in out


def test_simulate_json_and_report_spell_the_simulators_own_reasons():
    r = SimResult("mysched", wait_reasons={Reason.NEXT_CYCLE: 7200.0, Reason.NO_FREE_SLOT: 3600.0},
                  unplaceable={Reason.START_FAILED: 1, "vo_limit": 2})
    doc = json.loads(json.dumps(r.to_json()))
    assert list(doc["wait_reasons"]) == ["next_cycle", "no_free_slot"]
    assert doc["unplaceable"] == {"start_failed": 1, "vo_limit": 2}
    report = format_result(r)
    assert "waited for       3.0 job-hours: next_cycle 66.7%, no_free_slot 33.3%" in report
    assert f"mostly           next_cycle (67% of the job-hours waited): {REPLAY_REASONS[Reason.NEXT_CYCLE]}" in report
    assert "never started: 3 (start_failed 1, vo_limit 2)" in report


def test_metrics_label_a_reason_by_its_spelling():
    prometheus = pytest.importorskip("prometheus_client")
    from mysched.daemon.metrics import Metrics

    m = Metrics()
    m.set_farm_state(running_by_vo={"atlas": 1}, queued_by_vo={"atlas": 2}, used_slots_by_vo={"atlas": 1},
                     total_slots=2, used_slots=1, share_target_by_vo={"atlas": 1.0},
                     share_achieved_by_vo={"atlas": 1.0}, pending_by_reason={Reason.NO_FREE_SLOT: 2, "vo_limit": 1})
    m.record_start("atlas", Reason.SHARE)
    text = prometheus.generate_latest(m.registry).decode()
    assert 'mysched_pending_jobs{reason="no_free_slot"} 2.0' in text
    assert 'mysched_pending_jobs{reason="vo_limit"} 1.0' in text
    assert 'mysched_pending_jobs{reason="held"} 0.0' in text  # every planner wait listed
    assert 'mysched_jobs_started_total{reason="share",vo="atlas"} 1.0' in text
    assert "Reason" not in text and "next_cycle" not in text  # the simulator's own are no farm's waits
