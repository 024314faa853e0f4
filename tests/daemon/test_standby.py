"""Two daemons on one history store and one farm: one starts jobs, the other stands by and
takes over, settling what the first left half done; a lost lock stops starts at once."""

from __future__ import annotations

import argparse
import os
import time

from prometheus_client import CollectorRegistry

from mysched.cli import statusdoc
from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node, TraceJob
from mysched.backends.sim.farm import SimulatedFarm
from mysched.daemon.cycle import Daemon
from mysched.daemon.metrics import Metrics
from mysched.daemon.statusfile import read_status
from mysched.history.leader import FileLeadership
from mysched.history.store import Store

from ..conftest import queued
from .test_daemon import CFG, FlakyServer


class Killed(BaseException):
    """kill -9 in the middle of a cycle: nothing after it runs."""


def pair(tmp_path, n_jobs=6):
    wl = [TraceJob(queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=100.0 + i), 1e6)
          for i in range(n_jobs)]
    farm = SimulatedFarm([Node("wn01", 4), Node("wn02", 4)], wl, start=100.0)
    farm.advance(200.0)
    server = FlakyServer(farm)
    snaps = {"a": 0, "b": 0}
    daemons = {}
    for name in ("a", "b"):
        store = Store(f"sqlite:///{tmp_path}/history.db")
        lead = FileLeadership(f"{tmp_path}/history.db.leader", 4.0)
        m = Metrics(CollectorRegistry())
        d = Daemon(config_from_text(CFG), _Counting(server, snaps, name), store=store, metrics=m,
                   state_dir=str(tmp_path / name), wall=time.time, lead=lead)
        daemons[name] = (d, m)
    return daemons, server, farm, snaps


class _Counting:
    """The shared server, counting the snapshots each daemon takes."""

    def __init__(self, server, counts, name):
        self.server, self.counts, self.name = server, counts, name

    def snapshot(self):
        self.counts[self.name] += 1
        return self.server.snapshot()

    def __getattr__(self, attr):
        return getattr(self.server, attr)


def _gauge(m: Metrics) -> float:
    return m.registry.get_sample_value("mysched_leader")


def test_the_second_daemon_stands_by_without_touching_the_server(tmp_path):
    daemons, _server, _farm, snaps = pair(tmp_path)
    (a, ma), (b, mb) = daemons["a"], daemons["b"]
    assert a.cycle().result == "ok"
    out = b.cycle()
    assert out.result == "standby" and out.started == 0
    assert _gauge(ma) == 1 and _gauge(mb) == 0
    assert snaps == {"a": 1, "b": 0}  # a standby reads nothing from pbs_server
    assert read_status(str(tmp_path / "a"))["role"]["role"] == "leader"
    sb = statusdoc.standby(str(tmp_path / "b"), 60)
    assert sb["role"] == "standby" and sb["leader"]["pid"] == os.getpid()


def test_takeover_settles_the_dead_leaders_starts_and_starts_each_job_once(tmp_path):
    daemons, server, farm, _ = pair(tmp_path, n_jobs=6)
    (a, _ma), (b, mb) = daemons["a"], daemons["b"]
    real = server.run_job
    calls = []

    def dies_after_two(job_id, placement):
        calls.append(job_id)
        real(job_id, placement)
        if len(calls) == 2:
            a.role.lead._close()  # the kernel drops a dead process's flock
            raise Killed()
    server.run_job = dies_after_two
    try:
        a.cycle()
    except Killed:
        pass
    server.run_job = real
    assert len(b.store.open_intents()) == 6  # a planned 6, started 2, recorded nothing
    out = b.cycle()
    assert out.result == "ok" and _gauge(mb) == 1
    assert b.store.open_intents() == []
    recovered = b.store.recent_cycles(5)[-1]
    assert recovered["result"] == "recovered" and recovered["n_started"] == 2
    assert out.started == 4  # the other four, once each
    assert sorted(server.run_calls) == sorted(farm.jobs)  # every job run exactly once
    assert all(j.state == JobState.RUNNING for j in farm.jobs.values())


def test_a_leader_that_loses_its_lock_mid_cycle_starts_nothing_more(tmp_path):
    daemons, server, farm, _ = pair(tmp_path, n_jobs=6)
    (a, _ma), (b, _mb) = daemons["a"], daemons["b"]
    real = server.run_job

    def lock_replaced(job_id, placement):
        real(job_id, placement)
        if len(server.run_calls) == 3:
            os.unlink(f"{tmp_path}/history.db.leader")  # another daemon may lock a new file now
    server.run_job = lock_replaced
    out = a.cycle()
    assert out.result == "partial" and "leadership" in out.error
    assert out.started == 3 and len(server.run_calls) == 3
    # the three not tried are recorded as such, so their intents are closed
    assert [s["result"] for s in a.store.starts_of("5.s")] == ["not_leader"]
    assert a.store.open_intents() == []
    again = a.cycle()  # nobody holds the new file: it locks it and leads again
    assert again.result == "ok" and again.started == 3 and a.role.name == "leader"
    assert b.cycle().result == "standby"


def test_status_commands_name_the_standby_and_point_to_the_leader(tmp_path):
    daemons, *_ = pair(tmp_path)
    (a, _), (b, _) = daemons["a"], daemons["b"]
    a.cycle()
    b.cycle()
    # same state directory for both (one host): the status names the standby waiting
    b_doc = tmp_path / "b" / "standby.json"
    os.replace(b_doc, tmp_path / "a" / "standby.json")
    with open(tmp_path / "a" / "standby.json") as f:
        text = f.read().replace(f'"pid":{os.getpid()}', '"pid":4242', 1)
    (tmp_path / "a" / "standby.json").write_text(text)
    args = argparse.Namespace(state_dir=str(tmp_path / "a"), config=None, max_age=None)
    doc = statusdoc.load(args)
    assert any("standby: daemon pid 4242" in n for n in statusdoc.notes(doc))
    # on the standby's own host there is no current status: say where the leader is
    b.cycle()
    args = argparse.Namespace(state_dir=str(tmp_path / "b"), config=None, max_age=None)
    try:
        statusdoc.load(args)
    except Exception as exc:  # noqa: BLE001
        assert "is the standby; the leader is pid" in str(exc)
    else:
        raise AssertionError("the standby's host has no status of its own")


def test_leading_from_the_start_is_logged_as_info_and_a_takeover_as_a_warning(tmp_path, caplog):
    import logging

    from mysched.daemon.metrics import NullMetrics
    from mysched.daemon.role import Role

    caplog.set_level(logging.INFO, logger="mysched")
    first = Role(FileLeadership(str(tmp_path / "l.lock"), 4.0), NullMetrics(), None)
    assert first.leading() == (True, True)
    assert [r.levelname for r in caplog.records if "leader now" in r.getMessage()] == ["INFO"]
    second = Role(FileLeadership(str(tmp_path / "l.lock"), 4.0), NullMetrics(), None)
    assert second.leading() == (False, False)
    first.lead.release()
    assert second.leading() == (True, True)
    assert [r.levelname for r in caplog.records if "leader now" in r.getMessage()] == ["INFO", "WARNING"]


def test_a_daemon_without_a_lock_says_it_leads_and_a_dry_run_says_it_does_not(tmp_path):
    """No history store and no state dir: nothing to lock, the daemon starts jobs -- its
    mysched_leader gauge must say so (an alert on 'no leader' fired on a working farm)."""
    wl = [TraceJob(queued("1.s", "u1", "atlas", submit=100.0), 1e6)]
    for dry, want in ((False, 1), (True, 0)):
        farm = SimulatedFarm([Node("wn01", 4)], wl, start=100.0)
        farm.advance(200.0)
        m = Metrics(CollectorRegistry())
        d = Daemon(config_from_text(CFG), FlakyServer(farm), metrics=m, dry_run=dry,
                   state_dir=str(tmp_path / f"d{dry}"))
        assert d.cycle().result == ("dry-run" if dry else "ok")
        assert _gauge(m) == want
