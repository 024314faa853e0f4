"""A start the farm refuses is a statistic of the replay; a bug in the planner or the
simulator is not: it stops the replay with its traceback."""

from __future__ import annotations

import pytest

from mysched.backends.sim.farm import SimulatedFarm
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.sim.replay import SimOptions, simulate

from ..conftest import nodes

CFG = 'vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'


def workload(n: int = 4) -> list[TraceJob]:
    return [TraceJob(Job(str(i), "q", f"u{i}", "atlas", submit_time=1e9 + i), 300.0) for i in range(n)]


def test_a_start_the_farm_refuses_is_counted_and_the_job_starts_later(monkeypatch):
    real = SimulatedFarm.run_job
    once = {"0"}

    def run_job(self, job_id, placement):
        if job_id in once:  # the farm itself refuses: a node it does not know
            once.discard(job_id)
            return real(self, job_id, (("nowhere", 1),))
        return real(self, job_id, placement)
    monkeypatch.setattr(SimulatedFarm, "run_job", run_job)
    r = simulate(workload(), config_from_text(CFG), tuple(nodes(1, 2)), SimOptions())
    assert r.start_failures == 1 and r.started == 4 and r.finished == 4


def test_a_bug_while_starting_stops_the_replay_instead_of_being_counted(monkeypatch):
    def run_job(self, job_id, placement):
        raise RuntimeError("a bug in the simulator")
    monkeypatch.setattr(SimulatedFarm, "run_job", run_job)
    with pytest.raises(RuntimeError, match="a bug in the simulator"):
        simulate(workload(), config_from_text(CFG), tuple(nodes(1, 2)), SimOptions())
