"""pbs_server's run limits read through the IFL (no TORQUE needed: the fake IFL answers as
libtorque 6.1 does) and honoured by a daemon cycle, as pbs_sched and MAUI honour them."""

from __future__ import annotations

from mysched.backends.torque.backend import QUEUE_ATTRS, SERVER_ATTRS, TorqueServer
from mysched.backends.torque.fake import FakeIFL
from mysched.backends.torque.mapping import queue_from_attrs, server_limits_from_attrs
from mysched.config import config_from_text
from mysched.core.model.batch import ServerLimits
from mysched.core.planner import plan
from mysched.core.share.usage import Usage

CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };')


def _job(user: str, state: str = "Q", queue: str = "atlas", host: str = "") -> dict[str, str]:
    a = {"job_state": state, "queue": queue, "euser": user, "egroup": "atlas", "qtime": "100",
         "Resource_List.nodes": "1", "Resource_List.walltime": "01:00:00"}
    if host:
        a["exec_host"] = f"{host}/0"
    return a


def _ifl(queue: dict[str, str], server: dict[str, str]) -> FakeIFL:
    return FakeIFL(
        jobs=[("1.s", _job("bob", "R", host="n1")), ("2.s", _job("bob")), ("3.s", _job("bob")),
              ("4.s", _job("alice")), ("5.s", _job("alice"))],
        nodes=[("n1", {"state": "free", "np": "4", "jobs": "0/1.s"}), ("n2", {"state": "free", "np": "4"})],
        queues=[("atlas", {"queue_type": "Execution", "enabled": "True", "started": "True", **queue})],
        server={"server_state": "Active", "scheduling": "False", **server})


def test_the_limits_are_asked_for_and_read():
    assert {"max_user_run", "max_group_run", "max_running"} <= set(QUEUE_ATTRS)
    assert {"max_user_run", "max_group_run", "max_running"} <= set(SERVER_ATTRS)
    q = queue_from_attrs("atlas", {"queue_type": "Execution", "max_user_run": "2", "max_group_run": "5"}, [])
    assert (q.max_running, q.max_user_run, q.max_group_run) == (None, 2, 5)
    assert server_limits_from_attrs({"max_running": "10", "max_user_run": "3"}, []) == ServerLimits(10, 3, None)
    assert server_limits_from_attrs({"server_state": "Active"}, []) is None
    warnings: list[str] = []
    assert queue_from_attrs("q", {"max_user_run": "lots", "max_group_run": "-1"}, warnings).max_user_run is None
    assert warnings == ["queue q: bad max_user_run 'lots'; not enforced", "queue q: bad max_group_run '-1'; not enforced"]


def test_a_cycle_honours_the_queues_max_user_run():
    srv = TorqueServer(ifl=_ifl({"max_user_run": "1"}, {}))
    s = srv.snapshot()
    p = plan(s, CFG, Usage(), 1000)
    assert [st.job_id for st in p.starts] == ["4.s"]  # bob runs 1.s already; alice gets one
    assert {j: w.reason for j, w in p.waits.items()} == {"2.s": "queue_user_limit", "3.s": "queue_user_limit",
                                                           "5.s": "queue_user_limit"}


def test_a_cycle_honours_the_servers_max_running():
    s = TorqueServer(ifl=_ifl({}, {"max_running": "3"})).snapshot()
    assert s.limits == ServerLimits(max_running=3)
    p = plan(s, CFG, Usage(), 1000)
    assert len(p.starts) == 2 and {w.reason for w in p.waits.values()} == {"server_max_running"}


def test_why_names_the_run_limit_and_what_runs_against_it(tmp_path, capsys):
    """An admin asking why bob's job waits sees the limit and the count, as checkjob shows."""
    from mysched.cli.main import main
    from mysched.daemon.cycle import Daemon

    for queue, server, by, want in (
            ({"max_user_run": "1"}, {}, "bob",
             "user bob run(s) 1 job(s) in queue atlas; max_user_run = 1 (qmgr -c 'set queue atlas max_user_run')"),
            ({}, {"max_running": "3"}, None,
             "all users run(s) 3 job(s) in the server; max_running = 3 (qmgr -c 'set server max_running')")):
        state = tmp_path / str(by)
        d = Daemon(CFG, TorqueServer(ifl=_ifl(queue, server)), state_dir=str(state))
        out = d.cycle()
        assert out.result == "ok"
        jid = min(j for j, w in out.plan.waits.items() if by is None or j in ("2.s", "3.s"))
        assert main(["why", "--state-dir", str(state), jid]) == 0
        assert want in capsys.readouterr().out
