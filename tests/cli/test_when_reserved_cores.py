"""`when` beside another job's reservation on the same node: it gives the start the planner
would give -- a job that ends before the reservation starts backfills at once, and a long job
may take the cores the reserved job leaves spare (816c9ff). The multi-core partition is off
(`drain = { rate = 0; }`): on by default, it serves the one-node multi-core jobs, which then
take no reservation."""

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, Snapshot
from mysched.core.planner import plan
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, write_status


def _run(jid, node, cores, wall):
    return Job(jid, "q", "x", "atlas", cores, JobState.RUNNING, 0.0, 1000.0, wall, placement=((node, cores),))


def _when(tmp_path, capsys, s, cfg, jid):
    p = plan(s, cfg, Usage(), 1000.0)
    write_status(str(tmp_path), build_status(s, p, cfg, published=time.time()))
    assert main(["when", "--state-dir", str(tmp_path), jid, "--json", "--max-age", "9999999999"]) == 0
    return p, json.loads(capsys.readouterr().out)


def test_a_short_job_ending_before_a_reservation_is_told_it_backfills(tmp_path, capsys):
    # wn01 (2 cores): one core frees at +100, the other at +1000; "big" (2 cores, 1 h) is reserved
    # wn01 from +1000. "t" (1 core, 200 s) ends before that if it starts at +100: the planner starts
    # it then (EASY backfill); `when` said +4600, after big.
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n')
    big = Job("big", "q", "u", "atlas", 2, JobState.QUEUED, 1.0, None, 3600.0)
    t = Job("t", "q", "v", "atlas", 1, JobState.QUEUED, 2.0, None, 200.0)
    running = [_run("a", "wn01", 1, 100.0), _run("b", "wn01", 1, 1000.0)]
    s = Snapshot(1000.0, tuple(running + [big, t]), (Node("wn01", 2),), ())
    p, doc = _when(tmp_path, capsys, s, cfg, "t")
    assert p.reservations["big"].start == 2000.0
    nxt = plan(Snapshot(1100.0, (running[1], big, t), (Node("wn01", 2),), ()), cfg, Usage(), 1100.0,
               reservations=p.reservations)
    assert [x.job_id for x in nxt.starts] == ["t"]  # the planner: at +100
    assert doc["start"] == 1100.0, doc  # when: 5600.0


def test_a_long_job_is_told_it_starts_on_the_cores_a_reservation_leaves_spare(tmp_path, capsys):
    # wn01 (8 cores): 5 busy until +10000; "big" (6 cores) is reserved wn01 from then, 2 of its
    # cores are spare. "t" (1 core, 50000 s) waits only for the cycle's start limit; the planner
    # starts it on a spare core next cycle, `when` said +10000.
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n'
                           'scheduler = { max_starts_per_cycle = 1; };\n')
    big = Job("big", "q", "u", "atlas", 6, JobState.QUEUED, 1.0, None, 500.0)
    x = Job("x", "q", "v", "atlas", 1, JobState.QUEUED, 2.0, None, 100.0)
    t = Job("t", "q", "w", "atlas", 1, JobState.QUEUED, 3.0, None, 50000.0)
    running = [_run("a", "wn01", 5, 10000.0)]
    s = Snapshot(1000.0, tuple(running + [big, x, t]), (Node("wn01", 8),), ())
    p, doc = _when(tmp_path, capsys, s, cfg, "t")
    assert p.reservations["big"].start == 11000.0 and p.waits["t"].reason == "start_limit", p.waits
    xs = [j._replace(state=JobState.RUNNING, start_time=1000.0, placement=st.placement)
          for st in p.starts for j in (x,) if st.job_id == "x"]
    nxt = plan(Snapshot(1001.0, tuple(running + xs + [big, t]), (Node("wn01", 8),), ()), cfg, Usage(), 1001.0,
               reservations=p.reservations)
    assert [y.job_id for y in nxt.starts] == ["t"]  # the planner: now
    assert doc["start"] < 2000.0, doc  # when: 11000.0


def test_a_job_behind_one_holding_a_reservation_is_told_that_job_is_ahead(tmp_path, capsys):
    # (live walk-through) the farm full; big (4 cores) holds a reservation on wn01, t (1 core,
    # 10 min) waits behind it: why said position 2, when '0 job(s) ahead'
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\ndrain = { rate = 0; };\n')
    big = Job("big", "q", "u", "atlas", 4, JobState.QUEUED, 1.0, None, 3600.0)
    t = Job("t", "q", "v", "atlas", 1, JobState.QUEUED, 2.0, None, 600.0)
    running = [_run(f"r{i}", "wn01", 1, 400.0 * (i + 1)) for i in range(4)]
    s = Snapshot(1000.0, tuple(running + [big, t]), (Node("wn01", 4),), ())
    p, doc = _when(tmp_path, capsys, s, cfg, "t")
    assert "big" in p.reservations and p.waits["t"].rank == 2, p.waits
    assert doc["ahead"] == 1, doc
