"""Scheduled downtimes against a live pbs_server (marked `torque`; skipped when none answers):
nodes in a window get no job, and a job that would run into a window ahead waits for it with
reason `downtime` while a short one starts."""

from __future__ import annotations

import time

import pytest

from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon

from .test_torque_live import _quiet_farm, cleanup, qsub, server  # noqa: F401 - fixtures

pytestmark = pytest.mark.torque


def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))


def _config(start: float, end: float, hosts: str):
    return config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                            f'downtimes = {{ maint = {{ start = "{_iso(start)}"; end = "{_iso(end)}"; hosts = [{hosts}]; }}; }};')


def test_nodes_in_a_window_get_no_job(server, cleanup, tmp_path):  # noqa: F811 - fixtures
    _quiet_farm(server)
    now = time.time()
    for _ in range(6):
        cleanup.append(qsub("alice", "atlas", "walltime=00:10:00", seconds=60))
    d = Daemon(_config(now - 60, now + 3600, '"node01", "node02"'), server, state_dir=str(tmp_path))
    out = d.cycle()
    assert out.result == "ok", out.error
    assert out.started == 6
    where = {j.id: dict(j.placement) for j in server.snapshot().jobs if j.id in cleanup}
    assert all(set(p) <= {"node03", "node04"} for p in where.values()), where


def test_a_job_that_would_run_into_the_window_waits_and_a_short_one_starts(server, cleanup, tmp_path):  # noqa: F811
    _quiet_farm(server)
    now = time.time()
    short = qsub("alice", "atlas", "walltime=00:10:00", seconds=60)
    long = qsub("carol", "cms", "walltime=01:00:00", seconds=60)
    cleanup.extend([short, long])
    d = Daemon(_config(now + 1800, now + 5400, ""), server, state_dir=str(tmp_path))
    out = d.cycle()
    assert out.result == "ok", out.error
    assert [s.job_id for s in out.plan.starts] == [short]
    w = out.plan.waits[long]
    assert w.reason == "downtime" and "maint (" in w.detail
