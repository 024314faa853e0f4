"""A 4-core job behind a stream of 1-core jobs on the live farm's 4-core nodes (marked
`torque`): it gets a reservation, the stream backfills only where it would not delay it, and
it starts no later than its reservation said. (The multi-core partition, which would serve
the job by default instead, is off here: tests/backends/test_torque_drain.py has it on.)"""

from __future__ import annotations

import json
import time

import pytest

from mysched.core.model.batch import JobState

from .test_torque_live import all_running, cleanup, qsub, quiet_four_core_farm, server, start_daemon  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque

INTERVAL = 3.0


def test_a_multicore_job_starts_no_later_than_its_reservation(server, cleanup, tmp_path):  # noqa: F811
    slots = sum(n.slots for n in quiet_four_core_farm(server))
    cfg = tmp_path / "m.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                   f'scheduler = {{ interval = {INTERVAL:g}; min_interval = 1; reservation_depth = 1; }};\n'
                   'drain = { rate = 0; };\n')
    state = tmp_path / "s"
    proc = start_daemon(cfg, tmp_path)
    try:
        fill = [qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:02:00", seconds=40 + 2 * i) for i in range(slots)]
        cleanup.extend(fill)
        t0 = time.time()
        assert all_running(server, fill), "farm not filled"
        big = qsub("alice", "atlas", "nodes=1:ppn=4,walltime=00:02:00", seconds=5)
        stream = [qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:10:00", seconds=300) for _ in range(2 * slots)]
        cleanup += [big, *stream]
        promised = None
        started = None
        while time.time() - t0 < 240:
            try:
                doc = json.loads((state / "status.json").read_text())
            except (OSError, ValueError):
                doc = {}
            r = (doc.get("reservations") or {}).get(big)
            if r is not None and promised is None:
                promised = r["start"]
            job = next((j for j in server.snapshot().jobs if j.id == big), None)
            if job is not None and job.state in (JobState.RUNNING, JobState.EXITING) or job is None:
                started = time.time()
                break
            time.sleep(0.5)
        log = (tmp_path / "d.log").read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    assert promised is not None, "the 4-core job never got a reservation"
    assert started is not None, f"the 4-core job did not start (reserved from {promised}):\n{log[-2000:]}"
    print(f"reserved start in {promised - t0:.0f} s, started after {started - t0:.0f} s")
    assert started <= promised + INTERVAL + 2  # no later than the reservation said (a cycle to notice)
    backfilled = sum(1 for j in server.snapshot().jobs if j.id in stream and j.state == JobState.RUNNING)
    assert backfilled > 0  # the stream ran on the other nodes meanwhile
