"""Hostile batch users against a running daemon on the live farm (marked `torque`; issue #34 item 6).

bob submits what TORQUE accepts but no honest user would -- an array of 401 elements with a slot
limit of 1 (`-t 0-400%1`), job names and variables of unicode, control characters and tens of
thousands of characters, odd `-W` attributes, `walltime=0` and `walltime=99999999999:00:00` --
beside plain jobs of alice and carol, while a `mysched run` daemon cycles every few seconds. carol
forges a finished job charged to alice through a newline in `qsub -A`. What must hold:

- the plain jobs start within two intervals, whatever bob queued;
- no cycle plans more of the array's sub-jobs than its slot limit lets run, and the log says
  at most one line about the array;
- the daemon's memory and cycle time stay flat over the run;
- the forged accounting record changes nobody's usage and is reported with its file and line;
- `walltime=0` and absurd walltimes never take reserved nodes, and no reservation lies further
  ahead than a year.

Needs root (jobs are submitted as alice, bob and carol), a farm with nothing else queued or
running, and about three minutes. Every job is deleted again; the array with care (deleting a
20,000-element array crashed pbs_server), and pbs_server must still answer afterwards.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mysched.backends.torque.home import find_server_home
from mysched.config import config_from_text
from mysched.core.model.batch import JobState
from mysched.daemon.cycle import Daemon
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store

from .test_torque_live import HOST, quiet_four_core_farm, server, tool  # noqa: F401 - fixture

pytestmark = pytest.mark.torque

INTERVAL = 4.0
"""The daemon's scheduler.interval here: short, so that a dozen cycles take a minute."""
CYCLES = 14
"""Cycles the main run lasts (about a minute)."""
YEAR = 366 * 86400.0
"""The walltime ceiling when the queue sets no resources_max.walltime (issue #34: one year)."""
VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'


# -- submitting as a user, with values no shell should see ----------------------------------

def submit(user: str, args: list[str], script: str = "sleep 600") -> tuple[str | None, str]:
    """`qsub ARGS` as `user` (root drops to the user's uid and group, no shell in between, so
    newlines and unicode reach qsub as they are): (job id, "") or (None, qsub's complaint)."""
    pw = pwd.getpwnam(user)
    env = {"HOME": pw.pw_dir, "USER": user, "LOGNAME": user, "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LANG": "C.UTF-8"}
    res = subprocess.run([tool("qsub"), *args], input=script, capture_output=True, text=True, cwd="/tmp",
                         user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], env=env, timeout=60)
    if res.returncode:
        return None, (res.stderr or res.stdout).strip()[:200]
    return res.stdout.strip(), ""


IFL_SUBMIT = """
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
class A(ctypes.Structure):
    pass
A._fields_ = [("next", ctypes.POINTER(A)), ("name", ctypes.c_char_p), ("resource", ctypes.c_char_p),
              ("value", ctypes.c_char_p), ("op", ctypes.c_int)]
lib.pbs_connect.argtypes = [ctypes.c_char_p]
lib.pbs_submit.argtypes = [ctypes.c_int, ctypes.POINTER(A), ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]
lib.pbs_submit.restype = ctypes.c_char_p
keep, head = [], None
for name, res, value in reversed(json.load(sys.stdin)):
    keep.append(A(head, name.encode(), res.encode() if res else None, value.encode(), 0))
    head = ctypes.pointer(keep[-1])
jid = lib.pbs_submit(lib.pbs_connect(None), head, sys.argv[2].encode(), sys.argv[3].encode(), None)
print(jid.decode() if jid else "refused: error %d" % ctypes.c_int.in_dll(lib, "pbs_errno").value)
"""
"""pbs_submit through libtorque, as any user may call it: the job name is not checked there as
qsub checks it (printable ASCII without blanks, at most 256 characters)."""


def ifl_submit(user: str, queue: str, name: str, resources: dict[str, str], script: str = "sleep 600"
               ) -> tuple[str | None, str]:
    """Submit with `pbs_submit` as `user`, named `name`: (job id, "") or (None, why not)."""
    from mysched.backends.torque.ifl import find_libtorque

    pw = pwd.getpwnam(user)
    host = socket.gethostname()
    attrs = [["Job_Name", "", name], ["Output_Path", "", f"{host}:/dev/null"], ["Error_Path", "", f"{host}:/dev/null"],
             ["Variable_List", "", f"PBS_O_HOST={host},PBS_O_WORKDIR=/tmp,PBS_O_HOME={pw.pw_dir},"
                                   f"PBS_O_LOGNAME={user},PBS_O_SHELL=/bin/bash,PBS_O_QUEUE={queue}"]]
    attrs += [["Resource_List", k, v] for k, v in resources.items()]
    fd, path = tempfile.mkstemp(prefix="hostile-", suffix=".sh", dir="/tmp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(f"#!/bin/sh\n{script}\n")
        os.chmod(path, 0o644)
        for python in dict.fromkeys((sys.executable, "/usr/bin/python3")):  # the venv may be root's only
            try:
                res = subprocess.run([python, "-c", IFL_SUBMIT, find_libtorque(), path, queue],
                                     input=json.dumps(attrs), capture_output=True, text=True, cwd="/tmp", timeout=60,
                                     user=pw.pw_uid, group=pw.pw_gid, extra_groups=[],
                                     env={"HOME": pw.pw_dir, "PATH": "/usr/bin:/bin"})
            except PermissionError as exc:
                out, why = "", f"{python}: {exc.strerror}"
                continue
            out, why = res.stdout.strip(), res.stderr.strip()
            if res.returncode == 0:
                break
    finally:
        os.unlink(path)
    if not out or out.startswith("refused"):
        return None, (out or why)[:200]
    return out, ""


def plain(user: str, queue: str, seconds: int = 600, walltime: str = "00:10:00") -> str:
    jid, err = submit(user, ["-q", queue, "-l", f"nodes=1:ppn=1,walltime={walltime}", "-o", "/dev/null",
                             "-e", "/dev/null", "-N", f"plain-{user}"], f"sleep {seconds}")
    assert jid, f"plain job of {user} refused: {err}"
    return jid


def server_answers() -> bool:
    try:
        socket.create_connection((HOST or "127.0.0.1", 15001), timeout=2).close()
    except OSError:
        return False
    return subprocess.run([tool("qstat")], capture_output=True, timeout=30).returncode == 0


def delete_jobs(ids: list[str], arrays: list[str] = ()) -> bool:
    """qdel every job, then each array alone, and wait until they are gone. pbs_server must
    still answer afterwards: deleting a huge array once crashed it (TORQUE-NOTES)."""
    plainids = [j for j in ids if j]
    if plainids:
        subprocess.run([tool("qdel"), "-W", "0", *plainids], capture_output=True, timeout=120)
    for arr in arrays:  # a slice at a time: a 401-element array deleted at once crashed pbs_server
        for first in range(0, 401, 100):
            subprocess.run([tool("qdel"), "-t", f"{first}-{first + 99}", arr], capture_output=True, timeout=300)
            time.sleep(1)
        subprocess.run([tool("qdel"), arr], capture_output=True, timeout=300)
    prefixes = [a.split("[", 1)[0] + "[" for a in arrays]
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        out = subprocess.run([tool("qstat")], capture_output=True, text=True, timeout=60)
        left = [ln for ln in out.stdout.splitlines()
                if any(ln.startswith(p) for p in prefixes) or any(ln.startswith(j.split(".")[0] + ".") for j in plainids)]
        if out.returncode == 0 and not left:
            break
        time.sleep(2)
    if plainids:
        subprocess.run([tool("qdel"), "-p", *plainids], capture_output=True, timeout=120)
    return server_answers()


# -- the daemon -----------------------------------------------------------------------------

def daemon_config(tmp: Path, interval: float = INTERVAL) -> Path:
    acct = find_server_home().accounting_dir
    cfg = tmp / "m.cfg"
    cfg.write_text(VOS + f"scheduler = {{ interval = {interval:g}; min_interval = 1; }};\n"
                   f'history = {{ accounting_dir = "{acct}"; }};\n')
    return cfg


def start_daemon(tmp: Path, cfg: Path) -> subprocess.Popen:
    return subprocess.Popen([str(Path(sys.executable).parent / "mysched"), "run", "-c", str(cfg), "--db",
                             f"sqlite:///{tmp}/h.db", "--state-dir", str(tmp / "s"), "--metrics-address", "off",
                             "--event-address", "off"], stdout=subprocess.DEVNULL, stderr=open(tmp / "d.log", "w"))


def stop_daemon(proc: subprocess.Popen) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def cycles_and_starts(db: Path) -> tuple[list[dict], list[dict]]:
    """The daemon's cycles (time, duration, result), oldest first, and its start attempts
    (cycle index, job id, result), from its history store."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cyc = [dict(zip(("id", "time", "duration", "result"), r))
               for r in con.execute("SELECT id, time, duration, result FROM cycles ORDER BY id")]
        index = {c["id"]: i for i, c in enumerate(cyc)}
        starts = [{"cycle": index[r[0]], "job_id": r[1], "result": r[2]}
                  for r in con.execute("SELECT cycle_id, job_id, result FROM starts ORDER BY id") if r[0] in index]
    finally:
        con.close()
    return cyc, starts


def require_quiet_farm(server) -> None:  # noqa: ANN001 - the TorqueServer fixture
    if os.geteuid() != 0:
        pytest.skip("submitting as the test users needs root")
    quiet_four_core_farm(server)
    if not os.path.isdir(find_server_home().accounting_dir):
        pytest.skip("pbs_server's accounting directory is not on this host")


# -- the main run: an array with a slot limit, odd requests, plain jobs, a daemon -----------

ODD = [  # (what, qsub arguments): what TORQUE 6.1's qsub takes from a user, beside -t and -A
    ("name of 256 characters of quotes and separators", ["-N", ("N;E;0.vm;user=alice%s%n$(id)`'\"\\=" * 12)[:256]]),
    ("variable of 100,000 characters", ["-v", "HOSTILE=" + "v" * 100000]),
    ("unicode variables with commas and quotes", ["-v", "A=ü,B='x y',C=\"q\",D=☃"]),
    ("-W umask", ["-W", "umask=0777"]),
    ("-W unknown attribute", ["-W", "x=hostile\u2603"]),
    ("walltime=0", ["-l", "walltime=0"]),
    ("walltime=99999999999:00:00", ["-l", "walltime=99999999999:00:00"]),
]
ODD_NAMES = [  # (what, job name) submitted with pbs_submit, which does not check names as qsub does
    ("unicode name", "ジョブ-☃-\u202eevil-\u00e9"),
    # 3,000, not 60,000: pbs_server writes the name with sprintf into a 4 KB buffer when the job
    # starts (acct_job), and a longer one crashed it (issue #34's report of a 60,000-character
    # name that did no harm predates any start of such a job)
    ("name of 3,000 characters", "n" * 3000),
    ("name with control characters", "a\tb\x1b[31mred\x07"),
]


@dataclass
class Run:
    plain: list[str] = field(default_factory=list)
    odd: dict[str, str] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)
    array: str = ""
    limit: int = 1
    cycles: list[dict] = field(default_factory=list)
    starts: list[dict] = field(default_factory=list)
    rss: list[tuple[float, float]] = field(default_factory=list)
    log: str = ""
    exit_code: int | None = None
    status: dict = field(default_factory=dict)
    running_at_end: set[str] = field(default_factory=set)
    server_survived: bool = True


@pytest.fixture(scope="module")
def hostile_run(server, tmp_path_factory) -> Run:  # noqa: F811 - the fixture imported above
    """Submit, run the daemon for CYCLES cycles, collect what it did, delete every job."""
    require_quiet_farm(server)
    tmp = tmp_path_factory.mktemp("hostile")
    run = Run()
    proc = None
    try:
        arr, err = submit("bob", ["-q", "atlas", "-t", f"0-400%{run.limit}", "-l", "nodes=1:ppn=1,walltime=00:10:00",
                                  "-o", "/dev/null", "-e", "/dev/null", "-N", "slotlimited"])
        if not arr:
            pytest.skip(f"pbs_server refused the array: {err}")
        run.array = arr
        # pbs_server creates the sub-jobs in the background; a request meanwhile (a -W depend on a job
        # that does not exist) once hung its job listing for good, restarts included
        t0 = time.monotonic()
        while time.monotonic() - t0 < 30 and len([j for j in server.snapshot().jobs
                                                  if j.id.startswith(_array_prefix(run))]) < 300:
            time.sleep(1)
        for what, args in ODD:
            base = ["-q", "atlas", "-o", "/dev/null", "-e", "/dev/null"]
            if not any(a.startswith("walltime") for a in args):
                base += ["-l", "nodes=1:ppn=1,walltime=00:10:00"]
            else:
                base += ["-l", "nodes=1:ppn=1"]
            jid, err = submit("bob", base + args)
            if jid:
                run.odd[what] = jid
            else:
                run.refused[what] = err
        for what, name in ODD_NAMES:
            jid, err = ifl_submit("bob", "atlas", name, {"nodes": "1:ppn=1", "walltime": "00:10:00"})
            if jid:
                run.odd[what] = jid
            else:
                run.refused[what] = err
        for user, queue in (("alice", "atlas"), ("alice", "atlas"), ("alice", "atlas"), ("carol", "cms"),
                            ("carol", "cms")):
            run.plain.append(plain(user, queue))
        proc = start_daemon(tmp, daemon_config(tmp))
        t_end = time.monotonic() + CYCLES * INTERVAL + 5
        while time.monotonic() < t_end and proc.poll() is None:
            mb = rss_mb(proc.pid)
            if mb is not None:
                run.rss.append((time.time(), mb))
            time.sleep(0.25)
        run.exit_code = stop_daemon(proc)
        run.log = (tmp / "d.log").read_text(errors="replace")
        run.cycles, run.starts = cycles_and_starts(tmp / "h.db")
        try:
            run.status = json.loads((tmp / "s" / "status.json").read_text())
        except (OSError, ValueError):
            run.status = {}
        run.running_at_end = {j.id for j in server.snapshot().jobs if j.state in (JobState.RUNNING, JobState.EXITING)}
    finally:
        if proc is not None:
            stop_daemon(proc)
        run.server_survived = delete_jobs(run.plain + list(run.odd.values()), [run.array] if run.array else [])
    print(f"\nhostile run: {len(run.cycles)} cycles, accepted {sorted(run.odd)}, refused {run.refused}")
    return run


def test_pbs_server_survives_the_hostile_jobs_and_their_deletion(hostile_run):
    assert hostile_run.server_survived, "pbs_server no longer answers after the hostile jobs were deleted"


def _array_prefix(run: Run) -> str:
    return run.array.split("[", 1)[0] + "["


def test_the_daemon_survives_every_odd_request(hostile_run):
    run = hostile_run
    assert run.exit_code == 0, run.log[-2000:]
    assert len(run.cycles) >= CYCLES // 2, f"only {len(run.cycles)} cycles in {CYCLES * INTERVAL:g} s"
    assert not [c for c in run.cycles if c["result"] in ("error", "crash")], run.cycles
    assert "Traceback" not in run.log and "mysched bug" not in run.log, run.log[-3000:]


def test_plain_jobs_of_other_users_start_within_two_intervals(hostile_run):
    run = hostile_run
    assert run.cycles, "the daemon recorded no cycle"
    t0 = run.cycles[0]["time"]
    late = {}
    for jid in run.plain:
        ok = [s for s in run.starts if s["job_id"] == jid and s["result"] == "ok"]
        when = run.cycles[ok[0]["cycle"]]["time"] - t0 if ok else None
        if when is None or when > 2 * INTERVAL * 1.25:  # the third cycle, give or take a late tick
            late[jid] = "never started" if when is None else f"started {when:.1f} s after the first cycle"
    assert not late, f"plain jobs of alice and carol waited behind bob's requests: {late} " \
                     f"({len(set(run.plain) - run.running_at_end)} of {len(run.plain)} not running at the end)"


def test_no_cycle_plans_more_of_an_array_than_its_slot_limit(hostile_run):
    run = hostile_run
    prefix = _array_prefix(run)
    running = 0
    over = []
    for i in range(len(run.cycles)):
        tried = [s for s in run.starts if s["cycle"] == i and s["job_id"].startswith(prefix)]
        if len(tried) > max(0, run.limit - running):
            over.append(f"cycle {i}: {len(tried)} sub-jobs tried ({sum(s['result'] != 'ok' for s in tried)} refused)"
                        f" with {running} running, slot limit {run.limit}")
        running += sum(s["result"] == "ok" for s in tried)
    assert not over, "; ".join(over[:5]) + (f" ... ({len(over)} cycles)" if len(over) > 5 else "")


def test_sub_jobs_held_by_the_slot_limit_wait_with_their_own_reason(hostile_run):
    run = hostile_run
    doc = run.status
    assert doc.get("jobs"), "no status file"
    cols = doc["job_columns"]
    rows = [dict(zip(cols, r)) for r in doc["jobs"]]
    waiting = [r for r in rows if r["id"].startswith(_array_prefix(run)) and r["state"] == "Q"]
    assert waiting, "no queued sub-job of the array in the status file"
    reasons = {}
    for r in waiting:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    assert set(reasons) == {"array_slot_limit"}, reasons


def test_the_log_says_at_most_one_line_about_the_array(hostile_run):
    run = hostile_run
    lines = [ln for ln in run.log.splitlines() if _array_prefix(run) in ln]
    assert len(lines) <= 1, f"{len(lines)} log lines about {run.array}, e.g. {lines[:3]}"


def test_memory_and_cycle_time_stay_flat(hostile_run):
    run = hostile_run
    assert len(run.cycles) >= 9 and run.rss, (len(run.cycles), len(run.rss))
    # after the warm-up (the first cycles ingest the accounting logs and import the planner)
    warm = run.cycles[3]["time"]
    rss = [mb for t, mb in run.rss if t >= warm]
    third = max(1, len(rss) // 3)
    early, late = max(rss[:third]), max(rss[-third:])
    assert late <= early * 1.10 + 4.0, f"RSS grew from {early:.1f} MB to {late:.1f} MB over {len(run.cycles)} cycles"
    dur = [c["duration"] for c in run.cycles[3:]]
    third = max(1, len(dur) // 3)
    med = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731 - two uses, here
    d_early, d_late = med(dur[:third]), med(dur[-third:])
    assert d_late <= 1.5 * d_early + 0.2, f"cycle time grew from {d_early:.3f} s to {d_late:.3f} s (median)"
    print(f"RSS {early:.1f} -> {late:.1f} MB, cycle median {d_early:.3f} -> {d_late:.3f} s, "
          f"longest {max(dur):.3f} s, {len(run.cycles)} cycles")


# -- a forged accounting record, carried by a newline in qsub -A ----------------------------

def _stamp(t: float) -> str:
    return time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(t))


def _usage_by(db: str, by: str, cfg: Path) -> dict[str, float]:
    res = subprocess.run([str(Path(sys.executable).parent / "mysched"), "usage", "--json", "--by", by, "--db", db,
                          "-c", str(cfg)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return {r["key"]: r["wall_hours"] for r in json.loads(res.stdout)["rows"]}


def _accounting_lines(acct: str):
    """(FILE:LINE, text) of every line of the accounting files."""
    for name in sorted(os.listdir(acct)):
        path = os.path.join(acct, name)
        if os.path.isfile(path):
            with open(path, errors="replace") as f:
                for n, line in enumerate(f, 1):
                    yield f"{path}:{n}", line


def test_forged_accounting_records_change_nobodys_usage(server, tmp_path):  # noqa: F811
    """Two ways to charge alice. carol's account string (`qsub -A`) carries a newline, a whole E
    record of 40 h on 16 cores charged to alice, and another newline: TORQUE writes it
    unescaped into the S and E records of her job, where it stands as a line of its own. bob
    names his job (through pbs_submit, which takes blanks in a name) 'hostile user=alice': the
    words land among his own job's attributes, after its real user=. The daemon starts both
    jobs and ingests the log."""
    require_quiet_farm(server)
    acct = find_server_home().accounting_dir
    cfg = daemon_config(tmp_path, interval=3)
    base = f"sqlite:///{tmp_path}/before.db"
    ingest_accounting(Store(base), [acct])
    before = {by: _usage_by(base, by, cfg) for by in ("user", "vo")}
    fake = f"{900000 + int(time.time()) % 99999}.{socket.gethostname()}"
    end = time.time() - 60
    start = end - 40 * 3600
    forged = (f"{_stamp(end)};E;{fake};user=alice group=atlas jobname=forged queue=atlas ctime={start - 10:.0f} "
              f"qtime={start - 10:.0f} etime={start - 10:.0f} start={start:.0f} owner=alice@localhost "
              "exec_host=node01/0-3+node02/0-3+node03/0-3+node04/0-3 Resource_List.nodes=4:ppn=4 "
              "Resource_List.walltime=48:00:00 session=4242 total_execution_slots=16 unique_node_count=4 "
              f"end={end:.0f} Exit_status=0 resources_used.cput=576000 resources_used.mem=0kb "
              "resources_used.vmem=0kb resources_used.walltime=40:00:00")
    carrier, err = submit("carol", ["-q", "cms", "-l", "nodes=1:ppn=1,walltime=00:01:00", "-o", "/dev/null",
                                    "-e", "/dev/null", "-A", f"hep\n{forged}\n"], "sleep 2")
    if not carrier:
        pytest.skip(f"pbs_server refused the account string: {err}")
    carriers = [carrier]
    proc = None
    ended = None
    try:
        named, err = ifl_submit("bob", "atlas", "hostile user=alice", {"nodes": "1:ppn=1", "walltime": "00:01:00"},
                                "sleep 2")
        carriers += [named] if named else []
        proc = start_daemon(tmp_path, cfg)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and proc.poll() is None:
            text = "".join(line for _, line in _accounting_lines(acct))
            if ended is None and all(f";E;{j};" in text for j in carriers):
                ended = time.monotonic()
            if ended is not None and time.monotonic() - ended > 3 * 3:
                break  # three cycles after their E records: the daemon has read them
            time.sleep(1)
    finally:
        code = stop_daemon(proc) if proc is not None else None
        delete_jobs(carriers)
    log = (tmp_path / "d.log").read_text(errors="replace")
    assert code == 0 and ended is not None, f"{carriers} never ended (exit {code}): {log[-2000:]}"
    forged_at = [loc for loc, line in _accounting_lines(acct) if line.startswith(forged[:60])]
    assert forged_at, "the forged record never stood on a line of its own (TORQUE escaped the newline?)"
    db = f"sqlite:///{tmp_path}/h.db"
    stored = {r.id: r for r in Store(db).finished_since(0)}
    after = {by: _usage_by(db, by, cfg) for by in ("user", "vo")}
    changed = []
    for by in ("user", "vo"):
        for key in sorted(set(before[by]) | set(after[by])):
            was, now = before[by].get(key, 0.0), after[by].get(key, 0.0)
            # the carriers ran two seconds each: their owners may be charged for them, nothing more
            slack = 0.01 if key in ("carol", "bob", "cms", "atlas") else 0.0
            if not was - 1e-9 <= now <= was + slack + 1e-9:
                changed.append(f"{by} {key} {was:.3f} h -> {now:.3f} h")
    wrong = [f"{j} as {stored[j].user}'s" for j in (fake, named) if j in stored and stored[j].user == "alice"]
    print(f"\nforged record at {forged_at}; bob's job {named or 'refused: ' + err}; stored: "
          f"{[(j, stored[j].user, stored[j].cores) for j in (fake, carrier, named) if j in stored]}")
    problems = []
    if changed or wrong:
        problems.append(f"stored {', '.join(wrong) or 'nothing of alice'}; usage {', '.join(changed)}")
    # FILE:LINE as the daemon spells the directory (/var/spool/torque may be a link): the file's name and line
    if not any(re.search("/" + re.escape(os.path.basename(loc)) + r"(?!\d)", log) for loc in forged_at):
        problems.append(f"the forged record ({', '.join(forged_at)}) is not reported with its file and line in the log")
    assert not problems, "; ".join(problems)


# -- walltime=0 and walltime=99999999999:00:00 against a reservation ------------------------

def _qsub_or_skip(user: str, queue: str, resources: str, what: str, script: str = "sleep 600") -> str:
    jid, err = submit(user, ["-q", queue, "-l", resources, "-o", "/dev/null", "-e", "/dev/null"], script)
    if not jid:
        pytest.skip(f"pbs_server refused {what}: {err}")
    return jid


@pytest.fixture(scope="module")
def reservation_cycles(server, tmp_path_factory):  # noqa: F811
    """Two plans of carol's 16-core job, which waits for the whole farm and is promised it:
    (1) behind alice's 10-minute job, with bob's walltime=0 and walltime=99999999999:00:00 jobs
    queued after it; (2) behind bob's running walltime=99999999999:00:00 job."""
    require_quiet_farm(server)
    tmp = tmp_path_factory.mktemp("resv")
    cfg = config_from_text(VOS)
    ids: list[str] = []
    out: dict = {}
    try:
        d = Daemon(cfg, server, state_dir=str(tmp / "1"))
        ids.append(_qsub_or_skip("alice", "atlas", "nodes=1:ppn=1,walltime=00:10:00", "a plain job"))
        assert d.cycle().started == 1
        ids.append(wide := _qsub_or_skip("carol", "cms", "nodes=4:ppn=4,walltime=00:10:00", "a 16-core job", "sleep 60"))
        ids.append(zero := _qsub_or_skip("bob", "atlas", "nodes=1:ppn=1,walltime=0", "walltime=0"))
        ids.append(absurd := _qsub_or_skip("bob", "atlas", "nodes=1:ppn=1,walltime=99999999999:00:00",
                                           "walltime=99999999999:00:00"))
        plan = d.cycle().plan
        states = {j.id: j.state for j in server.snapshot().jobs if j.id in ids}
        out["behind_plain"] = {"plan": plan, "wide": wide, "zero": zero, "absurd": absurd, "states": states}
        delete_jobs(ids)
        ids.clear()

        d = Daemon(cfg, server, state_dir=str(tmp / "2"))
        ids.append(absurd := _qsub_or_skip("bob", "atlas", "nodes=1:ppn=1,walltime=99999999999:00:00",
                                           "walltime=99999999999:00:00"))
        assert d.cycle().started == 1
        ids.append(wide := _qsub_or_skip("carol", "cms", "nodes=4:ppn=4,walltime=00:10:00", "a 16-core job", "sleep 60"))
        now = time.time()
        out["behind_absurd"] = {"plan": d.cycle().plan, "now": now, "wide": wide}
    finally:
        delete_jobs(ids)
    return out


def test_walltime_zero_and_absurd_walltimes_never_take_reserved_nodes(reservation_cycles):
    r = reservation_cycles["behind_plain"]
    plan = r["plan"]
    assert r["wide"] in plan.reservations, f"the 16-core job got no reservation: {plan.waits.get(r['wide'])}"
    took = [f"{what} ({r[what]}: {plan.waits.get(r[what]) or 'started'})" for what in ("zero", "absurd")
            if r["states"].get(r[what]) != JobState.QUEUED]
    assert not took, f"started on nodes reserved for {r['wide']} ({', '.join(plan.reservations[r['wide']].nodes)}): " \
                     + "; ".join(took)


def test_no_reservation_lies_beyond_the_walltime_ceiling(reservation_cycles):
    r = reservation_cycles["behind_absurd"]
    far = {jid: res.start - r["now"] for jid, res in r["plan"].reservations.items() if res.start - r["now"] > YEAR}
    assert not far, "reservations behind the walltime=99999999999:00:00 job, beyond a year: " + ", ".join(
        f"{jid} in {s:.0f} s" for jid, s in far.items())


# -- a user runs the scheduler --------------------------------------------------------------

def test_a_users_own_run_once_says_it_is_not_a_manager_and_fails(server):  # noqa: F811
    """bob runs `mysched run --once` against the farm: every pbs_runjob is refused (15007)."""
    require_quiet_farm(server)
    # not pytest's tmp_path: it lies under /tmp/pytest-of-root (0700), closed to bob
    tmp_path = Path(tempfile.mkdtemp(prefix="mysched-bob-", dir="/tmp"))
    os.chmod(tmp_path, 0o777)
    cfg = tmp_path / "m.cfg"
    cfg.write_text(VOS)
    cfg.chmod(0o644)
    jid = plain("bob", "atlas", seconds=60)
    try:
        script = Path(sys.executable).parent / "mysched"
        pw = pwd.getpwnam("bob")
        if _denied(script, pw):
            pytest.skip(f"bob may not run {script} (a venv under a directory closed to him)")
        res = subprocess.run([str(script), "run", "--once", "-c", str(cfg), "--db", f"sqlite:///{tmp_path}/h.db",
                              "--state-dir", str(tmp_path / "s"), "--metrics-address", "off", "--event-address",
                              "off"], capture_output=True, text=True, cwd="/tmp", timeout=120, user=pw.pw_uid,
                             group=pw.pw_gid, extra_groups=[],
                             env={**os.environ, "HOME": pw.pw_dir, "USER": "bob", "LOGNAME": "bob"})
        state = {j.id: j.state for j in server.snapshot().jobs}.get(jid)
    finally:
        delete_jobs([jid])
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert state == JobState.QUEUED, f"bob's run started {jid}"
    said = [ln for ln in res.stderr.splitlines() if re.search(r"manager|operator", ln, re.I)]
    assert res.returncode != 0 and len(said) == 1, \
        f"exit {res.returncode}, lines naming manager/operator: {said}; stderr: {res.stderr.strip()[-600:]}"


def _denied(path: Path, pw: pwd.struct_passwd) -> bool:
    """Whether `pw`'s user may not execute `path` (and the interpreter its #! line names)."""
    probe = subprocess.run(["/bin/sh", "-c", 'exec "$0" --version', str(path)], capture_output=True, cwd="/tmp",
                           user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], timeout=60)
    return probe.returncode != 0
