"""A sweep's cells on Dask (issue #31): every result comes back as it finishes, a failing
cell comes back as its exception, Ctrl-C and close() leave nothing running, and a cluster
that cannot be had is a one-line error."""

from __future__ import annotations

import _thread
import os
import signal
import socket
import stat
import sys
import threading
import time
from pathlib import Path

import pytest

from mysched.errors import UsageError
from mysched.sim.sweepdask import DaskExecutor

pytest.importorskip("distributed")


def square(x: float) -> float:
    """A cell: top-level so that the worker processes can import it."""
    if x == 3:
        raise ValueError("cell 3 refused")
    time.sleep(x if isinstance(x, float) else 0)
    return x * x


def scheduler_tasks(dask_scheduler) -> int:  # noqa: ANN001 - distributed.Scheduler
    return len(dask_scheduler.tasks)


@pytest.fixture(scope="module")
def local():
    """One local cluster of two worker processes for the module: starting one takes seconds."""
    executor = DaskExecutor(workers=2)
    yield executor
    executor.close()


def worker_pids(executor: DaskExecutor) -> set[int]:
    return set(executor.client.run(os.getpid).values())


def worker_addresses(executor: DaskExecutor) -> set[str]:
    """The workers as the scheduler knows them (asking the workers would wait on the dead)."""
    return set(executor.client.scheduler_info()["workers"])


def gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def housekeeping(dask_worker) -> tuple[bool, float]:  # noqa: ANN001 - distributed.Worker
    """Whether the worker samples its task's stack, and how often it times its event loop (ms)."""
    return "profile" in dask_worker.periodic_callbacks, dask_worker.periodic_callbacks["tick"].callback_time


def test_local_workers_do_not_sample_the_cells_for_a_dashboard_there_is_not(local):
    """Each worker sampled its running cell's stack every 10 ms and timed its loop every 20 ms,
    for a dashboard and a warning the sweep does not show."""
    assert set(local.client.run(housekeeping).values()) == {(False, 1000.0)}


def test_every_cell_comes_back_with_its_result(local):
    assert dict(local.run(square, [0, 1, 2, 4, 5, 6, 7])) == {0: 0, 1: 1, 2: 4, 4: 16, 5: 25, 6: 36, 7: 49}
    assert len(worker_pids(local)) == 2


def test_a_failing_cell_comes_back_as_its_exception_and_the_others_complete(local):
    out = dict(local.run(square, [1, 2, 3, 4]))
    assert isinstance(out.pop(3), ValueError) and out == {1: 1, 2: 4, 4: 16}
    assert str(dict(local.run(square, [3]))[3]) == "cell 3 refused"


def test_cells_come_back_as_they_finish_not_in_the_order_given(local):
    assert [item for item, _ in local.run(square, [1.0, 0.0])] == [0.0, 1.0]


def test_no_cells_no_work(local):
    assert list(local.run(square, [])) == []


def test_local_workers_leave_ctrl_c_to_the_sweep(local):
    """A Ctrl-C on the terminal reaches the worker processes too: they must not die of it
    (each printed a traceback) but wait for the sweep to stop them."""
    pids, before = worker_pids(local), worker_addresses(local)
    for pid in pids:
        os.kill(pid, signal.SIGINT)
    assert not any(gone(pid, within=1.0) for pid in pids)
    assert worker_addresses(local) == before
    assert dict(local.run(square, [2, 4])) == {2: 4, 4: 16}


def test_an_existing_scheduler_is_used_and_left_running(local):
    with DaskExecutor(scheduler=local.client.scheduler.address) as remote:
        assert dict(remote.run(square, [2, 5])) == {2: 4, 5: 25}
    assert dict(local.run(square, [6])) == {6: 36}


@pytest.fixture
def ctrl_c_interrupts():
    """SIGINT raises KeyboardInterrupt, as in a fresh interpreter, whatever handler an
    earlier test left behind (the daemon's start-up one exits instead)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def test_ctrl_c_cancels_the_cells_left_and_close_ends_the_workers(ctrl_c_interrupts):
    executor = DaskExecutor(workers=2)
    pids = worker_pids(executor)
    got = []
    with pytest.raises(KeyboardInterrupt):
        for item, result in executor.run(square, [0, 5.0, 5.0, 5.0, 5.0, 5.0]):
            got.append((item, result))
            threading.Timer(0.3, _thread.interrupt_main).start()  # what Ctrl-C does to the main thread
    assert got == [(0, 0)]
    assert executor.client.run_on_scheduler(scheduler_tasks) == 0
    client = executor.client
    executor.close()
    executor.close()
    assert client.status == "closed"
    assert len(pids) == 2 and all(gone(pid) for pid in pids)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_one_line_naming_it():
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(UsageError) as err:
        DaskExecutor(scheduler=address, timeout=2)
    assert address in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(UsageError, match="not a Dask scheduler address; use tcp://HOST:PORT"):
        DaskExecutor(scheduler="nonsense://" + "x" * 5000)


def test_missing_dask_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(UsageError, match=r"pip install 'mysched\[sweep\]'"):
        DaskExecutor(workers=1)


def test_missing_dask_jobqueue_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask_jobqueue", None)
    with pytest.raises(UsageError, match=r"pip install 'mysched\[sweep\]'"):
        DaskExecutor(cluster="pbs")


def test_a_pbs_cluster_needs_qsub(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match="qsub, which is not on the PATH"):
        DaskExecutor(cluster="pbs")


def test_unknown_cluster_kind_is_refused():
    with pytest.raises(UsageError, match="--cluster 'slurm': not a cluster mysched starts; use one of pbs"):
        DaskExecutor(cluster="slurm")


FAKE_QSUB = """#!/bin/sh
cp "$1" {dir}/job$$.sh
echo "qsub $$" >> {log}
echo "$$.fake-server"
"""
FAKE_QDEL = """#!/bin/sh
echo "qdel $@" >> {log}
"""


def fake_torque(monkeypatch, tmp_path: Path, qsub: str, qdel: str) -> Path:  # noqa: ANN001 - the fixture
    """A qsub and a qdel from these scripts first on the PATH; the log they write."""
    log = tmp_path / "log"
    for name, text in (("qsub", qsub), ("qdel", qdel)):
        path = tmp_path / name
        path.write_text(text.format(log=log, dir=tmp_path))
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    return log


def test_pbs_worker_jobs_ask_torque_for_nodes_and_are_deleted_at_the_end(monkeypatch, tmp_path):
    """Without a live TORQUE: a qsub and a qdel that only log what they are asked. The jobs
    speak TORQUE's resource syntax (dask-jobqueue's default `select=` is PBS Pro's)."""
    log = fake_torque(monkeypatch, tmp_path, FAKE_QSUB, FAKE_QDEL)
    executor = DaskExecutor(cluster="pbs", cluster_jobs=2, cores=2, memory="4GB", queue="atlas",
                            walltime="01:00:00")
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (not log.exists() or log.read_text().count("qsub") < 2):
            time.sleep(0.1)
        jobs = [line.split()[1] for line in log.read_text().splitlines()]
        assert len(set(jobs)) == 2
    finally:
        executor.close()
    script = Path(tmp_path / f"job{jobs[0]}.sh").read_text()
    assert "#PBS -l nodes=1:ppn=2,mem=3815mb" in script and "select=" not in script
    assert "#PBS -N mysched-sweep" in script  # what qstat shows: not dask-jobqueue's "dask-worker"
    assert "export DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False" in script  # the workers' housekeeping cut
    assert "#PBS -q atlas" in script and "#PBS -l walltime=01:00:00" in script
    assert sys.executable in script
    assert "--nthreads 1 " in script and "--nworkers 2 " in script  # a process per core: cells are pure Python
    deleted = " ".join(line for line in log.read_text().splitlines() if line.startswith("qdel"))  # by number
    assert sorted(deleted.split()) == sorted(["qdel"] * len(jobs) + jobs)


SWEEP_SCRIPT = """
import signal, sys, time
from mysched.sim.sweepdask import DaskExecutor

def cell(x):
    if x < 0:
        raise ValueError("refused")
    time.sleep(x)
    return x

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as on a terminal
    ex = DaskExecutor(workers=2)
    try:
        print(sorted(type(r).__name__ for _, r in ex.run(cell, [-1, 0])), flush=True)
        open(sys.argv[1], "w").close()
        for item, _ in ex.run(cell, [30, 30, 30]):
            print("finished", item, flush=True)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
    finally:
        ex.close()
        print("closed", flush=True)
"""


def test_ctrl_c_on_a_terminal_stops_the_sweep_without_a_word_from_the_workers(tmp_path):
    """The whole process group gets the SIGINT, as from a terminal: the sweep stops and
    closes, and neither the interrupt nor the failed cell before it prints a traceback."""
    import subprocess

    script, running = tmp_path / "sweep.py", tmp_path / "running"
    script.write_text(SWEEP_SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(running)], start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not running.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert out.split("\n") == ["['ValueError', 'int']", "interrupted", "closed", ""], err
    assert err == ""
    assert proc.returncode == 0


@pytest.mark.parametrize("memory", ["lots", "0", "-1GB"])
def test_pbs_worker_memory_must_be_a_size(memory, monkeypatch, tmp_path):
    (tmp_path / "qsub").write_text("#!/bin/sh\nexit 1\n")
    (tmp_path / "qsub").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(UsageError, match=f"--job-memory '{memory}': not a size of memory"):
        DaskExecutor(cluster="pbs", memory=memory)


RUNNING_QSUB = """#!/bin/sh
cp "$1" {dir}/job$$.sh
setsid sh {dir}/job$$.sh > {dir}/job$$.out 2>&1 < /dev/null &
echo "qsub $!" >> {log}
echo "$!.fake-server"
"""
RUNNING_QDEL = """#!/bin/sh
echo "qdel $@" >> {log}
for job in "$@"; do kill -KILL -- -"${{job%%.*}}" 2>/dev/null; done
exit 0
"""


def test_a_worker_job_that_ends_before_the_sweep_is_submitted_again(monkeypatch, tmp_path):
    """A qsub that runs its job at once, and a qdel that kills it: one worker job is killed
    (as by its walltime). Another is submitted in its place and the cells complete; before,
    the sweep waited for ever once all its jobs had ended."""
    import dask

    from mysched.sim import sweepdask

    log = fake_torque(monkeypatch, tmp_path, RUNNING_QSUB, RUNNING_QDEL)
    monkeypatch.setattr(sweepdask, "REPLACE_EVERY", 0.5)

    def submitted() -> list[str]:
        return [line.split()[1] for line in log.read_text().splitlines() if line.startswith("qsub")] \
            if log.exists() else []

    def wait_for(what, seconds: float = 60.0) -> bool:  # noqa: ANN001 - a condition
        deadline = time.monotonic() + seconds
        while not what() and time.monotonic() < deadline:
            time.sleep(0.2)
        return bool(what())

    with dask.config.set({"distributed.deploy.lost-worker-timeout": "0.5s"}):
        executor = DaskExecutor(cluster="pbs", cluster_jobs=2)
        try:
            assert wait_for(lambda: len(worker_addresses(executor)) == 2), (tmp_path / "log").read_text()
            first = submitted()
            os.killpg(int(first[0]), signal.SIGKILL)  # its walltime is up
            assert wait_for(lambda: len(submitted()) == 3), f"no job submitted in place of {first[0]}"
            assert wait_for(lambda: len(worker_addresses(executor)) == 2)
            assert dict(executor.run(square, [2, 4, 5])) == {2: 4, 4: 16, 5: 25}
        finally:
            executor.close()
    for job in submitted()[1:]:  # deleted at the end, and not replaced then
        assert wait_for(lambda: not os.path.exists(f"/proc/{job}"), 20), f"job {job} still running"
    assert len(submitted()) == 3
