"""Performance regression guard (on demand: `pytest -m bench tests/bench`, needs pytest-benchmark).

Not part of the default run: timings are measured, compared with saved baselines by
pytest-benchmark (`--benchmark-autosave`, `--benchmark-compare`), never asserted in unit tests.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pytest_benchmark")

from mysched.sim.benchfarm import bench_config, bench_snapshot  # noqa: E402
from mysched.core.planner import NodeIndex, plan  # noqa: E402
from mysched.core.share.usage import Usage  # noqa: E402

pytestmark = pytest.mark.bench


@pytest.fixture(scope="module")
def target_farm():
    return bench_config(), bench_snapshot(nodes=2500, slots=8, running=18000, queued=50000)


def test_planner_at_target_size(benchmark, target_farm):
    """Cold, as on TORQUE (every snapshot brings new job objects): the whole tally is built."""
    cfg, snap = target_farm
    usage = Usage(vo={f"vo{i:02d}": 1000.0 * (i + 1) for i in range(20)})
    p = benchmark(lambda: plan(snap, cfg, usage, snap.time))
    assert len(p.starts) > 1000


def test_planner_at_target_size_warm(benchmark, target_farm):
    """A kept index on an unchanged farm: what a cycle costs beyond the jobs that changed."""
    cfg, snap = target_farm
    usage = Usage(vo={f"vo{i:02d}": 1000.0 * (i + 1) for i in range(20)})
    index = NodeIndex()
    p = benchmark(lambda: plan(snap, cfg, usage, snap.time, index=index))
    assert len(p.starts) > 1000


@pytest.mark.parametrize("queued", [1000, 10000, 50000])
def test_planner_scaling_with_queue(benchmark, queued):
    cfg = bench_config()
    snap = bench_snapshot(nodes=1250, slots=8, running=9000, queued=queued)
    benchmark(lambda: plan(snap, cfg, Usage(), snap.time))


def test_simulator_on_synthetic_day(benchmark):
    from mysched.cli.common import config_or_default
    from mysched.backends.sim.farm import make_nodes
    from mysched.sim.replay import SimOptions, simulate
    from mysched.sim.workloads.synthetic import SyntheticSpec, generate
    cfg = config_or_default(None)
    wl = generate(SyntheticSpec(duration=24 * 3600, slots=400))
    r = benchmark.pedantic(lambda: simulate(wl, cfg, make_nodes(50, 8), SimOptions()), rounds=1, iterations=1)
    assert r.started == len(wl)


@pytest.mark.parametrize("policy", ["mysched", "fifo"])
def test_simulator_on_lpc_egee(benchmark, traces, policy):
    """The real EGEE trace (first 50,000 jobs) on 70 x 2 cores, 60 s cycles (issue #6 item 3;
    tools/accasim_compare.sh compares the whole trace with AccaSim)."""
    from mysched.core.settings import Config, auto_vos
    from mysched.backends.sim.farm import make_nodes
    from mysched.sim.replay import SimOptions, simulate
    from mysched.sim.workloads import load_trace
    wl, _ = load_trace(traces / "LPC-EGEE-2004-1.2-cln.swf.gz", first=50000)
    cfg = auto_vos(Config(), {tj.job.group: tj.job.vo or tj.job.group for tj in wl})
    r = benchmark.pedantic(lambda: simulate(wl, cfg, make_nodes(70, 2), SimOptions(policy=policy)),
                           rounds=3, iterations=1)
    assert r.started == len(wl)
