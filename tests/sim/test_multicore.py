"""Multi-core jobs among single-core ones in the simulator: the report has waits and bounded
slowdown per size class and the cost of holding nodes; reservations and the multi-core
partition shorten the multi-core waits without share violations."""

from __future__ import annotations

from mysched.config import config_from_text
from mysched.core.model import Node
from mysched.sim.replay import simulate
from mysched.sim.result import SimOptions
from mysched.sim.workloads.synthetic import SyntheticSpec, generate

from ..conftest import REPO

BASE = (REPO / "etc" / "mysched.cfg").read_text()


def _run(depth: int, drain: str = ""):
    text = BASE.replace("reservation_depth = 1;", f"reservation_depth = {depth};")
    assert f"reservation_depth = {depth};" in text
    cfg = config_from_text(text + drain)
    wl = generate(SyntheticSpec(duration=24 * 3600, slots=160, seed=5, mcore_fraction=0.5))
    nodes = tuple(Node(f"wn{i:04d}", 8) for i in range(1, 21))
    return simulate(wl, cfg, nodes, SimOptions()).to_json()


def test_the_partition_shortens_multicore_waits_and_reports_what_it_costs():
    plain = _run(0)
    easy = _run(1)
    part = _run(1, 'drain = { rate = 20; max_draining = 6; keep = "30m"; };\n')
    for r in (plain, easy, part):
        assert set(r["by_size"]) == {"1", "2-8"} and r["share_violations"] == 0
        assert r["started"] == r["jobs"]
    assert plain["drain_waste"] == 0.0 and part["drain_waste"] > 0.0
    mc = {k: r["by_size"]["2-8"]["wait_mean"] for k, r in (("plain", plain), ("easy", easy), ("part", part))}
    assert mc["part"] < 0.7 * mc["plain"], mc
    assert part["by_size"]["2-8"]["bounded_slowdown"] < plain["by_size"]["2-8"]["bounded_slowdown"]


def test_each_vo_reports_its_waits_by_size_so_multicore_waits_compare_within_the_vo():
    """The multi-core jobs are atlas and cms production: their wait is set beside those VOs'
    own single-core jobs, apart from where fair share puts the VO."""
    r = _run(1, 'drain = { rate = 20; max_draining = 6; keep = "30m"; };\n')
    with_mc = {vo for vo, v in r["vo"].items() if "2-8" in v["wait_by_size"]}
    assert with_mc == {"atlas", "cms"}
    for cls, whole in r["by_size"].items():
        parts = [v["wait_by_size"][cls] for v in r["vo"].values() if cls in v["wait_by_size"]]
        assert sum(p["jobs"] for p in parts) == whole["jobs"]
        mean = sum(p["mean"] * p["jobs"] for p in parts) / whole["jobs"]
        assert abs(mean - whole["wait_mean"]) < 1.0
