"""`mysched sweep --cluster pbs` on the live farm (marked `torque`; issue #31): the sweep, run
by a user as on a site, submits its two Dask worker jobs to TORQUE; they wait in the queue
(the farm's server starts nothing itself) until a mysched daemon on the same farm starts them;
the sweep's cells run on them; and the worker jobs are gone once the sweep ends.

qsub refuses root, so the sweep runs as alice. Her Python must run this checkout with the
`sweep` extra, at a path she may execute (worker jobs start `sys.executable` on the node):
MYSCHED_SWEEP_PYTHON names one where this venv is closed to her (a venv under /root)."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mysched.core.model.batch import JobState

from ..conftest import REPO
from .test_torque_live import (all_running, cleanup, quiet_four_core_farm, server, start_daemon,  # noqa: F401 - fixtures
                               tool)

pytestmark = pytest.mark.torque

USER = "alice"
PYTHON = os.environ.get("MYSCHED_SWEEP_PYTHON") or sys.executable
JOB_NAME = "mysched-sweep"


def _as_user(command: str, cwd: str, **kw) -> subprocess.Popen:  # noqa: ANN003 - Popen's own keywords
    """`command` through `su USER` in `cwd`, with TORQUE's clients on the PATH, in a session of
    its own (the test ends the sweep's whole process group should it hang)."""
    path = f"{os.path.dirname(tool('qsub'))}:/usr/bin:/bin"
    return subprocess.Popen(["su", USER, "-c", f"cd {cwd} && PATH={path} {command}"], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


@pytest.fixture
def sweep_dir():
    """A directory the user may write (the sweep's results, the worker jobs' output files)."""
    try:
        pw = pwd.getpwnam(USER)
    except KeyError:
        pytest.skip(f"test user {USER} missing")
    path = tempfile.mkdtemp(prefix="mysched-sweep-live-")
    os.chown(path, pw.pw_uid, pw.pw_gid)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _usable_python(cwd: str) -> None:
    """Skip unless the user's Python imports this checkout's mysched and dask-jobqueue."""
    probe = _as_user(f"{PYTHON} -c 'import dask_jobqueue, mysched; print(mysched.__file__)'", cwd)
    out, err = probe.communicate(timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"{USER} may not run {PYTHON} with mysched and dask-jobqueue (set MYSCHED_SWEEP_PYTHON): "
                    f"{err.strip()[-200:]}")
    if not Path(out.strip()).resolve().is_relative_to(REPO):
        pytest.skip(f"{PYTHON} imports another mysched ({out.strip()}), not this checkout's")


def _workers(server) -> list:  # noqa: ANN001 - the TorqueServer fixture
    return [j for j in server.snapshot().jobs if j.name == JOB_NAME and j.user == USER]


def test_sweep_workers_are_torque_jobs_a_mysched_daemon_starts_and_they_are_gone_afterwards(
        server, cleanup, sweep_dir, tmp_path):  # noqa: F811
    pytest.importorskip("dask_jobqueue")
    quiet_four_core_farm(server)
    _usable_python(sweep_dir)
    mysched = Path(PYTHON).parent / "mysched"
    sweep = _as_user(f"{mysched} sweep --cluster pbs --cluster-jobs 2 --queue atlas --walltime 00:15:00 "
                     "--job-memory 1GB --set drain.rate=0,12 --seeds 1,2 --duration 2 --mcore-fraction 0.5 "
                     "--results results --json rows.json --progress never", sweep_dir)
    daemon = None
    try:
        t0 = time.time()
        while len(workers := _workers(server)) < 2 and time.time() - t0 < 120 and sweep.poll() is None:
            time.sleep(0.5)
        ids = [j.id for j in workers]
        cleanup.extend(ids)
        if len(ids) < 2 and sweep.poll() is not None:
            pytest.fail(f"the sweep ended (exit {sweep.returncode}) before its workers were seen: "
                        f"{sweep.stderr.read()[-2000:]}")
        assert len(ids) == 2, f"{len(ids)} worker job(s) named {JOB_NAME} seen in 120 s"
        listed = subprocess.run([tool("qstat")], capture_output=True, text=True, timeout=60).stdout
        assert all(jid.split(".")[0] in listed for jid in ids), listed
        assert {(j.queue, j.cores, j.walltime) for j in workers} == {("atlas", 1, 900.0)}
        time.sleep(3)  # the server starts nothing by itself: they wait for a scheduler
        assert {j.state for j in _workers(server)} == {JobState.QUEUED}

        cfg = tmp_path / "m.cfg"
        cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 50; }; };\n'
                       'scheduler = { interval = 3; min_interval = 1; };\n')
        daemon = start_daemon(cfg, tmp_path)
        assert all_running(server, ids, timeout=60), (tmp_path / "d.log").read_text()[-2000:]
        placed = {j.id: j.placement for j in server.snapshot().jobs if j.id in ids}

        out, err = sweep.communicate(timeout=600)
        assert sweep.returncode == 0, err[-2000:]
        gone_by = time.time() + 30  # qdel'd by the sweep's close(); the moms take a moment to end them
        while any(j.id in ids for j in server.snapshot().jobs) and time.time() < gone_by:
            time.sleep(0.5)
        left = [j for j in server.snapshot().jobs if j.id in ids]
        listed_after = subprocess.run([tool("qstat")], capture_output=True, text=True, timeout=60).stdout
    finally:
        if sweep.poll() is None:
            os.killpg(sweep.pid, signal.SIGTERM)
            sweep.wait(30)
        if daemon is not None:
            daemon.terminate()
            daemon.wait(30)
    assert all(placed.values()), placed
    assert not left, f"worker jobs still there after the sweep: {left}"
    assert not any(jid.split(".")[0] in listed_after for jid in ids), listed_after
    rows = json.loads((Path(sweep_dir) / "rows.json").read_text())["rows"]
    assert sorted(r["setting"] for r in rows) == ["drain.rate=0", "drain.rate=12"], rows
    assert all(r["seeds"] == [1, 2] for r in rows), rows
    assert len(list((Path(sweep_dir) / "results").glob("*.json"))) == 4
    assert "4 cells" in out and "failed" not in err, (out, err)
    # the worker jobs ran the cells: their output (a Dask worker's log) says so
    logs = "".join(p.read_text(errors="replace") for p in Path(sweep_dir).glob(f"{JOB_NAME}.e*"))
    assert logs.count("Registered to:") == 2, logs[-2000:]
