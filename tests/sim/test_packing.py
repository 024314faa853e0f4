"""Packing policies (INFN-T1 study): none, relaxed, exclusive with a TTL; the forged deadlock."""

from __future__ import annotations

import pytest

from mysched.config import config_from_text
from mysched.core.model import Job, TraceJob
from mysched.core.planner import plan
from mysched.backends.sim.farm import make_nodes
from mysched.sim.replay import SimOptions, simulate
from mysched.core.usage import Usage

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
           running("r3", "x", "cms", "wn02"), running("r4", "x", "cms", "wn02")]
    jobs = run + [queued("d1", "z", "cms"), queued("d2", "w", "cms", submit=1)]
    p = plan(snap(jobs, nodes(2, 4)), cfg("exclusive"), Usage(), 1000)
    assert [s.placement[0][0] for s in p.starts] == ["wn02"]  # one of them, on the unreserved node
    (w,) = p.waits.values()
    assert w.reason == "packing" and w.nodes_rejected["packing"] == 1
    assert p.node_classes == {"wn01": "mcore"}


def test_ttl_releases_a_node_without_new_class_jobs():
    run = [running("r1", "m", "mc", "wn01", start=0)]
    jobs = run + [queued("d1", "z", "cms")]
    held = plan(snap(jobs, nodes(1, 4)), cfg("exclusive", '"10m"'), Usage(), 300)
    assert held.waits["d1"].reason == "packing"
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


@pytest.mark.parametrize("ttl, locked", [('"inf"', True), ('"1h"', False)])
def test_forged_sequence_locks_an_exclusive_farm_unless_a_ttl_releases_it(ttl, locked):
    wl = forged_workload(4, 4)
    r = simulate(wl, cfg("exclusive", ttl), make_nodes(4, 4), SimOptions())
    last_default = max(r for r in r.wait)  # the longest wait
    if locked:
        # default jobs wait until the 10-hour class jobs end: the farm is locked meanwhile
        assert last_default >= 36000 - 200
    else:
        assert last_default < 2 * 3600 + 600


def test_simulator_reports_packing_index_and_fill_factor():
    wl = forged_workload(4, 4)
    r = simulate(wl, cfg("exclusive"), make_nodes(4, 4), SimOptions())
    doc = r.to_json()
    assert set(doc["packing_index"]) == {"farm", "mcore"}
    assert 0 < doc["packing_index"]["mcore"] <= 1 and 0 < doc["fill_factor"]["farm"] <= 1
