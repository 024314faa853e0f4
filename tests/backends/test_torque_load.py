"""Node load on the live farm (marked `torque`): pbs_mom reports each node's load average in
its `status`; with `node_load.max_load_per_core` below it the node takes no new job (reason
`node_load`), above it the job starts. A CPU hog raises the load (the farm's moms share one
host, so every node reports it)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from mysched.config import config_from_text
from mysched.core.model.batch import JobState, NodeState
from mysched.daemon.cycle import Daemon

from .test_torque_live import cleanup, qsub, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque

BASE = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'


def test_a_node_whose_mom_reports_high_load_gets_no_new_job(server, cleanup, tmp_path):  # noqa: F811
    if any(j.state in (JobState.QUEUED, JobState.RUNNING) for j in server.snapshot().jobs):
        pytest.skip("the farm runs or queues other jobs")
    hog = subprocess.Popen(["nice", "-n", "19", sys.executable, "-c", "while True: pass"])
    try:
        t0 = time.monotonic()
        while True:  # pbs_mom reports every 45 s; the 1-minute load average climbs meanwhile
            up = [n for n in server.snapshot().nodes if n.state == NodeState.FREE]
            if up and all(n.load is not None and n.load >= 0.6 for n in up):
                break
            if time.monotonic() - t0 > 240:
                pytest.skip(f"load average never reached 0.6: {[(n.name, n.load) for n in up]}")
            time.sleep(3)
        per_core = min(n.load / n.slots for n in up)
        jid = qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:05:00", seconds=5)
        cleanup.append(jid)
        low = config_from_text(BASE + f"node_load = {{ max_load_per_core = {per_core / 2:.3f}; }};\n")
        out = Daemon(low, server, state_dir=str(tmp_path / "a")).cycle()
        assert out.result == "ok" and not out.plan.starts
        w = out.plan.waits[jid]
        assert w.reason == "node_load" and w.nodes_rejected["node_load"] == len(up)
        assert set(out.plan.node_load) == {n.name for n in up} and "per core" in out.plan.node_load[up[0].name]
        assert next(j for j in server.snapshot().jobs if j.id == jid).state == JobState.QUEUED
        high = config_from_text(BASE + f"node_load = {{ max_load_per_core = {per_core * 4 + 1:.3f}; }};\n")
        out = Daemon(high, server, state_dir=str(tmp_path / "b")).cycle()
        assert [s.job_id for s in out.plan.starts] == [jid] and out.started == 1
        print(f"mom load per core {per_core:.2f}: threshold {per_core / 2:.3f} held the job, "
              f"{per_core * 4 + 1:.3f} started it")
    finally:
        hog.kill()
        hog.wait()
