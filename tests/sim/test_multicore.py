"""Multi-core jobs among single-core ones in the simulator: the report has waits and bounded
slowdown per size class and the cost of holding nodes; reservations and the multi-core
partition shorten the multi-core waits without share violations."""

from __future__ import annotations

import sys

from mysched.config import config_from_text
from mysched.core.model.batch import Node
from mysched.sim.replay import simulate
from mysched.sim.result import SimOptions
from mysched.sim.workloads.synthetic import SyntheticSpec, generate

from ..conftest import REPO

BASE = (REPO / "etc" / "mysched.cfg").read_text()


OFF = "drain = { rate = 0; };\n"
"""The partition off (on by default): the baselines it is measured against."""


def _run(depth: int, drain: str = OFF):
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


def test_split_multicore_replays_the_same_work_as_single_core_jobs():
    """The baseline for what the one-node shape costs: the same jobs, the same core-hours --
    a workload drawn again with --mcore-fraction 0 is another draw, off by up to a fifth."""
    from mysched.sim.workloads import split_multicore

    wl = generate(SyntheticSpec(duration=24 * 3600, slots=160, seed=5, mcore_fraction=0.5))
    wide = [tj for tj in wl if tj.job.cores > 1]
    assert wide
    split = split_multicore(wl)
    assert all(tj.job.cores == 1 and tj.job.request is None for tj in split)
    assert len(split) == len(wl) + sum(tj.job.cores - 1 for tj in wide)
    assert len({tj.job.id for tj in split}) == len(split)
    assert sum(tj.runtime * tj.job.cores for tj in split) == sum(tj.runtime * tj.job.cores for tj in wl)
    one = wide[0]
    parts = [tj for tj in split if tj.job.id.startswith(one.job.id + ":")]
    assert len(parts) == one.job.cores
    assert {(tj.job.submit_time, tj.runtime, tj.job.user, tj.job.walltime) for tj in parts} == {
        (one.job.submit_time, one.runtime, one.job.user, one.job.walltime)}
    assert sum(tj.job.mem for tj in parts) == one.job.mem
    again = generate(SyntheticSpec(duration=24 * 3600, slots=160, seed=5, mcore_fraction=0.0))
    assert sum(tj.runtime for tj in again) != sum(tj.runtime for tj in split)


def test_simulate_split_multicore_reports_no_multicore_job(tmp_path, capsys):
    import json

    from mysched.cli.main import main

    js = tmp_path / "s.json"
    assert main(["simulate", "--duration", "4", "--mcore-fraction", "0.5", "--split-multicore",
                 "--progress", "never", "--json", str(js)]) == 0
    assert "multi-core jobs split into single-core ones" in capsys.readouterr().out
    r = json.loads(js.read_text())
    assert set(r["by_size"]) == {"1"} and r["started"] == r["jobs"]
    wl = generate(SyntheticSpec(duration=4 * 3600, slots=400, seed=1, mcore_fraction=0.5))
    wide = [tj.job.cores for tj in wl if tj.job.cores > 1]
    assert wide and r["jobs"] == len(wl) + sum(wide) - len(wide)
    # ... but says how long the jobs waited as they were submitted: each split job once
    assert r["as_submitted"]["2-8"]["jobs"] == len(wide)
    assert r["as_submitted"]["1"]["jobs"] == len(wl) - len(wide)


def test_a_split_job_waited_the_mean_of_its_pieces_once_all_started():
    """The split run's waits as submitted: what fair share alone gives the multi-core jobs,
    set beside the unsplit run's (tools/mcore_matrix.py)."""
    from mysched.sim.replay import SplitWaits

    split = SplitWaits({f"7:{k}": ("7", 4) for k in range(1, 5)} | {f"9:{k}": ("9", 2) for k in (1, 2)})
    for jid, cls, wait in (("a", "1", 10.0), ("7:1", "1", 0.0), ("7:2", "1", 100.0), ("9:1", "1", 50.0),
                           ("7:3", "1", 200.0), ("b", "1", 30.0), ("7:4", "1", 500.0)):
        split.started(jid, cls, wait)
    got = split.by_size()
    assert got == {"1": [10.0, 30.0], "2-8": [200.0]}  # job 9 has a piece still waiting


def test_an_unsplit_run_reports_no_waits_as_submitted(tmp_path):
    import json

    from mysched.cli.main import main

    js = tmp_path / "s.json"
    assert main(["simulate", "--duration", "2", "--mcore-fraction", "0.5", "--progress", "never",
                 "--json", str(js)]) == 0
    assert "as_submitted" not in json.loads(js.read_text())


def test_mcore_sim_compares_with_the_same_jobs_split_and_drains_at_most_half_the_nodes():
    """tools/mcore_sim.py, the issue's yardstick: its single-core run is the very workload with
    the multi-core jobs split (not another draw), and by default at most half the nodes drain."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, str(REPO / "tools" / "mcore_sim.py"), "--nodes", "10",
                          "--duration", "12", "--seed", "5"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    runs = [ln for ln in out.stdout.splitlines() if ln.startswith("$ mysched simulate")]
    assert len(runs) == 2 and "--split-multicore" in runs[0] and "--split-multicore" not in runs[1]
    assert runs[0].replace(" --split-multicore", "") == runs[1]
    assert "summary 10 x 8, --mcore-fraction 0.5, drain 120/h, at most 5 draining:" in out.stdout
    assert "mean wait 1 core" in out.stdout and "against the single-core run's mean wait" in out.stdout


def _doc(one_h: float, mc_h: float | None, occ: float = 0.9, key: str = "by_size") -> dict:
    sizes = {"1": {"jobs": 100, "wait_mean": one_h * 3600}}
    if mc_h is not None:
        sizes["2-8"] = {"jobs": 10, "wait_mean": mc_h * 3600}
    return {key: sizes, "occupancy": occ, "share_violations": 0}


def test_the_matrix_sets_the_wait_ratio_beside_that_of_the_same_jobs_split():
    """tools/mcore_matrix.py: multi-core jobs of a VO over its share wait longer whatever their
    shape; the ratio is held to 2 x what the same jobs split waited, never to less than 2."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from mcore_matrix import verdict
    finally:
        sys.path.remove(str(REPO / "tools"))
    split = {**_doc(1.0, None), "as_submitted": _doc(2.0, 5.0)["by_size"]}  # split, they waited 2.5 x
    row = verdict({"mysched": _doc(2.0, 6.0), "easy": _doc(2.0, 7.0, 0.895), "split": split})
    assert (round(row["ratio"], 2), round(row["split_ratio"], 2), round(row["vs_split_ratio"], 2)) == (3.0, 2.5, 1.2)
    assert row["missed"] == []
    fair = {**_doc(1.0, None), "as_submitted": _doc(2.0, 1.0)["by_size"]}  # split, they waited less
    row = verdict({"mysched": _doc(2.0, 6.0), "easy": _doc(2.0, 7.0, 0.95), "split": fair})
    assert row["vs_split_ratio"] == 3.0 and row["missed"] == ["vs-split>2", "occ<easy-1"]


def test_the_matrix_holds_the_multicore_wait_to_easys_unless_fair_share_alone_waited_longer():
    """tools/mcore_matrix.py: easy keeps no shares. Where the same jobs split waited longer
    under fair share than easy's multi-core jobs did, the shape is not what kept them waiting:
    the wait is held to the split run's; otherwise to easy's."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        from mcore_matrix import verdict
    finally:
        sys.path.remove(str(REPO / "tools"))
    slow_split = {**_doc(1.0, None), "as_submitted": _doc(4.0, 9.0)["by_size"]}
    row = verdict({"mysched": _doc(4.0, 8.0), "easy": _doc(2.0, 6.0), "split": slow_split})
    assert row["split_mc_wait"] == 9.0 * 3600 and row["missed"] == []
    quick_split = {**_doc(1.0, None), "as_submitted": _doc(4.0, 5.0)["by_size"]}
    row = verdict({"mysched": _doc(4.0, 8.0), "easy": _doc(2.0, 6.0), "split": quick_split})
    assert row["missed"] == ["mc>easy"]


def test_the_matrix_names_a_bad_argument_without_a_traceback():
    """tools/mcore_matrix.py --farms 8y50 (a typo): a usage error naming the option, exit 2."""
    import subprocess

    out = subprocess.run([sys.executable, str(REPO / "tools" / "mcore_matrix.py"), "--farms", "50x8,8y50"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert "--farms 50x8,8y50: expected NODESxSLOTS" in out.stderr and "Traceback" not in out.stderr
