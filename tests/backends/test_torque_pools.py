"""A package guarantee on the live farm (marked `torque`): atlas is guaranteed one package of
4 slots + 1 GB; cms borrows it (short jobs only) while atlas has nothing waiting, then atlas's 4-core job waits
for its package, the host is held -- cms's single-core jobs wait with `pool_held` -- and
the 4-core job starts there as soon as the loans end."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mysched.core.model.batch import JobState

from .test_torque_live import all_running, cleanup, qsub, quiet_four_core_farm, server, start_daemon  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque

INTERVAL = 3.0
LOAN = 60


def _status(state: Path) -> dict:
    try:
        return json.loads((state / "status.json").read_text())
    except (OSError, ValueError):
        return {}


def test_a_guaranteed_job_starts_on_held_packages_while_others_wait_pool_held(server, cleanup, tmp_path):  # noqa: F811
    slots = 4 * len(quiet_four_core_farm(server))
    cfg = tmp_path / "p.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                   f'scheduler = {{ interval = {INTERVAL:g}; min_interval = 1; reservation_depth = 0; }};\n'
                   'pools = { mc = { hosts = ["*"]; package = { slots = 4; mem = "1gb"; }; vos = { atlas = 1; };\n'
                   f'  loan = {{ queues = ["all"]; max_walltime = {LOAN}; }}; }}; }};\n')
    state = tmp_path / "s"
    proc = start_daemon(cfg, tmp_path)
    try:
        # cms fills the farm: long jobs (too long to borrow) the hosts outside the guarantee,
        # then short ones -- loans -- the guarded host
        fill = [qsub("carol", "cms", "nodes=1:ppn=1,walltime=00:10:00", seconds=300) for _ in range(slots - 4)]
        cleanup.extend(fill)
        all_running(server, fill)
        loaned = [qsub("carol", "cms", f"nodes=1:ppn=1,walltime={LOAN}", seconds=15 + 4 * i) for i in range(4)]
        fill += loaned
        cleanup.extend(loaned)
        assert all_running(server, fill), "farm not filled"
        loans = {h for h, _ in (j.placement[0] for j in server.snapshot().jobs if j.id in loaned)}
        big = qsub("alice", "atlas", "nodes=1:ppn=4,mem=1gb,walltime=00:10:00", seconds=20)
        stream = [qsub("carol", "cms", f"nodes=1:ppn=1,walltime={LOAN}", seconds=120) for _ in range(slots)]
        cleanup += [big, *stream]
        t1 = time.time()
        held_waits: set[str] = set()
        held_hosts: set[str] = set()
        started = None
        while time.time() - t1 < 3 * LOAN:
            doc = _status(state)
            jobs = {r[0]: r for r in (doc.get("jobs") or [])}
            cols = doc.get("job_columns") or []
            if cols:
                ri, si = cols.index("reason"), cols.index("id")
                held_waits |= {r[si] for r in jobs.values() if r[ri] == "pool_held" and r[si] in stream}
            held_hosts |= set((doc.get("pools") or {}).get("mc", {}).get("held_hosts") or [])
            job = next((j for j in server.snapshot().jobs if j.id == big), None)
            if job is not None and job.state in (JobState.RUNNING, JobState.EXITING):
                started = (time.time(), job)
                break
            time.sleep(0.5)
        log = (tmp_path / "d.log").read_text()
    finally:
        proc.terminate()
        proc.wait(30)
    assert started is not None, f"the guaranteed job did not start within {3 * LOAN} s:\n{log[-2000:]}"
    t_start, job = started
    hosts = {h for h, _ in job.placement}
    print(f"guaranteed job started after {t_start - t1:.0f} s on {hosts}; held {held_hosts}; "
          f"{len(held_waits)} cms job(s) waited pool_held; guarded before: {loans}")
    assert len(hosts) == 1 and hosts <= held_hosts  # on the package held for it ...
    assert hosts == loans  # ... the one the loans had borrowed
    assert held_waits, "no cms job waited with pool_held while the package was held"
    assert t_start - t1 <= LOAN + 2 * INTERVAL + 5  # the loans ended within their walltime
