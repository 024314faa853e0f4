"""Packing policies (INFN-T1 study): none, relaxed, exclusive with a TTL; the forged deadlock."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.core.planner import plan
from mysched.backends.sim.farm import make_nodes
from mysched.sim.replay import SimOptions, simulate
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, running, snap

BASE = 'vos = { atlas = { groups = ["mc", "atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'


def cfg(policy: str, ttl: str = "") -> object:
    t = f" ttl = {ttl};" if ttl else ""
    return config_from_text(BASE + f'packing = {{ mcore = {{ policy = "{policy}"; groups = ["mc"];{t} }}; }};')


def where(p, jid):
    return next(s.placement[0][0] for s in p.starts if s.job_id == jid)


def test_relaxed_prefers_nodes_already_running_the_class():
    run = [running("r1", "m", "mc", "wn01"), running("r2", "x", "cms", "wn01"), running("r3", "y", "cms", "wn01")]
    # diversity alone would pick the empty wn02; the class job joins its class on wn01
    p = plan(snap(run + [queued("c1", "n", "mc")], nodes(2, 4)), cfg("relaxed"), Usage(), 1000)
    assert where(p, "c1") == "wn01"
    # other jobs are placed as usual (onto the class node too if it is the best)
    p = plan(snap(run + [queued("d1", "z", "cms")], nodes(2, 4)), cfg("relaxed"), Usage(), 1000)
    assert where(p, "d1") == "wn02"


def test_none_spreads_class_jobs():
    run = [running("r1", "m", "mc", "wn01")]
    p = plan(snap(run + [queued("c1", "n", "mc")], nodes(2, 4)), cfg("none"), Usage(), 1000)
    assert where(p, "c1") == "wn02"


def test_exclusive_keeps_other_jobs_off_reserved_nodes_and_names_the_rule():
    run = [running("r1", "m", "mc", "wn01", start=900), running("r2", "x", "cms", "wn02"),
           running("r3", "x", "cms", "wn02")]
    # a class job waits: wn01 keeps its free slots for the class
    jobs = run + [queued("c1", "n", "mc", submit=2), queued("d1", "z", "cms"), queued("d2", "w", "cms", submit=1)]
    p = plan(snap(jobs, nodes(2, 4)), cfg("exclusive"), Usage(), 1000)
    assert where(p, "c1") == "wn01"
    assert sorted(s.placement[0][0] for s in p.starts if s.job_id != "c1") == ["wn02", "wn02"]
    assert p.node_classes == {"wn01": "mcore"}
    more = jobs + [queued("d3", "v", "cms", submit=3)]
    p = plan(snap(more, nodes(2, 4)), cfg("exclusive"), Usage(), 1000)
    (w,) = p.waits.values()  # three default jobs, two free slots on wn02; wn01 is the class's
    assert w.reason == "packing" and w.nodes_rejected["packing"] == 1


def test_a_class_holds_only_the_nodes_it_needs():
    # class jobs on three nodes, one class job waiting: the fullest class node is held, the
    # others are released at once (their class jobs run on)
    run = [running("r1", "m", "mc", "wn01", start=900), running("r2", "m", "mc", "wn01", start=900),
           running("r3", "m", "mc", "wn02", start=950), running("r4", "m", "mc", "wn03", start=950)]
    jobs = run + [queued("c1", "n", "mc")]
    p = plan(snap(jobs, nodes(3, 4)), cfg("exclusive"), Usage(), 1000)
    assert p.node_classes == {"wn01": "mcore"} and where(p, "c1") == "wn01"
    # with nothing of the class waiting, no node is held: default jobs may fill them
    p = plan(snap(run + [queued("d1", "z", "cms")], nodes(3, 4)), cfg("exclusive"), Usage(), 1000)
    assert p.node_classes == {} and p.starts


def test_ttl_releases_a_node_without_new_class_jobs():
    run = [running("r1", "m", "mc", "wn01", start=0)]
    jobs = run + [queued("c1", "n", "mc", submit=1), queued("d1", "z", "cms")]
    held = plan(snap(jobs, nodes(1, 4)), cfg("exclusive", '"10m"'), Usage(), 300)
    assert where(held, "c1") == "wn01" and held.waits["d1"].reason == "packing"
    released = plan(snap(jobs, nodes(1, 4)), cfg("exclusive", '"10m"'), Usage(), 601)
    assert where(released, "d1") == "wn01"
    # ttl 0 behaves as relaxed: no reservation at all
    p = plan(snap(jobs, nodes(1, 4)), cfg("exclusive", "0"), Usage(), 1)
    assert where(p, "d1") == "wn01"


def forged_workload(n_nodes: int, slots: int):
    """One free slot per node, one class job per node, then only default jobs (the study's example)."""
    wl = []
    t = 1_000_000.0
    k = 0
    for i in range(n_nodes * (slots - 1)):
        k += 1
        wl.append(TraceJob(Job(f"{k}", "q", f"u{i % 7}", "cms", submit_time=t), 1800.0))
    for i in range(n_nodes):
        k += 1
        wl.append(TraceJob(Job(f"{k}", "q", "m", "mc", submit_time=t + 60), 36000.0))
    for i in range(n_nodes * slots):
        k += 1
        wl.append(TraceJob(Job(f"{k}", "q", f"u{i % 7}", "cms", submit_time=t + 120), 600.0))
    return wl


@pytest.mark.parametrize("ttl", ['"inf"', '"1h"'])
def test_the_forged_sequence_no_longer_locks_an_exclusive_farm(ttl):
    # The study's deadlock: one class job per node, each node held for the class while default
    # jobs wait -- for 10 hours without a TTL. Nodes are now held only for class jobs that
    # wait, so the default jobs run at once whatever the TTL.
    wl = forged_workload(4, 4)
    r = simulate(wl, cfg("exclusive", ttl), make_nodes(4, 4), SimOptions())
    assert max(r.wait) < 2 * 3600 + 600


def test_simulator_reports_packing_index_and_fill_factor():
    wl = forged_workload(4, 4)
    r = simulate(wl, cfg("exclusive"), make_nodes(4, 4), SimOptions())
    doc = r.to_json()
    assert set(doc["packing_index"]) == {"farm", "mcore"}
    assert 0 < doc["packing_index"]["mcore"] <= 1 and 0 < doc["fill_factor"]["farm"] <= 1
