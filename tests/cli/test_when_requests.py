"""`mysched when` for jobs with a whole request: grid pilots carry mem/pmem and node properties
(one node), MPI jobs ask for several nodes, named hosts or procs; each gets the earliest time
its whole request has room at once by requested walltimes, memory not counted."""

from __future__ import annotations

import json
import time

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.core.model.request import NodePart, Request
from mysched.core.share.usage import Usage
from mysched.daemon.statusfile import build_status, rows, write_status

from ..conftest import snap

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\nscheduler = { reservation_depth = 0; };')


def _when(tmp_path, capsys, request: Request, cores: int) -> dict:
    # wn01 (ib) is full until 1000 + 3600 s; wn02 (no ib) is free; wn03 (ib) full until 1000 + 7200 s
    nodes = [Node("wn01", 4, properties=frozenset({"ib"})), Node("wn02", 4), Node("wn03", 4, properties=frozenset({"ib"}))]
    running = [Job(f"r{n}{i}", "q", "x", "atlas", 1, JobState.RUNNING, 0.0, 1000.0, wall, placement=((n, 1),))
               for n, wall in (("wn01", 3600.0), ("wn03", 7200.0)) for i in range(4)]
    target = Job("1.srv", "q", "u", "atlas", cores, JobState.QUEUED, 0.0, None, 3600.0, request=request)
    s = snap(running + [target], nodes)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    assert main(["when", "--state-dir", str(tmp_path), "1.srv", "--json", "--max-age", "9999999999"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_one_node_request_with_properties_and_memory_gets_an_estimate(tmp_path, capsys):
    doc = _when(tmp_path, capsys, Request((NodePart(1, 2, None, frozenset({"ib"})),), mem=4 << 30), 2)
    assert doc["start"] == 1000.0 + 3600 and not doc["exact"]  # wn01 frees first of the ib nodes
    assert "its memory (mem=4gb) is not counted" in doc["why"]


def _farm(tmp_path, capsys, nodes, busy, request: Request, cores: int, text: bool = False):
    """`when --json` for a waiting job asking for `request` on `nodes`, `busy` given as
    (node, cores, requested walltime) of jobs running since the snapshot's time, 1000 s."""
    running = [Job(f"r{i}", "q", "x", "atlas", c, JobState.RUNNING, 0.0, 1000.0, wall, placement=((n, c),))
               for i, (n, c, wall) in enumerate(busy)]
    target = Job("1.srv", "q", "u", "atlas", cores, JobState.QUEUED, 0.0, None, 3600.0, request=request)
    s = snap(running + [target], nodes)
    write_status(str(tmp_path), build_status(s, plan(s, CFG, Usage(), 1000.0), CFG, published=time.time()))
    assert main(["when", "--state-dir", str(tmp_path), "1.srv", "--max-age", "9999999999",
                 *([] if text else ["--json"])]) == 0
    out = capsys.readouterr().out
    return out if text else json.loads(out)


FOUR = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4)]


def test_two_nodes_start_when_the_jobs_on_two_different_nodes_end(tmp_path, capsys):
    # wn01 empties at +2000 (its later job), wn02 at +3000, wn03 at +7000 though a core frees at +100
    busy = [("wn01", 2, 500.0), ("wn01", 2, 2000.0), ("wn02", 4, 3000.0), ("wn03", 3, 7000.0), ("wn03", 1, 100.0)]
    doc = _farm(tmp_path, capsys, FOUR, busy, Request((NodePart(2, 4),)), 8)
    assert doc["start"] == 1000.0 + 3000 and doc["nodes"] == ["wn01", "wn02"]
    assert doc["in_s"] == 3000.0 and not doc["exact"]
    assert "wn01+wn02 have room for all of it at once then" in doc["why"]
    text = _farm(tmp_path, capsys, FOUR, busy, Request((NodePart(2, 4),)), 8, text=True)
    assert text.startswith("job 1.srv: expected to start in 50m") and "wn01+wn02 have room" in text


def test_a_named_host_starts_it_when_that_host_has_room(tmp_path, capsys):
    # wn01 and wn02 are free now; the job asks for wn03, busy until +7200
    doc = _farm(tmp_path, capsys, FOUR, [("wn03", 4, 7200.0)], Request((NodePart(1, 2, "wn03"),)), 2)
    assert doc["start"] == 1000.0 + 7200 and doc["nodes"] == ["wn03"] and doc["exact"]


def test_a_named_host_that_is_down_gets_none_and_says_so(tmp_path, capsys):
    nodes = [Node("wn01", 4), Node("wn02", 4, NodeState.DOWN)]
    doc = _farm(tmp_path, capsys, nodes, [("wn01", 4, 600.0)], Request((NodePart(1, 2, "wn02"),)), 2)
    assert doc["start"] is None  # the planner calls it blocked (nodes_down): no time either way
    assert "\n" not in doc["why"] and "nodes_down" in doc["why"]


def test_procs_counts_cores_anywhere_freed_at_different_times(tmp_path, capsys):
    # 2 cores free on wn01 at +500, 4 on wn02 at +1500, wn03 busy until +9000
    busy = [("wn01", 2, 500.0), ("wn01", 2, 9000.0), ("wn02", 4, 1500.0), ("wn03", 4, 9000.0)]
    doc = _farm(tmp_path, capsys, FOUR, busy, Request(procs=6), 6)
    assert doc["start"] == 1000.0 + 1500 and sorted(doc["nodes"]) == ["wn01", "wn02"] and not doc["exact"]


def test_a_property_only_one_node_has_waits_for_that_node(tmp_path, capsys):
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4, properties=frozenset({"gpu"}))]
    busy = [("wn01", 4, 3600.0), ("wn03", 4, 7200.0)]
    # the gpu part waits for wn03; the other part takes another node, not wn03 (wn01 and wn02
    # both have room by then: wn01 by name)
    doc = _farm(tmp_path, capsys, nodes, busy, Request((NodePart(1, 4, None, frozenset({"gpu"})), NodePart(1, 4))), 8)
    assert doc["start"] == 1000.0 + 7200 and doc["nodes"] == ["wn03", "wn01"]
    # two gpu nodes are never there: the planner blocks it, and when says so
    doc = _farm(tmp_path, capsys, nodes, busy, Request((NodePart(2, 1, None, frozenset({"gpu"})),)), 2)
    assert doc["start"] is None and "never_fits" in doc["why"]


def test_several_nodes_with_memory_say_it_is_not_counted(tmp_path, capsys):
    doc = _when(tmp_path, capsys, Request((NodePart(2, 2, None, frozenset({"ib"})),), pmem=1 << 30), 4)
    # the ib nodes wn01 (free at +3600) and wn03 (+7200)
    assert doc["start"] == 1000.0 + 7200 and doc["nodes"] == ["wn01", "wn03"]
    assert "its memory (pmem=1gb) is not counted" in doc["why"]


def test_a_running_job_without_walltime_on_a_node_it_needs_leaves_no_estimate(tmp_path, capsys):
    busy = [("wn01", 4, 600.0), ("wn02", 4, None)]
    doc = _farm(tmp_path, capsys, [Node("wn01", 4), Node("wn02", 4)], busy, Request((NodePart(2, 2),)), 4)
    assert doc["start"] is None
    assert doc["why"] == "cannot estimate: 1 running or earlier job(s) on the nodes it may use have no requested walltime"


def test_nodes_asked_for_alone_still_get_none(tmp_path, capsys):
    doc = _when(tmp_path, capsys, Request((NodePart(2, 2),), exclusive=True), 4)
    assert doc["start"] is None
    assert doc["why"].startswith("no estimate for this request (nodes=2:ppn=2,naccesspolicy=singlejob): estimates "
                                 "do not cover nodes asked for alone")


def test_json_names_the_nodes_of_a_running_or_reserved_job(tmp_path, capsys):
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                           'scheduler = { reservation_depth = 1; };')
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [Job("r1", "q", "x", "atlas", 4, JobState.RUNNING, 0.0, 1000.0, 600.0, placement=(("wn01", 4),)),
               Job("r2", "q", "x", "atlas", 2, JobState.RUNNING, 0.0, 1000.0, 900.0, placement=(("wn02", 2),))]
    wide = Job("1.srv", "q", "u", "atlas", 8, JobState.QUEUED, 0.0, None, 3600.0, request=Request((NodePart(2, 4),)))
    s = snap(running + [wide], nodes)
    write_status(str(tmp_path), build_status(s, plan(s, cfg, Usage(), 1000.0), cfg, published=time.time()))
    out = {}
    for jid in ("1.srv", "r2"):
        assert main(["when", "--state-dir", str(tmp_path), jid, "--json", "--max-age", "9999999999"]) == 0
        out[jid] = json.loads(capsys.readouterr().out)
    assert out["1.srv"]["start"] == 1900.0 and out["1.srv"]["nodes"] == ["wn01", "wn02"]  # its reservation
    assert out["r2"]["class"] == "running" and out["r2"]["nodes"] == ["wn02"]


def test_a_request_that_cannot_be_read_gets_one_line(tmp_path, capsys):
    _when(tmp_path, capsys, Request((NodePart(2, 2),)), 4)
    path = tmp_path / "status.json"
    doc = json.loads(path.read_text())
    col = doc["job_columns"].index("request")
    for bad in ("nodes=2:ppn=x", "procs=many", "nodes=2:ppn=2,gres=foo"):
        for row in doc["jobs"]:
            if row[0] == "1.srv":
                row[col] = bad
        path.write_text(json.dumps(doc))
        assert main(["when", "--state-dir", str(tmp_path), "1.srv", "--max-age", "9999999999"]) == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and out.startswith(f"job 1.srv: no start estimate — no estimate for this "
                                                       f"request ({bad}): ")


def test_a_long_job_is_not_promised_cores_another_jobs_reservation_keeps(tmp_path, capsys):
    # wn01 and wn02 have 3 of 4 cores free, their last job ends at +1200; wn03 is full until
    # +9000. "big" (nodes=2:ppn=4, 1 h) is reserved wn01+wn02 from +1200; a 48-h job cannot
    # run there before big has run: the planner keeps it off (reason "reserved"), and `when`
    # must not count the cores big is promised (it said 4600: big, taken to run on the
    # earliest cores, the six free now among them, was over by then).
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
    nodes = [Node("wn01", 4), Node("wn02", 4), Node("wn03", 4)]
    busy = [("wn01", 1, 1200.0), ("wn02", 1, 1200.0), ("wn03", 4, 9000.0)]
    running = [Job(f"r{i}", "q", "x", "atlas", c, JobState.RUNNING, 0.0, 1000.0, wall, placement=((n, c),))
               for i, (n, c, wall) in enumerate(busy)]
    big = Job("1.srv", "q", "u", "atlas", 8, JobState.QUEUED, 0.0, None, 3600.0, request=Request((NodePart(2, 4),)))
    long = Job("2.srv", "q", "v", "atlas", 1, JobState.QUEUED, 1.0, None, 48 * 3600.0)
    s = snap(running + [big, long], nodes)
    p = plan(s, cfg, Usage(), 1000.0)
    assert p.reservations["1.srv"].start == 2200.0 and p.waits["2.srv"].reason == "reserved"
    write_status(str(tmp_path), build_status(s, p, cfg, published=time.time()))
    assert main(["when", "--state-dir", str(tmp_path), "2.srv", "--json", "--max-age", "9999999999"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["start"] == 2200.0 + 3600.0 and doc["nodes"] == ["wn01"]  # wn01 and wn02 alike then: by name
    assert "reserved for other jobs" in doc["why"]


def test_a_reserved_job_counts_the_jobs_ahead_of_it_as_why_does(tmp_path, capsys):
    # the reservation goes to the job that waited longest ("big"), which the fair-share order may
    # rank behind another ("a"): when said "0 job(s) ahead" while why said position 2
    cfg = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')
    nodes = [Node("wn01", 4), Node("wn02", 4)]
    running = [Job(f"r{n}", "q", "x", "atlas", 4, JobState.RUNNING, 0.0, 1000.0, wall, placement=((n, 4),))
               for n, wall in (("wn01", 1000.0), ("wn02", 2000.0))]
    big = Job("1.srv", "q", "u", "atlas", 8, JobState.QUEUED, 0.0, None, 3600.0, request=Request((NodePart(2, 4),)))
    a = Job("2.srv", "q", "a", "atlas", 4, JobState.QUEUED, 1.0, None, 360000.0)
    s = snap(running + [big, a], nodes)
    p = plan(s, cfg, Usage(), 1000.0)
    assert p.reservations["1.srv"].start == 3000.0 and "2.srv" not in p.reservations
    write_status(str(tmp_path), build_status(s, p, cfg, published=time.time()))
    row = next(r for r in rows(json.loads((tmp_path / "status.json").read_text()), "jobs") if r["id"] == "1.srv")
    assert main(["when", "--state-dir", str(tmp_path), "1.srv", "--json", "--max-age", "9999999999"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["start"] == 3000.0 and doc["ahead"] == row["rank"] - 1 == 1
