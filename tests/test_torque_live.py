"""Against a live pbs_server (marked `torque`; skipped when none answers).

Point MYSCHED_TORQUE_SERVER at the server (default: the local one) and make sure `qsub`,
`qstat` and `qdel` are on PATH (or in /opt/torque/bin). Jobs are submitted as the
unprivileged users alice (group atlas) and carol (group cms), which must exist.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest

from mysched.config import config_from_text
from mysched.daemon import Daemon
from mysched.errors import JobGone, JobStateError, MyschedError
from mysched.model import JobState
from mysched.store import Store

pytestmark = pytest.mark.torque

HOST = os.environ.get("MYSCHED_TORQUE_SERVER") or None
BIN = [p for p in (os.path.dirname(shutil.which("qsub") or ""), "/opt/torque/bin") if p]


def tool(name: str) -> str:
    for d in BIN:
        if os.path.exists(os.path.join(d, name)):
            return os.path.join(d, name)
    pytest.skip(f"{name} not found")


@pytest.fixture(scope="module")
def server():
    try:
        socket.create_connection((HOST or "127.0.0.1", 15001), timeout=1).close()
    except OSError:
        pytest.skip("no pbs_server answers on port 15001")
    from mysched.torque.backend import TorqueServer
    try:
        srv = TorqueServer(HOST)
        srv.snapshot()
    except MyschedError as exc:
        pytest.skip(f"pbs_server not usable: {exc}")
    for user in ("alice", "carol"):
        if subprocess.run(["id", user], capture_output=True).returncode:
            pytest.skip(f"test user {user} missing")
    yield srv
    srv.close()


def qsub(user: str, queue: str, resources: str, seconds: int = 300) -> str:
    res = subprocess.run(["su", user, "-c", f"echo 'sleep {seconds}' | {tool('qsub')} -q {queue} -l {resources}"],
                         capture_output=True, text=True, cwd="/tmp")
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


@pytest.fixture
def cleanup():
    ids: list[str] = []
    yield ids
    if ids:
        subprocess.run([tool("qdel"), "-W", "0", *ids], capture_output=True)
        subprocess.run([tool("qdel"), "-p", *ids], capture_output=True)
        time.sleep(1)


CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; max_per_node = 1; }; '
                       'cms = { groups = ["cms"]; share = 50; }; };')


def test_snapshot_reads_nodes_and_queues(server):
    snap = server.snapshot()
    assert snap.nodes and all(n.slots > 0 for n in snap.nodes)
    assert snap.queues


def test_run_once_starts_jobs_where_the_planner_chose(server, cleanup, tmp_path):
    before = {j.id for j in server.snapshot().jobs}
    cleanup.append(qsub("alice", "atlas", "nodes=1:ppn=2,walltime=00:10:00"))
    cleanup.append(qsub("alice", "atlas", "walltime=00:10:00"))
    cleanup.append(qsub("carol", "cms", "walltime=00:10:00"))
    store = Store(f"sqlite:///{tmp_path}/h.db")
    d = Daemon(CFG, server, store=store, state_dir=str(tmp_path))
    out = d.cycle()
    assert out.result == "ok", out.error
    mine = [s for s in out.plan.starts if s.job_id in cleanup]
    assert {s.job_id for s in mine} == set(cleanup) - before
    snap = server.snapshot()
    jobs = {j.id: j for j in snap.jobs}
    for s in mine:
        j = jobs[s.job_id]
        assert j.state in (JobState.RUNNING, JobState.EXITING)
        assert j.placement == s.placement  # node and core count as planned (node:ppn=N)
    atlas_nodes = [s.placement[0][0] for s in mine if s.vo == "atlas"]
    assert len(atlas_nodes) == len(set(atlas_nodes))  # max_per_node = 1 respected
    assert store.recent_cycles(1)[0]["n_started"] == out.started


def test_ifl_errors_map_to_our_exceptions(server, cleanup):
    with pytest.raises(JobGone):
        server.run_job("99999.nosuch", (("node01", 1),))
    jid = qsub("carol", "cms", "walltime=00:10:00")
    cleanup.append(jid)
    node = server.snapshot().nodes[0].name
    server.run_job(jid, ((node, 1),))
    with pytest.raises(JobStateError):
        server.run_job(jid, ((node, 1),))
    assert server.get_job(jid).state in (JobState.RUNNING, JobState.EXITING)


def test_accounting_records_reach_the_store_exactly_once(server, cleanup, tmp_path):
    jid = qsub("alice", "atlas", "walltime=00:01:00", seconds=1)
    cleanup.append(jid)
    server.run_job(jid, ((server.snapshot().nodes[0].name, 1),))
    acct = "/var/spool/torque/server_priv/accounting"
    deadline = time.time() + 60
    store = Store(f"sqlite:///{tmp_path}/h.db")
    while time.time() < deadline:
        store.ingest_accounting([acct])
        if any(r.id == jid for r in store.finished_since(0)):
            break
        time.sleep(1)
    recs = [r for r in store.finished_since(0) if r.id == jid]
    assert len(recs) == 1 and recs[0].user == "alice" and recs[0].group == "atlas"
    store.ingest_accounting([acct])
    assert len([r for r in store.finished_since(0) if r.id == jid]) == 1


def test_scheduler_events_arrive_when_scheduling_is_on(server, cleanup):
    import threading

    from mysched.torque.schedproto import SchedulerListener
    got: list[str] = []
    seen = threading.Event()
    try:
        lst = SchedulerListener(("127.0.0.1", 15004), on_event=lambda r: (got.append(r), seen.set())).start()
    except OSError as exc:
        pytest.skip(str(exc))
    qmgr = tool("qmgr")
    try:
        subprocess.run([qmgr, "-c", "set server scheduling = True"], check=True, capture_output=True)
        seen.clear()
        got.clear()
        cleanup.append(qsub("carol", "cms", "walltime=00:10:00"))
        assert seen.wait(20), "pbs_server did not contact the scheduler port"
        assert "new" in got or "first" in got or "command" in got
    finally:
        subprocess.run([qmgr, "-c", "set server scheduling = False"], capture_output=True)
        lst.close()


def test_status_commands_match_the_live_server(server, cleanup, tmp_path, capsys):
    import json

    from mysched.cli import main
    cleanup.append(qsub("alice", "atlas", "walltime=00:10:00"))
    cleanup.append(qsub("carol", "cms", "nodes=1:ppn=2,walltime=00:10:00"))
    d = Daemon(CFG, server, state_dir=str(tmp_path))
    assert d.cycle().result == "ok"
    snap = server.snapshot()
    assert main(["jobs", "--state-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    running = [j for j in snap.jobs if j.state in (JobState.RUNNING, JobState.EXITING)]
    assert doc["counts"]["running"] == len(running)
    assert doc["farm"]["used_slots"] == sum(j.cores for j in running)
    assert doc["farm"]["total_slots"] == sum(n.slots for n in snap.nodes if n.state.value not in ("down", "offline"))
    assert main(["nodes", "--state-dir", str(tmp_path), "--json"]) == 0
    nodes = {n["name"]: n for n in json.loads(capsys.readouterr().out)["nodes"]}
    for n in snap.nodes:
        used = sum(c for j in running for name, c in j.placement if name == n.name)
        assert nodes[n.name]["used"] == used
