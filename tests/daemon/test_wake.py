"""The daemon cycles when its last plan said it would change by itself (`Plan.wake_at`: here
a downtime window's end, when its nodes take jobs again), if that comes before the next
regular cycle and no sooner than `min_interval` -- as the simulator does; not only every
`interval` or on a pbs_server job event."""

from __future__ import annotations

import calendar
import datetime as dt
import time

import pytest

from mysched.backends.sim.farm import SimulatedFarm
from mysched.config import config_from_text
from mysched.core.model.batch import Node, TraceJob
from mysched.daemon.cycle import Daemon
from mysched.daemon.service import Service

from ..conftest import queued
from .test_daemon import CFG, FlakyServer

END = float(calendar.timegm(time.strptime("2026-12-01T12:00", "%Y-%m-%dT%H:%M")))
NOW = dt.datetime(2026, 12, 1, 9, 0, 0)
"""The service's clock (APScheduler's local time): fixed, so the scheduled times are exact."""


class Scheduler:
    """Stands for APScheduler: keeps the date each cycle is scheduled at."""

    def __init__(self) -> None:
        self.at: list[dt.datetime] = []

    def add_job(self, func, trigger, **kw) -> None:
        self.at.append(trigger.run_date.replace(tzinfo=None))


def service(before_end: float, interval: str = "60", speed: float | None = None) -> tuple[Service, Scheduler]:
    """A farm whose every node is in a downtime until END, `before_end` farm seconds away."""
    cfg = config_from_text(CFG + f"scheduler = {{ interval = {interval}; min_interval = 5; }};\n"
                           'downtimes = { gocdb_1 = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; }; };\n')
    now = END - before_end
    farm = SimulatedFarm([Node("wn01", 2), Node("wn02", 2)],
                         [TraceJob(queued(f"{i}.s", f"u{i}", "atlas", submit=now - 100), 1e6) for i in range(3)],
                         start=now - 100)
    farm.advance(now)
    server = FlakyServer(farm)
    if speed is not None:
        server.speed = speed
    svc = Service(Daemon(cfg, server, state_dir="", wall=lambda: now), clock=lambda: NOW)
    svc._sched = sched = Scheduler()
    return svc, sched


def test_a_cycle_is_scheduled_when_the_plan_changes_by_itself():
    svc, sched = service(before_end=20.0)
    svc._run_cycle()
    assert svc.last.result == "ok" and svc.last.started == 0  # every node is in the downtime
    assert sched.at == [NOW + dt.timedelta(seconds=20)]  # at its end, not a minute on


def test_no_early_cycle_when_the_change_comes_after_the_next_regular_one():
    svc, sched = service(before_end=600.0)
    svc._run_cycle()
    assert sched.at == [NOW + dt.timedelta(seconds=60)]


@pytest.mark.parametrize("before_end", [0.5, 3.0])
def test_an_early_cycle_comes_no_sooner_than_min_interval(before_end):
    svc, sched = service(before_end=before_end)
    svc._run_cycle()
    assert sched.at == [NOW + dt.timedelta(seconds=5)]


def test_a_simulated_farms_clock_is_scaled_to_wall_seconds():
    svc, sched = service(before_end=600.0, interval="3600", speed=60.0)
    svc._run_cycle()
    assert sched.at == [NOW + dt.timedelta(seconds=10)]  # 600 farm seconds at 60 times wall speed


def test_a_reload_shortening_the_interval_keeps_a_sooner_wake_cycle(monkeypatch):
    # review: a downtime ending in 20 s under a 300-s interval; SIGHUP to interval = 120 moved the
    # next cycle to +120 s and lost the wake at +20 s
    svc, sched = service(before_end=20.0, interval="300")
    svc._run_cycle()
    assert sched.at == [NOW + dt.timedelta(seconds=20)]
    shorter = config_from_text(CFG + "scheduler = { interval = 120; min_interval = 5; };\n")
    monkeypatch.setattr(svc.daemon, "reload", lambda: setattr(svc.daemon, "config", shorter))
    svc._reload_now()
    assert svc.daemon.config.interval == 120 and sched.at == [NOW + dt.timedelta(seconds=20)]
    # an interval shorter than what is left of the wait does bring the cycle forward
    svc.daemon.config = config_from_text(CFG + "scheduler = { interval = 300; min_interval = 5; };\n")
    svc._next_at = NOW + dt.timedelta(seconds=250)
    svc._last_cycle_start = time.monotonic()
    svc._reload_now()
    assert len(sched.at) == 2 and sched.at[-1] <= NOW + dt.timedelta(seconds=121)
