"""Jobs in a routing queue, read through the fake IFL (no TORQUE needed)."""

from __future__ import annotations

from mysched.backends.torque.backend import TorqueServer
from mysched.backends.torque.fake import FakeIFL
from mysched.config import config_from_text
from mysched.core.planner import plan
from mysched.core.share.usage import Usage


def test_a_job_in_a_routing_queue_is_its_owners_not_unknown(monkeypatch):
    """Seen live: a job held in a stopped routing queue showed user 'unknown', group 'unknown',
    VO 'others' -- pbs_server sets euser and egroup only in an execution queue."""
    from mysched.backends.torque import backend

    monkeypatch.setattr(backend, "_login_group", lambda user: {"carol": "cms"}.get(user))
    ifl = FakeIFL(jobs=[("7.s", {"job_state": "Q", "queue": "route", "Job_Owner": "carol@localhost",
                                 "Resource_List.walltime": "00:05:00", "qtime": "100"}),
                        ("8.s", {"job_state": "Q", "queue": "route", "Job_Owner": "nobody@localhost"}),
                        ("9.s", {"job_state": "Q", "queue": "atlas", "euser": "bob", "egroup": "atlas"})],
                  nodes=[("n1", {"state": "free", "np": "4"})],
                  queues=[("atlas", {"queue_type": "Execution"}), ("route", {"queue_type": "Route"})])
    s = TorqueServer(ifl=ifl).snapshot()
    jobs = {j.id: (j.user, j.group) for j in s.jobs}
    assert jobs == {"7.s": ("carol", "cms"), "8.s": ("nobody", "nobody"), "9.s": ("bob", "atlas")}
    asked = [sel for sel in ifl.selects if "job_state" in sel]
    assert ["Job_Owner" in sel for sel in asked] == [False, True]  # atlas without, route with
    assert plan(s, config_from_text('vos = { cms = { groups = ["cms"]; share = 100; }; };'), Usage(),
                1000).waits["7.s"].reason == "not_execution_queue"


def test_a_user_unknown_at_first_is_looked_up_again_later(monkeypatch):
    """The login group of a routing-queue job's owner: an account the name service learns of
    after the daemon started is seen within GROUP_TTL, not never."""
    from mysched.backends.torque import backend

    accounts = {}

    class _Pw:
        def __init__(self, gid):
            self.pw_gid = gid

    def getpwnam(user):
        return _Pw(accounts[user])

    monkeypatch.setattr(backend.pwd, "getpwnam", getpwnam)
    monkeypatch.setattr(backend.grp, "getgrgid", lambda gid: type("G", (), {"gr_name": {500: "cms"}[gid]})())
    monkeypatch.setattr(backend, "_GROUPS", {})
    t = [0.0]
    assert backend._login_group("dave", lambda: t[0]) is None
    accounts["dave"] = 500
    t[0] = 60.0
    assert backend._login_group("dave", lambda: t[0]) is None  # remembered a while
    t[0] = backend.GROUP_TTL + 1
    assert backend._login_group("dave", lambda: t[0]) == "cms"
