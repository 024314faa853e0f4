"""The daemon cycle against a scripted batch server: failures are absorbed, counted, never doubled."""

from __future__ import annotations

import json

import pytest
import os


from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon
from mysched.errors import JobGone, RunRefused, ServerTimeout, ServerUnavailable
from mysched.core.model.batch import JobState, Node, TraceJob
from mysched.backends.sim.farm import SimulatedFarm
from mysched.daemon.statusfile import read_status, rows

from ..conftest import queued

CFG = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'


class FlakyServer:
    """A simulated farm whose calls can be made to fail on purpose."""

    def __init__(self, farm: SimulatedFarm) -> None:
        self.farm = farm
        self.name = "flaky"
        self.down = False
        self.fail_run: dict[str, Exception] = {}
        self.timeout_but_started: set[str] = set()
        self.run_calls: list[str] = []

    def snapshot(self):
        if self.down:
            raise ServerUnavailable("cannot connect to pbs_server on localhost:15001", code=15010)
        return self.farm.snapshot()

    def run_job(self, job_id, placement):
        self.run_calls.append(job_id)
        if self.down:
            raise ServerUnavailable("connection lost")
        if job_id in self.timeout_but_started:
            self.farm.run_job(job_id, placement)
            raise ServerTimeout("runjob timed out")
        exc = self.fail_run.pop(job_id, None)
        if exc is not None:
            raise exc
        self.farm.run_job(job_id, placement)

    def get_job(self, job_id):
        if self.down:
            raise ServerUnavailable("connection lost")
        return self.farm.get_job(job_id)

    def close(self):
        pass


def make(n_jobs=4, slots=2, cfg_text=CFG, tmp_path=None, **kw):
    cfg = config_from_text(cfg_text)
    wl = [TraceJob(queued(f"{i}.s", f"u{i}", "atlas" if i % 2 else "cms", submit=100.0 + i), 1e6)
          for i in range(n_jobs)]
    farm = SimulatedFarm([Node("wn01", slots), Node("wn02", slots)], wl, start=100.0)
    farm.advance(200.0)
    server = FlakyServer(farm)
    d = Daemon(cfg, server, state_dir=str(tmp_path) if tmp_path else "", wall=lambda: 1000.0, **kw)
    return d, server, farm


def test_cycle_starts_planned_jobs_and_publishes_status(tmp_path):
    d, server, farm = make(tmp_path=tmp_path)
    out = d.cycle()
    assert out.result == "ok" and out.started == 4
    assert all(j.state == JobState.RUNNING for j in farm.jobs.values())
    doc = read_status(str(tmp_path))
    assert doc["cycle"]["started"] == 4
    assert {r["id"] for r in rows(doc, "jobs") if r["cycle"] == "started"} == set(farm.jobs)
    assert all(r["state"] == "R" for r in rows(doc, "jobs"))
    assert oct(os.stat(tmp_path / "status.json").st_mode & 0o777) == "0o644"


def test_cycle_time_is_split_into_phases_that_add_up(tmp_path):
    import time

    from prometheus_client import CollectorRegistry

    from mysched.daemon.metrics import Metrics

    metrics = Metrics(CollectorRegistry())
    d, server, farm = make(tmp_path=tmp_path, metrics=metrics)
    slow_read, slow_run = server.snapshot, server.run_job

    def snapshot():
        time.sleep(0.05)
        return slow_read()

    def run_job(job_id, placement):
        time.sleep(0.02)
        slow_run(job_id, placement)
    server.snapshot, server.run_job = snapshot, run_job
    out = d.cycle()
    assert list(out.phases) == ["read", "history", "plan", "start", "record", "publish"]
    assert out.phases["read"] >= 0.05 and out.phases["start"] >= 4 * 0.02
    assert sum(out.phases.values()) == pytest.approx(out.duration, abs=1e-3)  # the total includes publishing
    doc = read_status(str(tmp_path))
    assert set(doc["cycle"]["phases"]) == {"read", "history", "plan", "start", "record"}
    assert doc["cycle"]["previous_publish_s"] is None
    d.cycle()
    assert read_status(str(tmp_path))["cycle"]["previous_publish_s"] >= 0
    for phase in out.phases:
        assert metrics.registry.get_sample_value("mysched_cycle_phase_seconds_count", {"phase": phase}) == 2
    assert metrics.registry.get_sample_value("mysched_cycle_phase_seconds_sum", {"phase": "read"}) >= 0.1


def test_server_outage_fails_cleanly_and_recovers(tmp_path):
    d, server, farm = make(tmp_path=tmp_path)
    server.down = True
    out = d.cycle()
    assert out.result == "error" and "cannot connect" in out.error
    assert d.consecutive_failures == 1
    assert not (tmp_path / "status.json").exists()
    server.down = False
    out = d.cycle()
    assert out.result == "ok" and out.started == 4 and d.consecutive_failures == 0


def test_refused_and_gone_jobs_are_counted_and_the_rest_goes_on():
    d, server, farm = make()
    server.fail_run["0.s"] = RunRefused("node full", code=15046)
    server.fail_run["1.s"] = JobGone("Unknown Job Id", code=15001)
    out = d.cycle()
    assert out.started == 2 and out.failed == 2
    assert out.failures == {"refused": 1, "gone": 1}


def test_outage_during_starts_drops_the_rest_of_the_plan():
    d, server, farm = make()
    calls = {"n": 0}
    real = server.run_job

    def dying(job_id, placement):
        calls["n"] += 1
        if calls["n"] == 2:
            server.down = True
        return real(job_id, placement)
    server.run_job = dying
    out = d.cycle()
    assert out.result == "partial" and out.started == 1
    assert calls["n"] == 2  # nothing tried after the server went away


def test_timeout_is_checked_before_any_retry_never_starting_twice():
    d, server, farm = make()
    server.timeout_but_started.add("0.s")
    out = d.cycle()
    # the job did start although the call timed out: the re-read sees it running
    assert out.started == 4 and out.failed == 0
    assert server.run_calls.count("0.s") == 1
    d.cycle()
    assert server.run_calls.count("0.s") == 1


def test_timeout_with_job_still_queued_is_retried_next_cycle_after_a_look():
    d, server, farm = make(n_jobs=1)
    server.fail_run["0.s"] = ServerTimeout("runjob timed out")
    out = d.cycle()
    assert out.failed == 1 and out.failures == {"timeout": 1}
    assert "0.s" in d._uncertain
    out = d.cycle()
    assert out.started == 1 and server.run_calls.count("0.s") == 2
    assert farm.jobs["0.s"].state == JobState.RUNNING


def test_dry_run_starts_nothing(tmp_path):
    d, server, farm = make(tmp_path=tmp_path, dry_run=True)
    out = d.cycle()
    assert out.result == "dry-run" and out.planned == 4 and out.started == 0
    assert server.run_calls == []
    assert json.loads((tmp_path / "status.json").read_text())["cycle"]["dry_run"] is True


def test_after_a_dry_run_the_status_commands_show_nothing_running(tmp_path, capsys):
    """TORQUE ran nothing: no job is shown running, no node full, and the commands say why."""
    from mysched.cli.main import main

    d, server, farm = make(tmp_path=tmp_path, dry_run=True)
    d.cycle()
    doc = read_status(str(tmp_path))
    assert doc["dry_run"] is True and doc["farm"]["used_slots"] == 0
    jobs = rows(doc, "jobs")
    assert all(r["state"] == "Q" and r["cycle"] == "planned" and r["nodes"] for r in jobs)
    assert all(n["used"] == 0 for n in rows(doc, "nodes"))
    assert all(v["running_jobs"] == 0 for v in doc["vos"].values())
    assert main(["jobs", "--state-dir", str(tmp_path), "--max-age", "1e10"]) == 0
    out = capsys.readouterr().out
    assert "0 running, 4 queued" in out and "dry run: the daemon started nothing" in out
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "1e10", jobs[0]["id"]]) == 0
    assert "would have started it on" in capsys.readouterr().out


def test_shares_count_the_cycles_own_starts_like_jobs_and_nodes(tmp_path, capsys):
    """One status: `shares` shows the jobs the cycle started, as `jobs` and `nodes` do; a start
    the server refused is in none of them."""
    from mysched.cli.main import main

    d, server, farm = make(n_jobs=4, tmp_path=tmp_path)
    server.fail_run["2.s"] = RunRefused("node full", code=15046)
    assert d.cycle().started == 3
    doc = read_status(str(tmp_path))
    running = [r for r in rows(doc, "jobs") if r["state"] == "R"]
    assert len(running) == 3 and "2.s" not in {r["id"] for r in running}
    assert sum(n["jobs"] for n in rows(doc, "nodes")) == 3 == doc["farm"]["used_slots"]
    assert main(["shares", "--state-dir", str(tmp_path), "--max-age", "1e10", "--json"]) == 0
    shares = json.loads(capsys.readouterr().out)["vos"]
    for vo, v in shares.items():
        mine = [r for r in running if r["vo"] == vo]
        assert v["running_jobs"] == len(mine) and v["running_slots"] == sum(r["cores"] for r in mine)


def _reloadable(tmp_path):
    """A daemon on the simulated farm whose configuration comes from a file (one start per
    cycle), for reloads: the file's path and the daemon."""
    from mysched.config import load_config

    path = tmp_path / "mysched.cfg"
    path.write_text(CFG + "scheduler = { max_starts_per_cycle = 1; };\n")
    d, _server, _farm = make()
    d.config = load_config(str(path))
    d.config_path = str(path)
    return path, d


def test_bad_reload_keeps_the_last_good_config(tmp_path):
    path, d = _reloadable(tmp_path)
    path.write_text(CFG + "scheduler = { max_starts_per_cycle = oops; };\n")
    assert d.reload() is False
    assert d.config.max_starts_per_cycle == 1
    assert d.cycle().started == 1
    path.write_text(CFG + "scheduler = { max_starts_per_cycle = 2; };\n")
    assert d.reload() is True
    assert d.cycle().started == 2


def test_a_rejected_reload_is_one_log_line_naming_every_problem(tmp_path, caplog):
    # (live walk-through) two bad values logged the header as the ERROR and each problem on a
    # line of its own, which journald keeps as entries without the error's priority
    path, d = _reloadable(tmp_path)
    path.write_text(CFG + 'scheduler = { max_starts_per_cycle = "oops"; interval = "15x"; };\n')
    assert d.reload() is False
    [rec] = [r for r in caplog.records if "reload rejected" in r.getMessage()]
    msg = rec.getMessage()
    assert rec.levelname == "ERROR" and "\n" not in msg, msg
    assert "max_starts_per_cycle" in msg and "interval" in msg and "mysched.cfg:" in msg, msg


def test_failed_cycles_back_off_but_retry_within_an_interval():
    """An outage backs off from seconds to one interval, never more: when pbs_server is back,
    jobs start again within a cycle. A crashing daemon (a bug) backs off to four intervals."""
    from mysched.daemon.cycle import CycleOutcome
    from mysched.daemon.service import Service
    d, server, farm = make()
    svc = Service(d)
    server.down = True
    delays = []
    for _ in range(10):
        out = d.cycle()
        delays.append(svc._delay_after(out))
    assert delays == sorted(delays) and delays[0] < d.config.interval
    assert delays[-1] == d.config.interval
    assert svc._delay_after(CycleOutcome("crash")) == 4 * d.config.interval
    server.down = False
    assert svc._delay_after(d.cycle()) == d.config.interval
    assert svc._delay_after(CycleOutcome("ok")) == d.config.interval


def test_a_failing_metric_is_logged_once_and_scheduling_goes_on(tmp_path, caplog):
    from mysched.daemon.metrics import Metrics

    class Broken(Metrics):
        def record_start(self, vo, reason):
            raise KeyError("label")

    d, server, farm = make(n_jobs=6, slots=2, tmp_path=tmp_path, metrics=Broken())
    caplog.set_level("WARNING", logger="mysched")
    assert d.cycle().started == 4
    farm.advance(2e6)  # the first jobs end
    assert d.cycle().started == 2
    failures = [r for r in caplog.records if "metrics: record_start failed" in r.getMessage()]
    assert len(failures) == 1 and failures[0].exc_info is not None
    # the other series still work
    assert d.metrics.inner.cycles.labels("ok")._value.get() == 2


def test_the_sim_demo_has_a_queue_from_the_first_cycle(tmp_path):
    """`mysched run --server sim://...` then `mysched jobs`: something waits at once (the demo of
    docs/getting-started.md, whose very command tests/test_docs.py runs)."""
    from mysched.backends.sim.server import sim_server_from_url
    from mysched.cli.common import config_or_default

    cfg = config_or_default(None)
    d = Daemon(cfg, sim_server_from_url("sim://?nodes=10&slots=8&speed=60", cfg), state_dir=str(tmp_path))
    assert d.cycle().started > 0
    jobs = rows(read_status(str(tmp_path)), "jobs")
    waiting = [r for r in jobs if r["state"] == "Q"]
    assert len(waiting) > 10 and all(r["reason"] for r in waiting)
    # the backlog can be turned off
    d = Daemon(cfg, sim_server_from_url("sim://?nodes=10&slots=8&speed=60&backlog=0", cfg), state_dir=str(tmp_path))
    d.cycle()
    assert sum(1 for r in rows(read_status(str(tmp_path)), "jobs") if r["state"] == "Q") < len(waiting)


def _finished(i: int):
    from mysched.core.model.batch import FinishedJob
    return FinishedJob(f"f{i}", "u", "atlas", "q", 10.0 * i, 10.0 * i + 5, 1)


def test_history_failures_are_loud_and_lose_nothing(tmp_path, caplog):
    """A store that cannot take writes: scheduling goes on, the error is logged once, counted
    and flagged in the status file, and the finished jobs are kept until it works again."""
    from mysched.daemon.metrics import Metrics
    from mysched.errors import StoreError
    from mysched.history.store import Store

    store = Store(f"sqlite:///{tmp_path}/h.db")
    metrics = Metrics()
    d, server, farm = make(n_jobs=6, tmp_path=tmp_path / "state", store=store, metrics=metrics)
    feed = [[_finished(1)], [_finished(2)], [_finished(3)], []]
    server.pop_finished = lambda: feed.pop(0) if feed else []
    real = store.add_finished
    broken = {"on": True}

    def add(records):
        if broken["on"]:
            raise StoreError("history database h.db: cannot store finished jobs: attempt to write a readonly database")
        return real(records)
    store.add_finished = add
    caplog.set_level("INFO", logger="mysched")
    assert d.cycle().result == "ok" and d.cycle().result == "ok"  # scheduling goes on
    doc = read_status(str(tmp_path / "state"))
    assert doc["cycle"]["history_ok"] is False and doc["cycle"]["history_pending"] == 2
    assert "readonly" in doc["cycle"]["history_error"]
    assert metrics.history_errors._value.get() == 2
    assert sum("history store:" in r.getMessage() and r.levelname == "ERROR" for r in caplog.records) == 1
    broken["on"] = False
    d.cycle()
    assert store.count_finished() == 3 and read_status(str(tmp_path / "state"))["cycle"]["history_ok"] is True
    assert any("writing again" in r.getMessage() for r in caplog.records)
    d.cycle()
    assert store.count_finished() == 3  # nothing twice


def test_a_deleted_history_file_is_noticed(tmp_path):
    from mysched.history.store import Store

    store = Store(f"sqlite:///{tmp_path}/h.db")
    d, server, farm = make(tmp_path=tmp_path / "state", store=store)
    server.pop_finished = lambda: [_finished(len(server.run_calls))]
    assert d.cycle().result == "ok"
    os.remove(tmp_path / "h.db")
    assert d.cycle().result == "ok"
    cyc = read_status(str(tmp_path / "state"))["cycle"]
    assert not cyc["history_ok"] and "deleted" in cyc["history_error"] and cyc["history_pending"] >= 1


def test_temporary_status_files_of_a_killed_daemon_are_swept(tmp_path):
    from mysched.daemon.statusfile import STALE_TMP_S, write_status

    old = tmp_path / ".status.abc123.tmp"
    old.write_text("{")
    os.utime(old, (1.0, 1.0))
    fresh = tmp_path / ".status.def456.tmp"  # another writer's, in flight
    fresh.write_text("{")
    write_status(str(tmp_path), {"format": 2})
    assert not old.exists() and fresh.exists() and STALE_TMP_S >= 60


class Killed(BaseException):
    """Stands for kill -9: nothing after it runs."""


def test_a_kill_between_runjob_and_the_record_is_settled_on_restart(tmp_path, caplog):
    """Intents are written before the first pbs_runjob; the next daemon finds them open,
    asks the server, records what happened, and starts nothing twice."""
    from mysched.history.store import Store

    url = f"sqlite:///{tmp_path}/h.db"
    d, server, farm = make(n_jobs=6, slots=2, tmp_path=tmp_path / "state", store=Store(url))
    real_run = server.run_job
    calls = {"n": 0}

    def run_then_die(job_id, placement):
        real_run(job_id, placement)
        calls["n"] += 1
        if calls["n"] == 2:
            raise Killed  # started on the server, never recorded here
    server.run_job = run_then_die
    with pytest.raises(Killed):
        d.cycle()
    store = Store(url)
    open_ = store.open_intents()
    assert len(open_) == 4  # the whole cycle's plan was intended
    started_before = {j for j in server.run_calls}
    assert len(started_before) == 2
    server.run_job = real_run
    caplog.set_level("WARNING", logger="mysched")
    d2 = Daemon(d.config, server, store=store, state_dir=str(tmp_path / "state"), wall=lambda: 1000.0)
    out = d2.cycle()
    assert store.open_intents() == []
    # the two that ran are recorded as started, the two that did not were planned again
    recovered = store.recent_cycles(5)
    rec = next(c for c in recovered if c["result"] == "recovered")
    assert (rec["n_started"], rec["n_failed"]) == (2, 2)
    assert sum(1 for jid in server.run_calls if jid in started_before) == 2  # none of them twice
    assert out.started == 2 and len(server.run_calls) == len(set(server.run_calls)) == 4
    for jid in started_before:
        assert [s["result"] for s in store.starts_of(jid)] == ["ok"]
    assert sum("planned before the daemon stopped" in r.getMessage() for r in caplog.records) == 4


def test_an_outage_is_logged_once_and_the_status_says_it_is_stale(tmp_path, caplog, capsys):
    from mysched.cli.main import main

    d, server, farm = make(n_jobs=6, slots=2, tmp_path=tmp_path)
    assert d.cycle().started == 4
    caplog.set_level("INFO", logger="mysched")
    server.down = True
    for _ in range(5):
        assert d.cycle().result == "error"
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "cannot connect to pbs_server" in errors[0].getMessage()
    doc = read_status(str(tmp_path))
    assert doc["stale"]["error"].startswith("batch server") and doc["snapshot_time"] == 200.0
    assert main(["jobs", "--state-dir", str(tmp_path), "--max-age", "1e10"]) == 0
    assert "STALE: the daemon's cycles fail since" in capsys.readouterr().out
    server.down = False
    assert d.cycle().result == "ok"
    assert any("cycle ok again after" in r.getMessage() for r in caplog.records)
    assert "stale" not in read_status(str(tmp_path))


def test_a_reload_refuses_an_empty_file_and_names_settings_only_a_restart_applies(tmp_path, caplog):
    path, d = _reloadable(tmp_path)
    path.write_text("# cut short\n")
    assert d.reload() is False
    assert "sets nothing" in caplog.text and d.config.max_starts_per_cycle == 1
    assert d.cycle().started == 1
    path.write_text(CFG + 'scheduler = { max_starts_per_cycle = 2; };\ndaemon = { state_dir = "/elsewhere"; };\n')
    assert d.reload() is True
    assert d.config.max_starts_per_cycle == 2
    assert "daemon.state_dir is '/elsewhere' in the file" in caplog.text and "only when the daemon restarts" in caplog.text


def test_a_node_running_a_job_that_asked_for_it_alone_is_published_full():
    from mysched.config import config_from_text
    from mysched.core.model.batch import Job, JobState, Node, Snapshot
    from mysched.core.planner import plan
    from mysched.core.model.request import Request
    from mysched.core.share.usage import Usage
    from mysched.daemon.statusfile import build_status

    alone = Job("x", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, 900.0, 3600.0, placement=(("wn01", 1),),
                request=Request(exclusive=True))
    one = Job("y", "q", "u", "atlas", 1, JobState.RUNNING, 0.0, 900.0, 3600.0, placement=(("wn02", 1),))
    snap = Snapshot(1000.0, (alone, one), (Node("wn01", 4), Node("wn02", 4)), ())
    cfg = config_from_text(CFG)
    doc = build_status(snap, plan(snap, cfg, Usage(), 1000.0), cfg)
    states = {r["name"]: r["state"] for r in rows(doc, "nodes")}
    assert states == {"wn01": "full", "wn02": "partial"}  # what `nodes` and `free` show


def test_a_reload_that_shortens_the_interval_brings_the_next_cycle_forward(tmp_path):
    import threading
    import time

    from mysched.config import load_config
    from mysched.daemon.service import Service

    path = tmp_path / "mysched.cfg"
    path.write_text(CFG + "scheduler = { interval = 3600; min_interval = 1; };\n")
    d, server, farm = make()
    d.config, d.config_path = load_config(str(path)), str(path)
    svc = Service(d)
    t = threading.Thread(target=svc.run, daemon=True)
    t.start()
    try:
        end = time.time() + 10
        while svc.cycles < 1 and time.time() < end:
            time.sleep(0.05)
        assert svc.cycles == 1  # the first cycle at once; the next in an hour
        path.write_text(CFG + "scheduler = { interval = 1; min_interval = 1; };\n")
        svc._reload.set()
        end = time.time() + 10
        while svc.cycles < 2 and time.time() < end:
            time.sleep(0.05)
        assert svc.cycles >= 2  # within seconds, not after the hour the old interval set
    finally:
        svc._stop.set()
        t.join(15)


def test_the_first_job_event_is_logged_once(caplog):
    import logging

    from mysched.daemon.service import Service

    caplog.set_level(logging.INFO, logger="mysched")
    d, server, farm = make()
    svc = Service(d)
    svc.on_event("first")
    svc.on_event("term")
    assert [r.getMessage() for r in caplog.records if "job events arrive" in r.getMessage()] == [
        "pbs_server job events arrive (first): a cycle follows each, at most every 5 s"]
