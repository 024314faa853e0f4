"""Decayed usage: what the fair-share priority is computed from. The incremental ledger the
daemon and the simulator keep must give what the definition gives, at every read."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mysched.core.model.batch import FinishedJob, Job, JobState
from mysched.core.share.usage import UsageLedger, usage_from_records

H = 3600.0
DAY = 86400.0
NOW = 10 * DAY + 1800.0  # the window edge falls in the middle of an hour


def rec(user: str, start: float, end: float, cores: int = 1, group: str = "g", vo: str | None = None,
        jid: str | None = None) -> FinishedJob:
    return FinishedJob(jid or f"{user}-{start}", user, group, "q", start, end, cores, vo)


def run(user: str, start: float | None, cores: int = 1, group: str = "g", vo: str | None = None) -> Job:
    return Job(f"{user}-r", "q", user, group, cores=cores, state=JobState.RUNNING, start_time=start, vo=vo)


def ledger_of(records, window: float, half_life: float) -> UsageLedger:
    led = UsageLedger(window, half_life, vo_of=lambda g: f"vo-{g}")
    for r in sorted(records, key=lambda r: r.end):
        led.add_job(r)
    return led


def test_an_hour_one_half_life_ago_weighs_half_an_hour_now():
    jobs = [rec("now", NOW - H, NOW), rec("then", NOW - DAY - H, NOW - DAY)]
    u = ledger_of(jobs, 2 * DAY, DAY).usage(NOW)
    assert u.user["then"] / u.user["now"] == pytest.approx(0.5, rel=1e-12)
    assert u.user["now"] == pytest.approx(DAY / math.log(2) * (1 - 2 ** (-H / DAY)), rel=1e-12)
    flat = ledger_of(jobs, 2 * DAY, math.inf).usage(NOW)  # no decay: plain slot-seconds
    assert flat.user == {"now": H, "then": H}


def test_a_job_straddling_the_window_edge_counts_only_its_part_inside():
    edge = NOW - 2 * DAY
    jobs = [rec("edge", edge - 1800, edge + 1800, cores=4), rec("before", edge - 2 * H, edge - H)]
    assert ledger_of(jobs, 2 * DAY, math.inf).usage(NOW).user == {"edge": 4 * 1800.0}
    assert usage_from_records(jobs, NOW, 2 * DAY, math.inf, vo_of=str).user == {"edge": 4 * 1800.0}
    # the other way in: added while wholly inside the window, then the edge moves on
    led = UsageLedger(2 * DAY, math.inf)
    led.usage(edge - 3 * H)
    for r in jobs:
        led.add_job(r)
    assert led.usage(NOW - 3 * H).user == {"edge": 4 * 3600.0, "before": 3600.0}
    u = led.usage(NOW)
    assert u.user == {"edge": 4 * 1800.0} and u.group == {"g": 4 * 1800.0}


def test_usage_falls_as_the_edge_moves_and_a_user_gone_from_the_window_is_gone():
    led = ledger_of([rec("alice", 0.0, 2 * H, cores=2), rec("bob", H, 3 * H)], DAY, math.inf)
    seen = [led.usage(DAY + t).user for t in (0.0, 0.5 * H, H, 2 * H, 2.5 * H, 3 * H)]
    assert seen == [{"alice": 4 * H, "bob": 2 * H}, {"alice": 3 * H, "bob": 2 * H}, {"alice": 2 * H, "bob": 2 * H},
                    {"bob": H}, {"bob": 0.5 * H}, {}]


def test_running_jobs_count_from_their_start_or_the_window_edge():
    led = UsageLedger(DAY, math.inf, vo_of=lambda g: f"vo-{g}")
    running = [run("alice", NOW - 600, cores=4), run("bob", NOW - 3 * DAY, group="h", vo="ops"),
               run("carol", None)]
    u = led.usage(NOW, running)
    assert u.user == {"alice": 2400.0, "bob": DAY}
    assert u.group == {"g": 2400.0, "h": DAY} and u.vo == {"vo-g": 2400.0, "ops": DAY}
    # and on top of finished jobs of the same user
    led.add_job(rec("alice", NOW - 2 * H, NOW - H))
    assert led.usage(NOW, running).user["alice"] == 2400.0 + H


def test_a_late_record_counts_only_its_part_still_inside_the_window():
    """The daemon reads accounting a little after jobs end: a record that arrives after the
    edge passed its start counts what is still inside, as if it had been there all along."""
    led = UsageLedger(DAY, math.inf)
    led.usage(NOW)
    late = rec("alice", NOW - DAY - H, NOW - DAY + H)
    led.add_job(late)
    assert led.usage(NOW).user == {"alice": H}
    assert led.usage(NOW + 1800).user == {"alice": 1800.0}


def test_decay_survives_idle_days_of_short_half_life():
    """Weights are re-anchored as time passes: a farm idle for weeks with a one-minute half-life
    reads no overflow and no usage."""
    led = UsageLedger(30 * DAY, 60.0)
    led.add_job(rec("alice", 0.0, H))
    assert led.usage(H).user["alice"] == pytest.approx(60 / math.log(2), rel=1e-9)
    assert led.usage(3 * 7 * DAY).user.get("alice", 0.0) == 0.0


# -- the ledger against the definition, on random histories ----------------------------------

USERS = {"u1": "ga", "u2": "ga", "u3": "gb", "u4": "gc"}

jobs_st = st.lists(st.tuples(st.sampled_from(sorted(USERS)), st.integers(0, 40 * 3600), st.integers(1, 20 * 3600),
                             st.sampled_from([1, 1, 2, 8]), st.integers(0, 3)), max_size=40)


@settings(max_examples=150, deadline=None)
@given(jobs=jobs_st, reads=st.lists(st.integers(0, 60 * 3600), min_size=1, max_size=8, unique=True),
       window=st.sampled_from([2 * H, 6 * H, 2 * DAY]), half_life=st.sampled_from([600.0, H, DAY, math.inf]))
def test_ledger_matches_the_definition_at_every_read(jobs, reads, window, half_life):
    """Jobs are added once they have ended, some `delay` reads late (as accounting lags);
    every read must equal usage from scratch over exactly the jobs added so far."""
    vo_of = {"ga": "atlas", "gb": "cms", "gc": "lhcb"}.get
    pending = {rec(u, float(s), float(s + d), c, group=USERS[u], vo="ops" if u == "u4" else None, jid=f"{i}"): delay
               for i, (u, s, d, c, delay) in enumerate(jobs)}
    led = UsageLedger(window, half_life, vo_of=vo_of)
    added: list[FinishedJob] = []
    for now in sorted(float(t) for t in reads):
        for r in sorted(pending, key=lambda r: r.end):
            if r.end <= now:
                if pending[r] == 0:
                    led.add_job(r)
                    added.append(r)
                    del pending[r]
                else:
                    pending[r] -= 1
        got = led.usage(now)
        want = usage_from_records(added, now, window, half_life, vo_of)
        for kind in ("vo", "group", "user"):
            g, w = getattr(got, kind), getattr(want, kind)
            scale = max([1.0, *w.values()])
            for k in set(g) | set(w):
                assert g.get(k, 0.0) == pytest.approx(w.get(k, 0.0), rel=1e-9, abs=1e-9 * scale), (kind, k, now)
