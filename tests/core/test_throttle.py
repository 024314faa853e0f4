"""External load in the planner: rules throttle exactly their VOs, groups and queues, with
hysteresis; overloaded nodes take no new job."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.core.planner import plan
from mysched.core.rules.throttle import Reading, levels, throttles
from mysched.core.share.usage import Usage

from ..conftest import nodes, queued, snap

CFG = '''vos = { atlas = { groups = ["atlas"]; share = 50; max_running = 10; }; cms = { groups = ["cms"]; share = 50; }; };
load_sources = { se = { type = "file"; path = "/x"; interval = 10; max_age = 60; on_stale = "stop"; };
                 probe = { type = "file"; path = "/y"; interval = 10; max_age = 60; }; };
load_rules = { atlas_se = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; hysteresis = 0.05; };
               cms_probe = { source = "probe"; groups = ["cms"]; low = 10; high = 20; }; };
'''


def _levels(cfg, values, prev=None, now=100.0):
    ts = throttles(cfg, {k: Reading(k, v, now - 1) for k, v in values.items()}, now, prev)
    return {t.rule: (t.level, round(t.factor, 3)) for t in ts}, ts


def test_levels_follow_the_value_with_hysteresis():
    cfg = config_from_text(CFG)
    got, ts = _levels(cfg, {"se": 0.95, "probe": 5})
    assert got == {"atlas_se": ("closed", 0.0), "cms_probe": ("open", 1.0)}
    # hovering just under high stays closed; well under it scales
    got, ts = _levels(cfg, {"se": 0.87, "probe": 15}, levels(ts))
    assert got["atlas_se"] == ("closed", 0.0) and got["cms_probe"] == ("scaled", 0.5)
    got, ts = _levels(cfg, {"se": 0.7, "probe": 15}, levels(ts))
    assert got["atlas_se"] == ("scaled", 0.5)
    got, ts = _levels(cfg, {"se": 0.4, "probe": 15}, levels(ts))
    assert got["atlas_se"] == ("open", 1.0)
    got, _ = _levels(cfg, {"se": 0.53, "probe": 15}, levels(ts))  # just over low: still open
    assert got["atlas_se"] == ("open", 1.0)


def test_a_stale_source_stops_or_is_ignored_as_configured():
    cfg = config_from_text(CFG)
    ts = throttles(cfg, {"se": Reading("se", 0.1, 0.0), "probe": Reading("probe", 50.0, 0.0)}, 100.0)
    got = {t.rule: t.level for t in ts}
    assert got == {"atlas_se": "stale", "cms_probe": "open"}  # se: on_stale = stop; probe: ignore


def test_a_closed_rule_stops_only_its_vo_and_says_why():
    cfg = config_from_text(CFG)
    jobs = [queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=i) for i in range(8)]
    _, ts = _levels(cfg, {"se": 0.95, "probe": 0})
    p = plan(snap(jobs, nodes(2, 4)), cfg, Usage(), 100.0, throttles=ts)
    assert {s.vo for s in p.starts} == {"cms"} and len(p.starts) == 4
    waits = [w for w in p.waits.values()]
    assert {w.reason for w in waits} == {"external_load"}
    assert "load source se = 0.95, at or above high 0.9" in waits[0].detail
    assert "VO atlas runs 0 job(s), the load allows 0" in waits[0].detail


def test_a_scaled_rule_shrinks_max_running_linearly():
    cfg = config_from_text(CFG)
    jobs = [queued(f"{i}.s", f"u{i}", "atlas", submit=i) for i in range(20)]
    _, ts = _levels(cfg, {"se": 0.7, "probe": 0})  # half way: atlas may run 5 of its 10
    p = plan(snap(jobs, nodes(4, 8)), cfg, Usage(), 100.0, throttles=ts)
    assert len(p.starts) == 5
    assert p.reasons() == {"external_load": 15}
    p = plan(snap(jobs, nodes(4, 8)), cfg, Usage(), 100.0)  # no load: the configured 10
    assert len(p.starts) == 10 and p.reasons() == {"vo_limit": 10}


def test_overloaded_nodes_take_no_new_job_and_waits_say_so():
    cfg = config_from_text(CFG + 'node_load = { max_load_per_core = 1.0; min_free_mem = "1gb"; };\n')
    busy = Node("wn01", 4, load=9.0)
    short = Node("wn02", 4, load=0.5, avail_mem=100 << 20)
    fine = Node("wn03", 4, load=3.9, avail_mem=8 << 30)
    jobs = [queued(f"{i}.s", f"u{i}", "cms", submit=i) for i in range(6)]
    p = plan(snap(jobs, [busy, short, fine]), cfg, Usage(), 100.0)
    assert {n for s in p.starts for n, _ in s.placement} == {"wn03"} and len(p.starts) == 4
    assert set(p.node_load) == {"wn01", "wn02"} and "per core" in p.node_load["wn01"]
    w = p.waits["5.s"]
    assert w.reason == "node_load" and w.nodes_rejected["node_load"] == 2
