"""Run-time estimates for jobs without a requested walltime (`mysched.core.rules.runtimes`, issue #29)."""

from __future__ import annotations

from mysched.core.model.batch import FinishedJob, Job, JobState, Queue
from mysched.core.rules.runtimes import RecentRuns, RunTimes

HOUR = 3600.0


def _job(user: str = "alice", queue: str = "batch", walltime: float | None = None, start: float | None = None) -> Job:
    state = JobState.RUNNING if start is not None else JobState.QUEUED
    return Job("1.srv", queue, user, "g", state=state, start_time=start, walltime=walltime)


def test_a_user_whose_jobs_run_an_hour_is_taken_to_run_an_hour() -> None:
    runs = RecentRuns()
    for _ in range(10):
        runs.add("alice", "batch", HOUR)
    runs.add("bob", "batch", 10 * HOUR)
    rt = RunTimes(runs, (Queue("batch", max_walltime=48 * HOUR),))
    assert rt.length(_job("alice")) == HOUR
    assert rt.length(_job("bob")) == 10 * HOUR
    assert "alice" in rt.estimate(_job("alice"))[1]


def test_a_requested_walltime_is_kept() -> None:
    runs = RecentRuns()
    runs.add("alice", "batch", HOUR)
    assert RunTimes(runs).length(_job(walltime=5 * HOUR)) == 5 * HOUR


def test_no_history_of_the_user_falls_back_to_the_queue_then_its_maximum() -> None:
    runs = RecentRuns()
    runs.add("bob", "short", 600.0)
    queues = (Queue("short", max_walltime=2 * HOUR), Queue("long", max_walltime=72 * HOUR))
    rt = RunTimes(runs, queues)
    assert rt.length(_job("carol", "short")) == 600.0  # the queue's recent jobs
    assert rt.length(_job("carol", "long")) == 72 * HOUR  # resources_max.walltime
    assert RunTimes(None, ()).length(_job("carol", "other")) is None  # nothing known: as before


def test_an_estimate_never_exceeds_the_queue_maximum() -> None:
    runs = RecentRuns()
    runs.add("alice", "short", 10 * HOUR)
    assert RunTimes(runs, (Queue("short", max_walltime=2 * HOUR),)).length(_job("alice", "short")) == 2 * HOUR


def test_a_job_past_its_estimate_is_re_estimated_never_held_for_ever() -> None:
    runs = RecentRuns()
    runs.add("alice", "batch", HOUR)
    rt = RunTimes(runs)
    start = 1000.0
    job = _job(start=start)
    assert rt.end(job, start + 600.0) == start + HOUR
    # past its estimate: as long again as it has run, always ahead of now and moving with it
    for ran in (2 * HOUR, 10 * HOUR, 100 * HOUR):
        now = start + ran
        assert rt.end(job, now) == now + ran


def test_history_records_feed_in_order_of_their_ends_and_only_the_recent_count() -> None:
    runs = RecentRuns(keep=3)
    recs = [FinishedJob(str(i), "alice", "g", "batch", start=0.0, end=float(t)) for i, t in
            enumerate([100, 200, 50_000, 300, 400, 500])]
    runs.add_records(recs)
    assert list(runs.by_user[("alice", "batch")]) == [400.0, 500.0, 50_000.0]  # the last three to end
