"""A load rule scales max_cores as it scales max_running, and what it says -- the throttle's
detail (`why`, `loads`, `shares`) and the help of its Prometheus series -- says both."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.planner import plan
from mysched.core.rules.throttle import Reading, throttles
from mysched.core.share.usage import Usage
from mysched.daemon.series import LOADS

from ..conftest import nodes, queued, running, snap

CFG = '''vos = { atlas = { groups = ["atlas"]; share = 50; max_cores = 8; }; cms = { groups = ["cms"]; share = 50; }; };
load_sources = { se = { type = "file"; path = "/x"; interval = 10; max_age = 60; }; };
load_rules = { atlas_se = { source = "se"; vos = ["atlas"]; low = 0.5; high = 0.9; }; };
'''


def test_a_scaled_rule_says_it_scales_max_running_and_max_cores():
    cfg = config_from_text(CFG)
    ts = throttles(cfg, {"se": Reading("se", 0.7, 99.0)}, 100.0)
    assert [(t.level, round(t.factor, 3)) for t in ts] == [("scaled", 0.5)]
    assert "between low 0.5 and high 0.9: max_running and max_cores scaled to 50% (rule atlas_se)" in ts[0].detail()
    # and it does: atlas's max_cores 8 becomes 4, its 2 running cores leave room for one 2-core job
    jobs = [running("r1", "u1", "atlas", "wn01", cores=2), queued("a.1", "u1", "atlas", cores=2, submit=1),
            queued("a.2", "u1", "atlas", cores=2, submit=2)]
    p = plan(snap(jobs, nodes(2, 8)), cfg, Usage(), 100.0, throttles=ts)
    assert [s.job_id for s in p.starts] == ["a.1"]
    w = p.waits["a.2"]
    assert w.reason == "external_load"
    assert w.detail.startswith("load source se = 0.7, between low 0.5 and high 0.9: max_running and max_cores scaled")
    assert "VO atlas runs 4 core(s), the load allows 4 of its max_cores 8, the job asks 2" in w.detail


def test_the_throttle_factor_series_says_it_scales_both():
    assert LOADS["mysched_load_throttle_factor"][0].startswith("Fraction of max_running and of max_cores a load rule")
