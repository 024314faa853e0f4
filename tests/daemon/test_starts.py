"""A cycle's starts against a pbs_server that stops answering: bounded, never doubled, and
the history's intents closed for what was not tried."""

from __future__ import annotations

from mysched.errors import ServerTimeout, ServerUnavailable
from mysched.history.store import Store

from .test_daemon import make


class Silent:
    """pbs_server from the n-th runjob on: every call times out (it keeps its connections
    but answers nothing), as a SIGSTOPped or deadlocked server does."""

    def __init__(self, server, after: int) -> None:
        self.server, self.after = server, after
        self.calls: list[str] = []
        self.ids: list[str] = []
        self._run, self._get = server.run_job, server.get_job
        server.run_job, server.get_job = self.run_job, self.get_job

    @property
    def hung(self) -> bool:
        return len(self.ids) > self.after

    def run_job(self, job_id, placement):
        self.calls.append("runjob")
        self.ids.append(job_id)
        if self.hung:
            raise ServerTimeout(f"runjob {job_id}: no answer within 30 s")
        return self._run(job_id, placement)

    def get_job(self, job_id):
        self.calls.append("statjob")
        if self.hung:
            raise ServerTimeout(f"statjob {job_id}: no answer within 30 s")
        return self._get(job_id)


def test_a_server_that_stops_answering_during_starts_costs_two_calls_not_two_per_start(tmp_path):
    """Before: each of the remaining starts cost a runjob and a re-read timeout (1,000 starts
    at 30 s: 17 hours in one cycle, far past the watchdog)."""
    d, server, farm = make(n_jobs=8, slots=4, store=Store(f"sqlite:///{tmp_path}/h.db"))
    silent = Silent(server, after=2)
    out = d.cycle()
    assert silent.calls == ["runjob", "runjob", "runjob", "statjob"]  # the third timed out, its re-read too
    assert out.result == "partial" and out.started == 2 and out.failures == {"timeout": 1}
    assert "did not answer" in out.error
    assert d._uncertain == {silent.ids[2]}
    # every planned start is recorded (the dropped ones as not tried): no intent stays open
    assert d.store.open_intents() == []
    results = [s["result"] for jid in farm.jobs for s in d.store.starts_of(jid)]
    assert sorted(results) == ["not_tried"] * 5 + ["ok"] * 2 + ["timeout"]
    # the next cycle looks at the uncertain job first; the server still answers nothing
    silent.calls.clear()
    out = d.cycle()
    assert silent.calls == ["statjob", "runjob"] and out.result == "partial"


def test_a_job_the_server_hangs_on_does_not_stop_the_other_starts():
    """A pbs_server deadlocked on one job's mutex answers for the others. The first cycle
    cannot tell that from a server that answers nothing (runjob and re-read time out: the
    rest waits); at the next, that job's re-read times out and the starts after it go ahead."""
    d, server, farm = make(n_jobs=4, slots=2)
    stuck = {"id": None}
    run, get = server.run_job, server.get_job

    def run_job(job_id, placement):
        if stuck["id"] in (None, job_id):
            stuck["id"] = job_id
            raise ServerTimeout(f"runjob {job_id}: no answer within 30 s")
        return run(job_id, placement)

    def get_job(job_id):
        if job_id == stuck["id"]:
            raise ServerTimeout(f"statjob {job_id}: no answer within 30 s")
        return get(job_id)
    server.run_job, server.get_job = run_job, get_job
    out = d.cycle()
    assert out.started == 0 and out.failures == {"timeout": 1} and out.result == "partial"
    out = d.cycle()
    assert out.started == 3 and out.failures == {"timeout": 1} and out.result == "ok"
    assert d._uncertain == {stuck["id"]}  # looked at before each try, never started blind


def test_a_server_lost_during_starts_leaves_no_open_intent(tmp_path):
    """The starts after the one that found the server gone were never tried: recorded as
    such, so a later restart does not settle them as starts of their own."""
    d, server, farm = make(n_jobs=4, store=Store(f"sqlite:///{tmp_path}/h.db"))
    calls = {"n": 0}
    real = server.run_job

    def dying(job_id, placement):
        calls["n"] += 1
        if calls["n"] == 2:
            raise ServerUnavailable("cannot connect to pbs_server")
        return real(job_id, placement)
    server.run_job = dying
    out = d.cycle()
    assert out.result == "partial" and out.started == 1 and calls["n"] == 2
    assert d.store.open_intents() == []


def test_a_timed_out_start_that_took_effect_is_forgotten():
    """The job runs after all (its runjob was answered late): it is never planned again, so
    it leaves the jobs to re-read rather than stay there for the daemon's lifetime."""
    d, server, farm = make(n_jobs=1)
    server.timeout_but_started.add("0.s")
    server.get_job = lambda job_id: (_ for _ in ()).throw(ServerTimeout("statjob: no answer"))
    out = d.cycle()
    assert out.failures == {"timeout": 1} and d._uncertain == {"0.s"}
    d.cycle()
    assert d._uncertain == set() and server.run_calls == ["0.s"]
