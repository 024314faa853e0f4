"""The simulator's "below guar." is the scheduler's doing: the time a VO's own caps (max_running,
max_cores of the VO or its groups, users limits) held every job it had waiting is left out of it
and reported apart, as its configuration's doing."""

from __future__ import annotations

import pytest

from mysched.backends.sim.farm import make_nodes
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.report import format_comparison, format_result

T0 = 1e9


def _cfg(a: str = "", extra: str = "") -> str:
    return f'vos = {{ a = {{ groups = ["a", "a2"]; share = 50; {a} }}; b = {{ groups = ["b"]; share = 50; }}; }};\n' + extra


def _jobs(group: str, n: int, at: float = T0, run: float = 600.0, user: str = "u", cores: int = 1) -> list[TraceJob]:
    return [TraceJob(Job(f"{group}{at:.0f}.{i}", "q", user, group, cores=cores, submit_time=at + i), run)
            for i in range(n)]


@pytest.mark.parametrize("caps", [
    _cfg("max_running = 1;"),
    _cfg("max_cores = 1;"),
    _cfg(extra="groups = { a = { max_running = 1; }; };"),
    _cfg(extra="users = { default = { max_running = 1; }; };"),
    _cfg(extra="users = { u = { max_cores = 1; }; };"),
], ids=["vo max_running", "vo max_cores", "group max_running", "users.default", "users.NAME max_cores"])
@pytest.mark.parametrize("event_driven", [False, True], ids=["grid", "event-driven"])
def test_a_vo_held_below_its_guarantee_by_its_own_cap_is_not_counted_below_by_the_scheduler(caps, event_driven):
    # 1 x 4 slots, a's guarantee 2: its cap runs one job at a time, ten of 600 s, about 1.5 h
    r = simulate(_jobs("a", 10), config_from_text(caps), make_nodes(1, 4), SimOptions(event_driven=event_driven))
    a = r.vo["a"]
    assert r.started == 10 and a["guarantee"] == 2
    assert a["below_guarantee_s"] == 0
    assert 5000 < a["below_guarantee_capped_s"] < 6600  # 9 jobs waited for 9 ends (and the next cycle)
    text = format_result(r)
    assert "held below guar. by its own caps" in text and "left out of below guar.): a 1h" in text
    assert "a below guar." in format_comparison([r])


def test_a_vo_kept_below_by_others_jobs_still_counts_with_a_cap_it_does_not_reach():
    # b fills the farm with 4 long jobs first; a's jobs then wait for a free slot, not for its cap
    wl = _jobs("b", 4, run=3600.0) + _jobs("a", 3, at=T0 + 100)
    r = simulate(wl, config_from_text(_cfg("max_running = 10;")), make_nodes(1, 4), SimOptions())
    a = r.vo["a"]
    assert 3000 < a["below_guarantee_s"] < 3600 and a["below_guarantee_capped_s"] == 0
    assert "held below guar." not in format_result(r)
    assert "caps (max_running, max_cores of the VO, its groups, its users) did not hold" in format_result(r)


def test_a_job_its_caps_do_not_hold_counts_below_again():
    # group a runs one job at a time (its cap); from T0 + 1200 a job of group a2, not capped,
    # waits for b's long jobs: below the guarantee by the scheduler's choice again
    cfg = config_from_text(_cfg(extra="groups = { a = { max_running = 1; }; };"))
    wl = _jobs("a", 6, run=1800.0) + _jobs("b", 3, at=T0 + 600, run=7200.0) + _jobs("a2", 1, at=T0 + 1200)
    r = simulate(wl, cfg, make_nodes(1, 4), SimOptions())
    a = r.vo["a"]
    assert a["below_guarantee_capped_s"] > 3600  # group a's cap alone, before a2's job and after it ran
    assert 600 <= a["below_guarantee_s"] < 3600  # a2's job waited from T0 + 1200 for a slot
    text = format_result(r)
    assert "left out of below guar.): a 2h24m" in text
