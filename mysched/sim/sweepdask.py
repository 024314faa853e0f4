"""Running a sweep's cells on Dask: a local cluster of processes, an existing scheduler, or
worker jobs on the site's own TORQUE (dask-jobqueue).

Dask is an optional dependency (`pip install 'mysched[sweep]'`): it is imported inside the
functions here, so `mysched --help` and every other command never load it. The executor
only runs a function over items and hands back each item's result or exception as it
finishes; what a cell is, and what is stored, is `mysched.sim.sweep`'s business.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import shutil
import signal
from collections.abc import Callable, Iterator
from types import ModuleType, TracebackType
from typing import Any

from mysched.errors import UsageError, clip

MISSING = "the sweep runs on Dask, which is not installed: pip install 'mysched[sweep]'"

CONNECT_TIMEOUT = 10.0
"""Seconds to wait for an existing scheduler (`--scheduler`) before naming it unreachable:
distributed itself retries for 30 s, long for a typo in an address."""

NO_DASHBOARD = {"dashboard": False, "dashboard_address": "127.0.0.1:0"}
"""The scheduler's options for no dashboard: distributed still serves its HTTP routes, by
default on port 8787 of every interface and with a warning where another cluster has it;
on a port of its own on the loopback, nothing shows and nothing is open to the network."""

LEAN = {"distributed.worker.profile.enabled": False,
        "distributed.admin.system-monitor.interval": "5s",
        "distributed.worker.memory.monitor-interval": "1s",
        "distributed.admin.tick.interval": "1s"}
"""Dask's housekeeping cut to what a sweep uses. By default each worker samples its running
task's stack every 10 ms for the dashboard's profile, the scheduler and workers take system
figures twice a second for the dashboard, each nanny asks the OS for its worker's memory ten
times a second, and every process times its own event loop 50 times a second to warn that
it is unresponsive. A sweep has no dashboard, a cell's memory grows over seconds, and a cell
holds its worker's loop by design (the warning is silenced). On this 2-core machine, for the
four 12-hour cells of the issue's sweep, the main process spent 1.8-2.4 s of CPU beside the
workers with the defaults and 0.4-0.6 s with these; see docs/design/sweep.md."""

JOB_NAME = "mysched-sweep"
"""The worker jobs' name, as qstat and `mysched jobs` show them (dask-jobqueue's own is
"dask-worker", which says nothing of who submitted them or why), and their workers' names."""

CLUSTERS = ("pbs",)

REPLACE_EVERY = 10.0
"""Seconds between checks that every worker job the sweep asked for is still there. A job
that ends before the sweep does (its walltime, a qdel, a node lost) is submitted again:
without that, a sweep whose jobs all ended waited for ever with cells left. A cell whose
worker dies under it three times fails (Dask's `allowed-failures`) instead of looping."""
"""The batch systems `--cluster` starts workers on (TORQUE speaks PBS)."""


def _need(module: str) -> ModuleType:
    """`module` imported, or the one-line error that names the extra to install."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise UsageError(MISSING) from None


def _quiet() -> None:
    """distributed logs every worker's start and stop at INFO on stderr, which buries the
    sweep's own progress: warnings and errors still show."""
    for name in ("distributed", "dask_jobqueue"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _quiet_worker() -> None:
    """Run in each local worker process: a cell that raises is logged there as a multi-line
    "Compute Failed" error, and a cell holding the interpreter for seconds as an unresponsive
    event loop, while the cell's exception (or a dead worker's) already comes back to the
    caller, which names the cell. Workers on the farm keep their logs, in the job's output."""
    logging.getLogger("distributed").setLevel(logging.CRITICAL)


def _ignoring_interrupts(start: Callable[[], Any]) -> Any:
    """`start()` with SIGINT ignored, so the worker processes it spawns inherit the ignore:
    a Ctrl-C on the terminal reaches the whole process group, and workers that died of it
    each printed a traceback while the sweep was stopping them itself. A Ctrl-C during the
    start itself (a second or two) is lost. Only the main thread may change a signal's
    handler; elsewhere `start()` runs as it is."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return start()
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, before)


def torque_resources(cores: int, memory: str) -> str:
    """The `#PBS -l` line of a worker job in TORQUE's own words: dask-jobqueue's default
    (`select=1:ncpus=N:mem=M`) is PBS Pro's syntax, which TORQUE's qsub refuses."""
    from dask.utils import parse_bytes
    from dask_jobqueue.pbs import pbs_format_bytes_ceil

    return f"nodes=1:ppn={cores},mem={pbs_format_bytes_ceil(parse_bytes(memory)).lower()}"


class DaskExecutor:
    """Runs a sweep's cells on a Dask cluster (the `CellExecutor` of `mysched.sim.sweep`).

    - By default, a local cluster of `workers` processes (default: the cores), one thread
      each: a cell is pure Python, so threads would share one core.
    - `scheduler='tcp://HOST:8786'` uses a cluster someone already runs; `close()` leaves it up.
    - `cluster='pbs'` starts `cluster_jobs` worker jobs on the site's TORQUE with
      dask-jobqueue's `PBSCluster` (`cores` and `memory` per job, `queue`, `walltime`) and
      deletes them in `close()`. For that, TORQUE needs: `qsub`, `qstat` and `qdel` on the
      PATH of the machine running the sweep, which must be allowed to submit; a worker node
      running this same Python at the same path (`sys.executable`: a shared filesystem or an
      identical install) with mysched importable; and the worker nodes able to open TCP
      connections to the scheduler this process starts, on this host's default address and a
      random port (no firewall between them). The jobs wait in the queue like any other:
      a mysched daemon on the farm starts them.

    A cell's exception comes back as that cell's result; Dask never retries a cell.
    """

    def __init__(self, workers: int | None = None, scheduler: str | None = None,
                 cluster: str | None = None, cluster_jobs: int = 1, queue: str | None = None,
                 walltime: str | None = None, cores: int = 1, memory: str = "2GB",
                 timeout: float = CONNECT_TIMEOUT) -> None:
        if scheduler is not None and cluster is not None:
            raise UsageError("--scheduler and --cluster exclude each other: use one cluster")
        if cluster is not None and cluster not in CLUSTERS:
            raise UsageError(f"--cluster {clip(cluster)!r}: not a cluster mysched starts; use one of "
                             + ", ".join(CLUSTERS))
        if workers is not None and workers < 1:
            raise UsageError(f"--workers {workers}: at least one worker is needed")
        distributed = _need("distributed")
        _quiet()
        self._cluster: Any = None
        self._client: Any = None
        self._keeper: Any = None
        if scheduler is not None:
            self._client = _connect(distributed, scheduler, timeout)
        elif cluster == "pbs":
            self._cluster = _pbs_cluster(cluster_jobs, queue, walltime, cores, memory)
            self._keeper = _keep_jobs(self._cluster, cluster_jobs)
        else:
            import dask

            # Workers forked from this process start with Dask and mysched imported: spawned ones
            # import them again each (over a second apiece without a bytecode cache), which on a
            # sweep of short cells cost more than the cells saved by running two at once.
            method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
            with dask.config.set({"distributed.worker.multiprocessing-method": method, **LEAN}):
                self._cluster = _ignoring_interrupts(lambda: distributed.LocalCluster(
                    n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                    dashboard_address=None, scheduler_kwargs=NO_DASHBOARD, silence_logs=logging.WARNING))
        if self._client is None:
            try:
                self._client = distributed.Client(self._cluster, set_as_default=False)
                if cluster is None:
                    self._client.run(_quiet_worker)
            except BaseException:
                self.close()
                raise

    @property
    def client(self) -> Any:  # noqa: ANN401 - a distributed.Client, typed loosely to keep dask optional
        """The Dask client (for the tests and the progress figures)."""
        return self._client

    def run(self, fn: Callable[[Any], Any], items: list[Any]) -> Iterator[tuple[Any, Any]]:
        """Submits `fn` over `items` and yields `(item, result)`, or `(item, exception)`
        where `fn` raised, in the order they finish. Stopped early (Ctrl-C, an error in the
        caller, the generator closed), it cancels the cells not yet finished, so that
        `close()` does not wait for them."""
        if not items:
            return
        from distributed import as_completed

        futures = self._client.map(fn, items, pure=False, retries=0)
        item_of = {f.key: item for f, item in zip(futures, items)}
        finished = False
        try:
            for fut in as_completed(futures, loop=self._client.loop):
                try:
                    out = fut.result()
                except Exception as exc:  # noqa: BLE001 - the cell's own failure is its result
                    out = exc
                fut.release()
                yield item_of[fut.key], out
            finished = True
        finally:
            if not finished:
                self._client.cancel(futures)

    def close(self) -> None:
        """Closes the client, and the cluster if this executor started it (its worker
        processes end; the PBS worker jobs are deleted). Safe to call twice.

        A local worker still running a cancelled cell (after Ctrl-C) cannot be interrupted:
        distributed kills it after 4 s, with a warning per worker that says nothing the
        user did not ask for, so it is kept quiet."""
        client, cluster, keeper = self._client, self._cluster, self._keeper
        self._client = self._cluster = self._keeper = None
        if keeper is not None:  # on the cluster's loop, ahead of its close: no job submitted while closing
            cluster.loop.add_callback(keeper.stop)
        nanny = logging.getLogger("distributed.nanny")
        level = nanny.level
        nanny.setLevel(logging.ERROR)
        try:
            if client is not None:
                client.close()
        finally:
            try:
                if cluster is not None:
                    cluster.close()
            finally:
                nanny.setLevel(level)

    def __enter__(self) -> DaskExecutor:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _connect(distributed: ModuleType, address: str, timeout: float) -> Any:  # noqa: ANN401 - a Client
    """A client of the scheduler at `address`, or a one-line error naming it. The address is
    checked and its port tried first: a `Client` that fails half-built complains again with a
    traceback when the interpreter exits."""
    import socket

    from distributed.comm.addressing import get_address_host_port

    shown = f"--scheduler {clip(address)}"
    try:
        host, port = get_address_host_port(address)
    except ValueError:
        raise UsageError(f"{shown}: not a Dask scheduler address; use tcp://HOST:PORT") from None
    try:
        socket.create_connection((host, port), timeout=timeout).close()
    except OSError as exc:  # refused, no such host, timed out
        why = (exc.strerror or f"no answer within {timeout:g} s").lower()
        raise UsageError(f"{shown}: cannot reach a Dask scheduler there ({why})") from None
    try:
        return distributed.Client(address, timeout=timeout, set_as_default=False)
    except (OSError, ValueError, TypeError):
        raise UsageError(f"{shown}: no Dask scheduler answered there within {timeout:g} s") from None


def _env_name(key: str) -> str:
    """The environment variable Dask reads a configuration key from, in a worker job."""
    return "DASK_" + key.upper().replace(".", "__").replace("-", "_")


def _keep_jobs(cluster: Any, jobs: int) -> Any:  # noqa: ANN401 - a PBSCluster; a PeriodicCallback
    """Submit a worker job again where one has ended (`REPLACE_EVERY`). dask-jobqueue forgets
    a job whose worker left the scheduler (after `distributed.deploy.lost-worker-timeout`)
    but keeps it in the cluster's plan; asking for the same number of jobs again submits
    one for each forgotten."""
    from tornado.ioloop import PeriodicCallback

    keeper = PeriodicCallback(lambda: cluster.scale(jobs=jobs), REPLACE_EVERY * 1000.0)
    cluster.loop.add_callback(keeper.start)
    return keeper


def _pbs_cluster(jobs: int, queue: str | None, walltime: str | None, cores: int,
                 memory: str) -> Any:  # noqa: ANN401 - a dask_jobqueue.PBSCluster
    """Worker jobs on TORQUE, the scheduler on this host. A job of several cores runs one
    single-threaded worker process per core: a cell is pure Python, so the threads of one
    process would share one core, and a cell redirects the process's output while it runs."""
    if jobs < 1:
        raise UsageError(f"--cluster-jobs {jobs}: at least one worker job is needed")
    if cores < 1:
        raise UsageError(f"--job-cores {cores}: at least one core is needed")
    jobqueue = _need("dask_jobqueue")
    import dask

    if shutil.which("qsub") is None:
        raise UsageError("--cluster pbs submits the workers with qsub, which is not on the PATH here")
    from dask.utils import parse_bytes

    try:
        size = parse_bytes(memory)
    except ValueError:
        size = 0
    if size <= 0:
        raise UsageError(f"--job-memory {clip(memory)!r}: not a size of memory (e.g. 2GB)")
    resources = torque_resources(cores, memory)
    options: dict[str, Any] = {"cores": cores, "memory": memory, "processes": cores, "queue": queue,
                               "resource_spec": resources, "name": JOB_NAME, "job_name": JOB_NAME,
                               "scheduler_options": NO_DASHBOARD, "silence_logs": logging.WARNING,
                               "job_script_prologue": [f"export {_env_name(k)}={v}" for k, v in LEAN.items()]}
    if walltime is not None:
        options["walltime"] = walltime
    with dask.config.set(LEAN):  # the scheduler, here; the workers read theirs from the job's environment
        cluster = jobqueue.PBSCluster(**options)  # no local worker processes: Ctrl-C stays with us
    try:
        cluster.scale(jobs=jobs)
    except BaseException:
        cluster.close()
        raise
    return cluster
