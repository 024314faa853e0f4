"""Accounting ingestion speed (on demand: `pytest -m bench tests/bench`, needs pytest-benchmark).

A synthetic day of TORQUE 6.1 accounting: Q, S and E lines as pbs_server writes them, 100k
lines in all; ingested into a fresh SQLite store, and re-read when nothing changed.
"""

from __future__ import annotations

import time

import pytest

pytest.importorskip("pytest_benchmark")

from mysched.history.ingest import ingest_accounting  # noqa: E402
from mysched.history.store import Store  # noqa: E402

pytestmark = pytest.mark.bench


def synthetic_day(path, jobs: int, t0: int = 1795300000) -> int:
    """Write `jobs` jobs (3 lines each) as TORQUE 6.1 does; return the line count."""
    with open(path, "w") as f:
        for i in range(jobs):
            st, en, n = t0 + i, t0 + i + 3600 + i % 500, 1 + (i % 4) * 2
            stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(st))
            jid = f"{100000 + i}.torque.example.org"
            common = (f"user=atl{i % 50:03d} group=atlas jobname=cream_{i} queue=atlas ctime={st - 100} "
                      f"qtime={st - 100} etime={st - 100} start_count=1 start={st} owner=atl@ce01.example.org "
                      f"exec_host=wn{i % 300:03d}/0-{n - 1} Resource_List.nodes=1:ppn={n} "
                      f"Resource_List.walltime=48:00:00 Resource_List.pmem=2000mb ")
            f.write(f"{stamp};Q;{jid};queue=atlas\n{stamp};S;{jid};{common}\n")
            f.write(f"{time.strftime('%m/%d/%Y %H:%M:%S', time.localtime(en))};E;{jid};{common}session=1234 "
                    f"total_execution_slots={n} unique_node_count=1 end={en} Exit_status=0 "
                    "resources_used.cput=01:02:03 resources_used.energy_used=0 resources_used.mem=2000000kb "
                    "resources_used.vmem=3000000kb resources_used.walltime=01:00:00 \n")
    return 3 * jobs


@pytest.fixture(scope="module")
def day(tmp_path_factory):
    d = tmp_path_factory.mktemp("acct")
    n = synthetic_day(d / "20261122", 33_334)
    return d, n


def test_ingest_100k_lines(benchmark, day, tmp_path):
    d, n = day
    runs = iter(range(1000))

    def fresh():
        return (Store(f"sqlite:///{tmp_path}/h{next(runs)}.db"),), {}

    rep = benchmark.pedantic(lambda s: ingest_accounting(s, str(d), trust_all=True), setup=fresh, rounds=3)
    assert rep.lines == n and rep.records_added == n // 3


def test_reingest_unchanged(benchmark, day, tmp_path):
    d, _ = day
    s = Store(f"sqlite:///{tmp_path}/h.db")
    ingest_accounting(s, str(d), trust_all=True)
    rep = benchmark(lambda: ingest_accounting(s, str(d), trust_all=True))
    assert rep.lines == 0
