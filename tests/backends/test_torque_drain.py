"""The multi-core partition on the live farm (marked `torque`), with no drain setting at all:
a 4-core job queued behind a stream of 1-core jobs on the 4-core nodes gets a node drained for
it, `mysched why` gives the latest time the partition has room for it, `mysched nodes` lists
the node as draining for 4-core jobs, and the job starts by that time."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mysched.core.model.batch import JobState

from .test_torque_live import all_running, cleanup, qsub, quiet_four_core_farm, server, start_daemon  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque

INTERVAL = 3.0
PROMISE = re.compile(r"drain: the partition has room on (\S+) within (\d+) s at the latest")


def _mysched(*args: str) -> str:
    return subprocess.run([str(Path(sys.executable).parent / "mysched"), *args], capture_output=True, text=True,
                          timeout=60).stdout


def test_a_multicore_job_behind_a_single_core_stream_starts_by_the_partitions_promise(
        server, cleanup, tmp_path):  # noqa: F811
    slots = sum(n.slots for n in quiet_four_core_farm(server))
    cfg = tmp_path / "m.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                   f'scheduler = {{ interval = {INTERVAL:g}; min_interval = 1; }};\n')
    state = tmp_path / "s"
    proc = start_daemon(cfg, tmp_path)
    try:
        fill = [qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:02:00", seconds=30 + 3 * i) for i in range(slots)]
        cleanup.extend(fill)
        t0 = time.time()
        assert all_running(server, fill), "farm not filled"
        big = qsub("alice", "atlas", "nodes=1:ppn=4,walltime=00:02:00", seconds=5)
        time.sleep(1)  # the stream is submitted after it: it ranks behind
        stream = [qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:10:00", seconds=300) for _ in range(2 * slots)]
        cleanup += [big, *stream]
        promised = node = why = nodes_out = None
        started = None
        while time.time() - t0 < 240:
            try:
                doc = json.loads((state / "status.json").read_text())
            except (OSError, ValueError):
                doc = {}
            if promised is None and doc.get("drains"):
                row = next((r for r in doc.get("jobs", ()) if isinstance(r, list) and r and r[0] == big), None)
                m = PROMISE.search(str(row)) if row is not None else None
                if m:
                    node, promised = m.group(1), time.time() + int(m.group(2))
                    why, nodes_out = _mysched("why", big, "--state-dir", str(state)), \
                        _mysched("nodes", "--state-dir", str(state))
            job = next((j for j in server.snapshot().jobs if j.id == big), None)
            if job is None or job.state in (JobState.RUNNING, JobState.EXITING):
                started = time.time()
                break
            time.sleep(0.5)
        log = (tmp_path / "d.log").read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    assert promised is not None, f"no node drained with a promise for the 4-core job:\n{log[-2000:]}"
    assert PROMISE.search(why), why
    assert f"{node}: draining for 4-core jobs" in nodes_out, nodes_out  # the cores the drain keeps, named
    assert started is not None, f"the 4-core job did not start (promised by {promised - t0:.0f} s):\n{log[-2000:]}"
    print(f"promised room by {promised - t0:.0f} s, started after {started - t0:.0f} s")
    assert started <= promised + INTERVAL + 2  # by the time promised (a cycle to notice)
    ran = sum(1 for j in server.snapshot().jobs if j.id in stream and j.state == JobState.RUNNING)
    assert ran > 0  # the stream ran on the other nodes meanwhile
