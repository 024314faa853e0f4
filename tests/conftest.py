"""Shared fixtures: small farms and snapshots built by hand."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mysched.core.model.batch import Job, JobState, Node, Snapshot

REPO = Path(__file__).resolve().parents[1]
TRACES = Path(os.environ.get("MYSCHED_TRACES", REPO.parent / "shared" / "traces"))


def running(jid: str, user: str, group: str, node: str, queue: str = "q", cores: int = 1,
            start: float = 0.0) -> Job:
    return Job(jid, queue, user, group, cores=cores, state=JobState.RUNNING, start_time=start,
               placement=((node, cores),))


def queued(jid: str, user: str, group: str, queue: str = "q", cores: int = 1, submit: float = 0.0,
           state: JobState = JobState.QUEUED) -> Job:
    return Job(jid, queue, user, group, cores=cores, state=state, submit_time=submit)


def snap(jobs, nodes, queues=()) -> Snapshot:
    return Snapshot(1000.0, tuple(jobs), tuple(nodes), tuple(queues))


def nodes(n: int, slots: int, prefix: str = "wn") -> list[Node]:
    return [Node(f"{prefix}{i:02d}", slots) for i in range(1, n + 1)]


@pytest.fixture
def traces() -> Path:
    if not TRACES.is_dir():
        pytest.skip(f"shared traces not found at {TRACES}")
    return TRACES


@pytest.fixture(autouse=True)
def _no_shared_state_dir(monkeypatch, tmp_path_factory):
    """A daemon a test builds without a state directory keeps its status file in a directory
    of its own, not the machine's /var/lib/mysched: a restarted daemon takes the drains and
    reservations of that file over, so one test's partition would reach into the next."""
    from mysched.core.settings import Config
    from mysched.daemon import cycle

    real = cycle.Daemon.__init__

    def init(self, config, server, *args, **kw):  # noqa: ANN001 - the Daemon's own signature
        if kw.get("state_dir") is None and config.state_dir == Config.state_dir:
            kw["state_dir"] = str(tmp_path_factory.mktemp("state"))
        real(self, config, server, *args, **kw)

    monkeypatch.setattr(cycle.Daemon, "__init__", init)
