"""Against a live pbs_server (marked `torque`; skipped when none answers).

Point MYSCHED_TORQUE_SERVER at the server (default: the local one) and make sure `qsub`,
`qstat`, `qdel` and `qmgr` are on PATH (or in /opt/torque/bin). Jobs are submitted as the
unprivileged users alice and bob (group atlas) and carol (group cms), which must exist;
submitting through `su` and changing server settings need root. Every job created here is
deleted again. The scheduler-event test binds port 15004 on loopback and sets the server's
`scheduling` to True for a few seconds (False again afterwards).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from mysched.config import config_from_text
from mysched.daemon.cycle import Daemon
from mysched.backends.torque.home import find_server_home
from mysched.errors import JobGone, JobStateError, MyschedError, ServerTimeout
from mysched.core.model.batch import JobState, NodeState
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store

from ..conftest import REPO
from .testusers import require_test_users

pytestmark = pytest.mark.torque

HOST = os.environ.get("MYSCHED_TORQUE_SERVER") or None
BIN = [p for p in (os.path.dirname(shutil.which("qsub") or ""), "/opt/torque/bin") if p]
USERS = ("alice", "bob", "carol")


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
        pytest.skip(f"no pbs_server answers on {HOST or '127.0.0.1'}:15001")
    from mysched.backends.torque.backend import TorqueServer
    try:
        srv = TorqueServer(HOST, timeout=20)
        srv.snapshot()
    except MyschedError as exc:
        pytest.skip(f"pbs_server not usable: {exc}")
    require_test_users(USERS)
    yield srv
    srv.close()


def qsub(user: str, queue: str, resources: str, seconds: int = 300) -> str:
    res = subprocess.run(["su", user, "-c", f"echo 'sleep {seconds}' | {tool('qsub')} -q {queue} -l {resources}"],
                         capture_output=True, text=True, cwd="/tmp")
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def quiet_four_core_farm(server) -> list:  # noqa: ANN001 - the TorqueServer fixture
    """The usable nodes once every mom reports (after a pbs_server restart -- the outage test --
    they come back one by one); skips unless the farm is idle and its nodes have 4 cores."""
    snap = server.snapshot()
    t_up = time.time()
    while time.time() - t_up < 90 and not all(n.state.usable for n in snap.nodes):
        time.sleep(2)
        snap = server.snapshot()
    if any(j.state in (JobState.QUEUED, JobState.RUNNING) for j in snap.jobs):
        pytest.skip("the farm runs or queues other jobs")
    usable = [n for n in snap.nodes if n.state.usable]
    if not usable or any(n.slots != 4 for n in usable):
        pytest.skip("needs the 4-core nodes of the test farm")
    return usable


def all_running(server, ids: list[str], timeout: float = 60.0) -> bool:  # noqa: ANN001 - the fixture
    """Wait up to `timeout` s for every job of `ids` the server lists to run; do they?"""
    t0 = time.time()
    while True:
        if all(j.state == JobState.RUNNING for j in server.snapshot().jobs if j.id in ids):
            return True
        if time.time() - t0 >= timeout:
            return False
        time.sleep(0.5)


def start_daemon(cfg, tmp_path) -> subprocess.Popen:  # noqa: ANN001 - paths
    """`mysched run` on `cfg` with its store and status under `tmp_path`, log in d.log."""
    return subprocess.Popen([str(Path(sys.executable).parent / "mysched"), "run", "-c", str(cfg), "--db",
                             f"sqlite:///{tmp_path}/h.db", "--state-dir", str(tmp_path / "s"), "--metrics-address",
                             "off", "--event-address", "off"], stdout=subprocess.DEVNULL,
                            stderr=open(tmp_path / "d.log", "w"))


def qmgr(command: str) -> None:
    subprocess.run([tool("qmgr"), "-c", command], check=True, capture_output=True)


def delete_now(ids: list[str]) -> None:
    """qdel, then purge, `ids`: qdel alone returns before the moms end the running ones, and the
    test after found them still running and skipped ('the farm runs or queues other jobs')."""
    if ids:
        subprocess.run([tool("qdel"), "-W", "0", *ids], capture_output=True)
        subprocess.run([tool("qdel"), "-p", *ids], capture_output=True)
        time.sleep(1)


@pytest.fixture
def cleanup():
    ids: list[str] = []
    yield ids
    delete_now(ids)


def free_node(server, cores: int) -> str:
    """A usable node with at least `cores` free slots now."""
    snap = server.snapshot()
    used: dict[str, int] = {}
    for j in snap.jobs:
        for node, c in j.placement:
            used[node] = used.get(node, 0) + c
    for n in snap.nodes:
        if n.state == NodeState.FREE and n.slots - used.get(n.name, 0) >= cores:
            return n.name
    pytest.skip(f"no node with {cores} free cores")


def cut_connections(port: int = 15001) -> int:
    """Shut down this process's TCP connections to `port`, as a server restart would."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            s = socket.socket(fileno=int(fd))
        except (OSError, ValueError):
            continue
        try:
            if s.family == socket.AF_INET and s.type == socket.SOCK_STREAM and s.getpeername()[1] == port:
                s.shutdown(socket.SHUT_RDWR)
                n += 1
        except OSError:
            pass
        finally:
            s.detach()
    return n


CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; max_per_node = 1; }; '
                       'cms = { groups = ["cms"]; share = 50; }; };')


def test_snapshot_reads_nodes_queues_and_jobs(server, cleanup):
    jid = qsub("bob", "atlas", "nodes=1:ppn=2,walltime=00:10:00,mem=500mb")
    cleanup.append(jid)
    snap = server.snapshot()
    assert snap.nodes and all(n.slots > 0 for n in snap.nodes)
    assert {"atlas", "cms"} <= {q.name for q in snap.queues}
    assert all(q.enabled and q.started for q in snap.queues if q.name in ("atlas", "cms"))
    job = {j.id: j for j in snap.jobs}[jid]
    assert (job.state, job.queue, job.user, job.group) == (JobState.QUEUED, "atlas", "bob", "atlas")
    assert (job.cores, job.walltime, job.mem) == (2, 600.0, 500 << 20)
    assert abs(job.submit_time - time.time()) < 120 and job.placement == ()
    assert snap.extra["warnings"] == []


def test_reading_queue_by_queue_sees_what_one_read_sees(server, cleanup):
    from mysched.backends.torque.backend import TorqueServer

    cleanup += [qsub("alice", "atlas", "nodes=1:ppn=1,walltime=00:10:00"),
                qsub("carol", "cms", "nodes=1:ppn=2,walltime=00:20:00")]
    whole = TorqueServer(HOST, timeout=20, read_by_queue=False)
    try:
        for _ in range(3):  # a job may change between the two reads: compare two reads in a row
            by_queue = {j.id: j for j in server.snapshot().jobs}
            at_once = {j.id: j for j in whole.snapshot().jobs}
            if by_queue == at_once:
                break
            time.sleep(1)
    finally:
        whole.close()
    assert set(cleanup) <= set(by_queue)
    assert by_queue == at_once


def test_two_core_job_runs_on_the_chosen_node(server, cleanup):
    jid = qsub("alice", "atlas", "nodes=1:ppn=2,walltime=00:10:00")
    cleanup.append(jid)
    node = free_node(server, 2)
    server.run_job(jid, ((node, 2),))  # location node:ppn=2
    job = server.get_job(jid)
    assert job.state in (JobState.RUNNING, JobState.EXITING)
    assert job.placement == ((node, 2),) and job.cores == 2  # exec_host node/a-b: 2 cores there
    assert job.start_time is not None
    out = subprocess.run([tool("qstat"), "-f", jid], capture_output=True, text=True).stdout
    exec_host = next(line.split("=", 1)[1].strip() for line in out.splitlines() if "exec_host" in line)
    assert exec_host.startswith(f"{node}/") and len(exec_host.split("+")) == 1
    assert jid in {j for n in server.snapshot().nodes if n.name == node for j in n.jobs}


def test_ifl_errors_map_to_our_exceptions(server, cleanup):
    with pytest.raises(JobGone):
        server.run_job("99999.nosuch", (("node01", 1),))
    assert server.get_job("99999.nosuch") is None
    jid = qsub("carol", "cms", "walltime=00:10:00")
    cleanup.append(jid)
    node = free_node(server, 1)
    server.run_job(jid, ((node, 1),))
    with pytest.raises(JobStateError):
        server.run_job(jid, ((node, 1),))
    assert server.get_job(jid).state in (JobState.RUNNING, JobState.EXITING)


def test_runjob_as_an_ordinary_user_is_unauthorized(server, cleanup):
    """pbs_runjob needs a manager/operator: as bob the server answers 15007."""
    import sys
    jid = qsub("bob", "atlas", "walltime=00:10:00")
    cleanup.append(jid)
    code = ("from mysched.backends.torque.backend import TorqueServer\nfrom mysched.errors import Unauthorized\n"
            f"try:\n    TorqueServer({HOST!r}).run_job({jid!r}, (('node01', 1),))\n"
            "except Unauthorized as e:\n    print('unauthorized', e.code)\n")
    repo = str(REPO)
    for python in dict.fromkeys((sys.executable, "/usr/bin/python3")):  # the venv may be root's only
        res = subprocess.run(["su", "bob", "-c", f'{python} -c "$0"', code], capture_output=True, text=True,
                             cwd="/tmp", env={**os.environ, "PYTHONPATH": repo})
        if "Permission denied" not in res.stderr and "No such file" not in res.stderr:
            break
    else:
        pytest.skip("no Python interpreter bob may run")
    assert res.stdout.strip() == "unauthorized 15007", res.stderr
    assert server.get_job(jid).state == JobState.QUEUED


def test_a_cut_connection_is_reconnected_for_reads(server, cleanup):
    server.snapshot()
    assert cut_connections() >= 1
    assert server.snapshot().nodes  # reconnected and asked again
    jid = qsub("carol", "cms", "walltime=00:10:00")
    cleanup.append(jid)
    node = free_node(server, 1)
    assert cut_connections() >= 1
    with pytest.raises(ServerTimeout):  # its effect is unknown to the caller...
        server.run_job(jid, ((node, 1),))
    assert server.get_job(jid).state == JobState.QUEUED  # ...who re-reads: the request never left
    server.run_job(jid, ((node, 1),))
    assert server.get_job(jid).state in (JobState.RUNNING, JobState.EXITING)


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


def test_a_second_cycle_counts_what_the_first_started(server, cleanup, tmp_path):
    """The daemon keeps its planner index between cycles; the jobs it started in the first
    cycle (read back as new objects from pbs_server) must count in the second: atlas may run
    one job per node, so four atlas jobs over two cycles land on four different nodes."""
    d = Daemon(CFG, server, store=Store(f"sqlite:///{tmp_path}/h.db"), state_dir=str(tmp_path))
    busy = {n for j in server.snapshot().jobs for n, _ in j.placement}
    if len(busy) > 0:
        pytest.skip("needs an idle test farm")
    cleanup.extend(qsub("alice", "atlas", "walltime=00:10:00") for _ in range(2))
    assert d.cycle().result == "ok"
    cleanup.extend(qsub("bob", "atlas", "walltime=00:10:00") for _ in range(3))
    out = d.cycle()
    assert out.result == "ok", out.error
    jobs = {j.id: j for j in server.snapshot().jobs}
    nodes = [jobs[i].placement[0][0] for i in cleanup if jobs[i].state in (JobState.RUNNING, JobState.EXITING)]
    assert len(nodes) == 4 and len(set(nodes)) == 4  # the fifth waits: every node has its atlas job
    assert out.plan.waits[cleanup[-1]].reason == "vo_node_limit"


def test_accounting_records_reach_the_store_exactly_once(server, cleanup, tmp_path):
    jid = qsub("alice", "atlas", "walltime=00:01:00", seconds=1)
    cleanup.append(jid)
    server.run_job(jid, ((free_node(server, 1), 1),))
    home = find_server_home()
    acct = home.accounting_dir
    if not os.path.isdir(acct):
        pytest.skip(f"{acct} not on this host (pbs_server's home {home.path} from {home.source})")
    deadline = time.time() + 60
    store = Store(f"sqlite:///{tmp_path}/h.db")
    while time.time() < deadline:
        ingest_accounting(store, [acct])
        if any(r.id == jid for r in store.finished_since(0)):
            break
        time.sleep(1)
    recs = [r for r in store.finished_since(0) if r.id == jid]
    assert len(recs) == 1 and recs[0].user == "alice" and recs[0].group == "atlas"
    ingest_accounting(store, [acct])
    assert len([r for r in store.finished_since(0) if r.id == jid]) == 1


def test_scheduler_events_arrive_when_scheduling_is_on(server, cleanup):
    from mysched.backends.torque.schedproto import SchedulerListener, contact_rule
    got: list[str] = []
    refused: list[str] = []
    cond = threading.Condition()

    def on_event(reason: str) -> None:
        with cond:
            got.append(reason)
            cond.notify_all()

    def wait_for(pred, timeout: float) -> bool:
        with cond:
            return cond.wait_for(lambda: pred(got), timeout)

    try:
        # the daemon's default rule: pbs_server's host, a reserved source port (pbs_server runs as root)
        rule = contact_rule("localhost")
        assert rule.reserved_port, rule
        lst = SchedulerListener(("127.0.0.1", 15004), on_event=on_event, rule=rule,
                                on_contact=lambda result: refused.append(result) if result != "accepted" else None
                                ).start()
    except OSError as exc:
        pytest.skip(str(exc))
    try:
        qmgr("set server scheduling = True")
        # Turning scheduling on pokes the scheduler at once ("command", or "first" after a restart).
        assert wait_for(lambda g: bool({"command", "first"} & set(g)), 15), got
        with cond:
            got.clear()
        cleanup.append(qsub("carol", "cms", "walltime=00:10:00"))
        assert wait_for(lambda g: "new" in g, 15), f"no 'new' event after qsub (got {got}, refused {refused})"
        assert not refused, refused
    finally:
        qmgr("set server scheduling = False")
        lst.close()
    out = subprocess.run([tool("qmgr"), "-c", "list server scheduling"], capture_output=True, text=True).stdout
    assert "False" in out


def test_status_commands_match_the_live_server(server, cleanup, tmp_path, capsys):
    import json

    from mysched.cli.main import main
    cleanup.append(qsub("alice", "atlas", "walltime=00:10:00"))
    cleanup.append(qsub("carol", "cms", "nodes=1:ppn=2,walltime=00:10:00"))
    d = Daemon(CFG, server, state_dir=str(tmp_path))
    assert d.cycle().result == "ok"
    snap = server.snapshot()
    assert snap.extra["server"].get("scheduling") in ("True", "False")
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


# -- whole requests (issue #10) ---------------------------------------------------------------
REQ_CFG = config_from_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; '
                           'cms = { groups = ["cms"]; share = 50; }; };')


def _started(server, jid: str) -> dict[str, int]:
    job = server.get_job(jid)
    assert job is not None and job.state in (JobState.RUNNING, JobState.EXITING), job
    return dict(job.placement)


def _quiet_farm(server) -> None:
    if any(j.state in (JobState.QUEUED, JobState.RUNNING) for j in server.snapshot().jobs):
        pytest.skip("the farm runs or queues other jobs; these tests need it to themselves")


def test_a_two_node_request_starts_on_two_nodes(server, cleanup, tmp_path):
    _quiet_farm(server)
    jid = qsub("alice", "atlas", "nodes=2:ppn=2,walltime=00:10:00", seconds=60)
    cleanup.append(jid)
    d = Daemon(REQ_CFG, server, state_dir=str(tmp_path))
    assert d.cycle().started == 1
    placed = _started(server, jid)  # from exec_host, as pbs_server records it
    assert len(placed) == 2 and set(placed.values()) == {2}


def test_a_property_request_lands_only_on_nodes_with_it(server, cleanup, tmp_path):
    _quiet_farm(server)
    node = "node03"
    qmgr(f"set node {node} properties = bigmem")
    try:
        jid = qsub("bob", "atlas", "nodes=1:ppn=1:bigmem,walltime=00:10:00", seconds=60)
        cleanup.append(jid)
        d = Daemon(REQ_CFG, server, state_dir=str(tmp_path))
        assert d.cycle().started == 1
        assert _started(server, jid) == {node: 1}
    finally:
        subprocess.run([tool("qmgr"), "-c", f"unset node {node} properties"], capture_output=True)


def test_memory_requests_are_never_overcommitted(server, cleanup, tmp_path):
    _quiet_farm(server)
    snap = server.snapshot()
    mems = {n.name: n.mem for n in snap.nodes if n.state == NodeState.FREE}
    if not mems or None in mems.values():
        pytest.skip("pbs_mom reports no physmem")
    per_job = min(mems.values()) * 6 // 10  # two of these never fit on one node
    ids = [qsub(u, "atlas" if u != "carol" else "cms", f"nodes=1:ppn=1,mem={per_job // 1024}kb,walltime=00:10:00",
                seconds=60) for u in ("alice", "bob", "carol")]
    cleanup.extend(ids)
    d = Daemon(REQ_CFG, server, state_dir=str(tmp_path))
    d.cycle()
    used = [n for jid in ids if (j := server.get_job(jid)) is not None and j.placement for n, _ in j.placement]
    assert len(used) == len(set(used)) == min(3, len(mems))  # one per node, whatever cores are free


def test_a_vmem_request_beyond_every_nodes_totmem_never_starts(server, cleanup, tmp_path):
    _quiet_farm(server)
    tot = [n.vmem for n in server.snapshot().nodes if n.state == NodeState.FREE]
    if not tot or None in tot:
        pytest.skip("pbs_mom reports no totmem")
    over = max(tot) + (1 << 30)
    jid = qsub("alice", "atlas", f"nodes=1:ppn=1,vmem={over // 1024}kb,walltime=00:10:00", seconds=60)
    cleanup.append(jid)
    d = Daemon(REQ_CFG, server, state_dir=str(tmp_path))
    p = d.cycle().plan
    assert server.get_job(jid).state == JobState.QUEUED
    assert p.waits[jid].reason == "never_fits" and "MB virtual" in p.waits[jid].detail


def test_kill_9_during_cycles_never_starts_a_job_twice(server, cleanup, tmp_path):
    """The daemon is killed at random instants while it starts jobs, and restarted each time.
    pbs_server's accounting (one S record per start) and the history must agree: every job
    started once, where the history says, and no intent left open."""
    import random
    import sys
    from pathlib import Path

    from mysched.backends.torque.home import find_server_home

    acct = find_server_home().accounting_dir
    if not os.path.isdir(acct):
        pytest.skip(f"{acct} not on this host")
    _quiet_farm_live = [j for j in server.snapshot().jobs if j.state in (JobState.QUEUED, JobState.RUNNING)]
    if _quiet_farm_live:
        pytest.skip("the farm runs or queues other jobs")
    points = int(os.environ.get("MYSCHED_KILL_POINTS", "12"))  # the proof: 100
    ids = [qsub(("alice", "bob", "carol")[i % 3], "atlas" if i % 3 < 2 else "cms", "nodes=1:ppn=1,walltime=00:05:00",
                seconds=2 + i % 4) for i in range(max(24, 4 * points))]
    cleanup.extend(ids)
    cfg = tmp_path / "m.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                   'scheduler = { interval = 2; min_interval = 1; };\n')
    db = f"sqlite:///{tmp_path}/h.db"
    script = Path(sys.executable).parent / "mysched"
    rng = random.Random(7)
    kills = 0
    deadline = time.time() + 60 + 4 * points
    while time.time() < deadline:
        proc = subprocess.Popen([str(script), "run", "-c", str(cfg), "--db", db, "--state-dir", str(tmp_path / "s"),
                                 "--metrics-address", "off", "--event-address", "off"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ})
        time.sleep(rng.uniform(0.3, 2.5))
        proc.kill()
        proc.wait()
        kills += 1
        snap = server.snapshot()
        if kills >= points and not any(j.id in ids and j.state == JobState.QUEUED for j in snap.jobs):
            break
    # a last, clean run settles any open intent
    proc = subprocess.Popen([str(script), "run", "-c", str(cfg), "--db", db, "--state-dir", str(tmp_path / "s"),
                             "--metrics-address", "off", "--event-address", "off", "--once"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proc.wait(60)
    store = Store(db)
    assert store.open_intents() == []
    starts: dict[str, int] = {}
    ended: set[str] = set()
    for name in sorted(os.listdir(acct)):
        with open(os.path.join(acct, name), errors="replace") as f:
            for line in f:
                parts = line.split(";")
                if len(parts) > 2 and parts[1] == "S" and parts[2] in ids:
                    starts[parts[2]] = starts.get(parts[2], 0) + 1
                elif len(parts) > 2 and parts[1] == "E" and parts[2] in ids:
                    ended.add(parts[2])
    assert starts and max(starts.values()) == 1, starts  # pbs_server started none twice
    for jid, n in starts.items():
        # a start the killed daemon made and did not record is settled by the next one as the
        # server shows it: "ok" while the job runs, "gone" when this short job already ended
        # (its E record is in the log, matched by the S record)
        ok = [s for s in store.starts_of(jid) if s["result"] == "ok" or s["result"] == "gone" and jid in ended]
        assert len(ok) == 1, (jid, store.starts_of(jid))  # the history knows each start, once
    # finished jobs: each E record of the log once in the history (ingested by the daemon)
    finished = [r.id for r in store.finished_since(0) if r.id in ids]
    assert len(finished) == len(set(finished)) and set(finished) <= ended
    print(f"kill points {kills}, jobs started {len(starts)}, started twice 0, finished in history "
          f"{len(finished)} of {len(ended)} E records")
    assert kills >= points
