"""Against a live OpenPBS server (marked `openpbs`; skipped when none answers).

The farm is the one docs/openpbs.md describes (built from the shared recipe): the server on
MYSCHED_OPENPBS_SERVER (default localhost:16001), OpenPBS's commands in /opt/pbs/bin,
`scheduling = False`, `job_history_enable = True`, vnodes of 4 cpus on one mom with a boolean resource `bigmem` True on
exactly one of them, and execution queues `atlas` and `cms`. Jobs are submitted as the
unprivileged users alice and bob (group atlas) and carol (group cms) through `su`, which
needs root; every job created here is deleted again.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mysched.errors import JobGone, MyschedError
from mysched.core.model.batch import JobState

from .testusers import require_test_users

pytestmark = pytest.mark.openpbs

SERVER = os.environ.get("MYSCHED_OPENPBS_SERVER", "localhost:16001")
BIN = os.environ.get("MYSCHED_OPENPBS_BIN", "/opt/pbs/bin")
USERS = ("alice", "bob", "carol")
MYSCHED = str(Path(sys.executable).parent / "mysched")
CFG = """vos = { atlas = { groups = ["atlas"]; share = 60; }; cms = { groups = ["cms"]; share = 40; }; };
queues = { atlas = { }; cms = { }; };
"""


def tool(name: str) -> str:
    path = os.path.join(BIN, name)
    if not os.path.exists(path):
        pytest.skip(f"{path} not found")
    return path


@pytest.fixture(scope="module")
def server():
    host, _, port = SERVER.rpartition(":")
    try:
        socket.create_connection((host if host != "localhost" else "127.0.0.1", int(port)), timeout=1).close()
    except OSError:
        pytest.skip(f"no OpenPBS server answers on {SERVER}")
    from mysched.backends.openpbs.backend import OpenPBSServer

    try:
        srv = OpenPBSServer(SERVER, timeout=20)
        snap = srv.snapshot()
    except MyschedError as exc:
        pytest.skip(f"OpenPBS server not usable: {exc}")
    require_test_users(USERS)
    if (snap.extra["server"].get("scheduling") or "").lower() != "false":
        pytest.skip("the server schedules itself (scheduling = True)")
    usable = [n for n in snap.nodes if n.state.usable and n.slots >= 4]
    if len(usable) < 3 or sum("bigmem" in n.properties for n in usable) != 1 or \
            not {"atlas", "cms"} <= {q.name for q in snap.queues}:
        pytest.skip("the farm is not the documented one (3+ vnodes of 4 cpus, one with bigmem, queues atlas and cms)")
    if any(j.state in (JobState.QUEUED, JobState.RUNNING) for j in snap.jobs):
        pytest.skip("the farm is not idle")
    yield srv
    srv.close()


def qsub(user: str, queue: str, resources: list[str], seconds: int = 120) -> str:
    args = " ".join(f"-l {r}" for r in resources)
    res = subprocess.run(["su", user, "-c", f"cd /tmp && echo 'sleep {seconds}' | {tool('qsub')} -q {queue} {args}"],
                         capture_output=True, text=True, cwd="/tmp")
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def qstat(jid: str) -> dict[str, str]:
    out = subprocess.run([tool("qstat"), "-xf", "-F", "json", jid], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["Jobs"][jid]


@pytest.fixture
def cleanup():
    made: list[str] = []
    yield made
    if made:
        subprocess.run([tool("qdel"), "-W", "force", *made], capture_output=True)
        time.sleep(1)


def test_run_once_starts_three_users_jobs_in_two_queues_on_the_vnodes_it_chose(server, cleanup, tmp_path):
    """The issue's done-when: jobs of alice and bob (atlas) and carol (cms) start with their
    cores on the vnodes mysched chose; a two-chunk job lands on two vnodes, a bigmem job only
    where bigmem is True, and a job no set of vnodes can serve waits never_fits."""
    two = qsub("alice", "atlas", ["select=2:ncpus=2", "place=scatter"])
    plain = qsub("bob", "atlas", ["select=1:ncpus=3"])
    big = qsub("carol", "cms", ["select=1:ncpus=1:bigmem=True"])
    never = qsub("carol", "cms", ["select=2:ncpus=1:bigmem=True", "place=scatter"])
    cleanup += [two, plain, big, never]
    cfg = tmp_path / "mysched.cfg"
    cfg.write_text(CFG)
    state = tmp_path / "s"
    res = subprocess.run([MYSCHED, "run", "--once", "-c", str(cfg), "--server",
                          f"pbs://{SERVER}", "--no-db", "--state-dir", str(state), "--metrics-address", "off"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    bigmem = {n.name for n in server.snapshot().nodes if "bigmem" in n.properties}
    a = qstat(two)
    assert a["job_state"] == "R", a
    chunks = a["exec_vnode"].split("+")
    assert len(chunks) == 2 and len({c.strip("()").split(":")[0] for c in chunks}) == 2
    assert all(c.strip("()").split(":")[1] == "ncpus=2" for c in chunks)
    b = qstat(plain)
    assert b["job_state"] == "R" and b["exec_vnode"].count("ncpus=3") == 1
    c = qstat(big)
    assert c["job_state"] == "R" and c["exec_vnode"].strip("()").split(":")[0] in bigmem
    assert qstat(never)["job_state"] == "Q"
    why = subprocess.run([MYSCHED, "why", never, "--state-dir", str(state), "--json"], capture_output=True, text=True)
    assert why.returncode == 0, why.stderr
    assert json.loads(why.stdout)["job"]["reason"] == "never_fits"
    # the server counts what mysched gave: each vnode's assigned cpus are the jobs' there
    snap = server.snapshot()
    used = {}
    for j in snap.jobs:
        for node, n in j.placement:
            used[node] = used.get(node, 0) + n
    assert sum(used.values()) == 4 + 3 + 1


def test_a_finished_job_reads_as_complete_and_an_unknown_one_as_gone(server, cleanup):
    jid = qsub("bob", "atlas", ["select=1:ncpus=1"], seconds=1)
    cleanup.append(jid)
    snap = server.snapshot()
    node = next(n.name for n in snap.nodes if n.state.usable and n.slots >= 1)
    server.run_job(jid, ((node, 1),))
    deadline = time.time() + 60
    job = server.get_job(jid)
    while job is not None and job.state != JobState.COMPLETE and time.time() < deadline:
        time.sleep(1)
        job = server.get_job(jid)
    assert job is not None and job.state == JobState.COMPLETE  # state F: the farm keeps job history
    with pytest.raises(JobGone):
        server.run_job("999999.nosuchserver", ((node, 1),))


def test_check_config_against_the_server(server, tmp_path):
    cfg = tmp_path / "c.cfg"
    cfg.write_text(CFG.replace("cms = { }; };", "cms = { }; nosuch = { }; };") +
                   'node_types = { big = { properties = ["bigmem"]; }; gpu = { properties = ["gpu"]; }; };\n')
    res = subprocess.run([MYSCHED, "check-config", "-c", str(cfg), "--server",
                          f"pbs://{SERVER}"], capture_output=True, text=True, timeout=120)
    out = res.stdout + res.stderr
    assert "queues.nosuch: pbs_server has no such queue" in out
    assert "node_types.gpu: matches none" in out and "node_types.big: matches none" not in out


def qmgr(command: str) -> None:
    res = subprocess.run([tool("qmgr"), "-c", command], capture_output=True, text=True)
    assert res.returncode == 0, (command, res.stderr)


@pytest.fixture
def atlas_limits():
    """Sets atlas's max_run_res.ncpus and max_run for one test, then unsets them again (they
    were unset on the documented farm; the fixture refuses to run where they are not)."""
    out = subprocess.run([tool("qmgr"), "-c", "list queue atlas"], capture_output=True, text=True).stdout
    if "max_run" in out:
        pytest.skip("queue atlas already has max_run limits: not touched")
    try:
        yield qmgr
    finally:
        for attr in ("max_run_res.ncpus", "max_run"):
            subprocess.run([tool("qmgr"), "-c", f"unset queue atlas {attr}"], capture_output=True)


def test_a_queues_max_run_res_ncpus_and_named_max_run_hold_the_right_users(server, cleanup, atlas_limits, tmp_path):
    """``max_run_res.ncpus = [u:PBS_GENERIC=2]`` and ``max_run = [u:bob=1]`` on atlas: alice
    starts two one-core jobs of three, bob one of two; `why` names the entry holding each."""
    atlas_limits("set queue atlas max_run_res.ncpus = [u:PBS_GENERIC=2]")
    atlas_limits("set queue atlas max_run = [u:bob=1]")
    alice = [qsub("alice", "atlas", ["select=1:ncpus=1"]) for _ in range(3)]
    bob = [qsub("bob", "atlas", ["select=1:ncpus=1"]) for _ in range(2)]
    cleanup += alice + bob
    cfg = tmp_path / "mysched.cfg"
    cfg.write_text(CFG)
    state = tmp_path / "s"
    res = subprocess.run([MYSCHED, "run", "--once", "-c", str(cfg), "--server", f"pbs://{SERVER}", "--no-db",
                          "--state-dir", str(state), "--metrics-address", "off"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    states = {j: qstat(j)["job_state"] for j in alice + bob}
    assert sum(states[j] == "R" for j in alice) == 2 and sum(states[j] == "R" for j in bob) == 1, states
    for jid, reason, entry in ((next(j for j in alice if states[j] == "Q"), "queue_resource_limit",
                                "queue atlas max_run_res.ncpus [u:PBS_GENERIC=2]"),
                               (next(j for j in bob if states[j] == "Q"), "queue_user_limit",
                                "queue atlas max_run [u:bob=1]")):
        why = subprocess.run([MYSCHED, "why", jid, "--state-dir", str(state), "--json"], capture_output=True, text=True)
        assert why.returncode == 0, why.stderr
        doc = json.loads(why.stdout)
        assert doc["job"]["reason"] == reason and doc["run_limit"].startswith(entry), doc
