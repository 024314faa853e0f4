"""`mysched sweep`: run a grid of configuration settings x seeds x policies through the simulator."""

from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any, Callable

from mysched.backends.sim.farm import MAX_WORKLOAD_HOURS
from mysched.cli.common import (date_arg, default_config_text, duration_arg, fraction, int_between, int_up_to,
                                non_empty, output_path, positive_float, positive_int, positive_up_to)
from mysched.cli.main import command
from mysched.config.parse import read_text
from mysched.config.values import DAY, MAX_FARM_NODES, MAX_NODE_SLOTS
from mysched.core.planner import POLICIES
from mysched.errors import ConfigError, InputError, MyschedError, UsageError
from mysched.sim.workloads.synthetic import MAX_BURST_JOBS


def _kept(conv: Callable[[str], Any]) -> Callable[[str], str]:
    """Check an option as `mysched simulate` would, but keep its text: each cell passes it on."""
    def check(text: str) -> str:
        conv(text)
        return text
    return check


WORKLOAD = (  # (option, dest, argparse keywords): passed on to every cell's `mysched simulate`
    ("--trace", "trace", dict(type=non_empty, metavar="FILE", help="SWF trace, TORQUE accounting log or directory "
                                                                     "of accounting logs to replay")),
    ("--format", "format", dict(choices=("auto", "swf", "accounting"), help="trace format (default: auto)")),
    ("--vo-map", "vo_map", dict(type=non_empty, metavar="MAP", help="group to VO mapping, as for simulate")),
    ("--first", "first", dict(type=_kept(positive_int), metavar="N", help="replay only the first N jobs")),
    ("--from", "start_from", dict(type=_kept(date_arg), metavar="DATE", help="skip jobs submitted before DATE")),
    ("--duration", "duration", dict(type=_kept(positive_up_to(MAX_WORKLOAD_HOURS)), metavar="HOURS",
                                    help="synthetic workload: hours of submissions (default 48)")),
    ("--mcore-fraction", "mcore_fraction", dict(type=_kept(fraction), metavar="F",
                                                help="synthetic workload: fraction of 8-core production jobs")),
    ("--bursts", "bursts", dict(type=_kept(int_between(0, MAX_BURST_JOBS)), metavar="N",
                                help="synthetic workload: bursts of N multi-core pilots")),
    ("--burst-every", "burst_every", dict(type=_kept(positive_float), metavar="HOURS",
                                          help="synthetic workload: hours between bursts")),
    ("--nodes", "nodes", dict(type=_kept(int_up_to(MAX_FARM_NODES)), metavar="N", help="farm size in nodes")),
    ("--slots-per-node", "slots_per_node", dict(type=_kept(int_up_to(MAX_NODE_SLOTS)), metavar="S",
                                                help="slots per node")),
    ("--interval", "interval", dict(type=_kept(positive_up_to(DAY)), metavar="SECONDS", help="cycle interval")),
)
FLAGS = (("--event-driven", "event_driven", "also run a cycle soon after each submission or job end"),
         ("--split-multicore", "split_multicore", "replay each job of N cores as N single-core jobs"))


@command("sweep", "run a grid of settings x seeds x policies through the simulator")
def fill(p: argparse.ArgumentParser) -> None:
    """Tune a configuration on a workload: every combination of the --set values, for each seed
    and policy, is one `mysched simulate` run (a cell) with exactly its --json figures. Cells run
    in parallel on Dask (a local cluster of --workers processes, an existing --scheduler, or
    worker jobs on the farm with --cluster pbs); without Dask installed, on a local pool of
    processes. Finished cells are kept under --results DIR and reused by a later sweep.

    The table has one row per setting and policy over the seeds: median and worst occupancy,
    mean and p95 wait per size class (hours), bounded slowdown, share violations, drain waste;
    * marks the Pareto front (occupancy, multi-core wait, share violations). A combination the
    configuration refuses is named and left out; a value refused in every combination stops
    the sweep before anything runs."""
    p.add_argument("-c", "--config", type=non_empty, metavar="FILE",
                   help="base configuration (default: embedded example; with --trace, an empty one)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="a dotted configuration key and the values to try (drain.rate=0,6,12); repeatable: "
                        "every combination runs. Values as in the file: numbers, \"strings\" or words, true/false")
    p.add_argument("--seeds", metavar="LIST", help="synthetic workload: seeds, like 1,2,3 or 1-8 (default 1)")
    p.add_argument("--policy", dest="policies", action="append", default=[], choices=POLICIES,
                   help="also run this baseline policy beside mysched; repeatable")
    for option, dest, kw in WORKLOAD:
        p.add_argument(option, dest=dest, **kw)  # type: ignore[arg-type]
    for option, dest, help in FLAGS:
        p.add_argument(option, dest=dest, action="store_true", help=help)
    p.add_argument("--workers", type=positive_int, metavar="N",
                   help="local worker processes (default: the number of cores)")
    p.add_argument("--scheduler", type=non_empty, metavar="URL", help="an existing Dask scheduler, tcp://HOST:8786")
    p.add_argument("--cluster", choices=("pbs",), help="start Dask workers as batch jobs (dask-jobqueue PBSCluster)")
    p.add_argument("--cluster-jobs", type=positive_int, default=1, metavar="N",
                   help="with --cluster pbs: worker jobs (default 1)")
    p.add_argument("--queue", type=non_empty, help="with --cluster pbs: the queue of the worker jobs")
    p.add_argument("--walltime", type=_kept(duration_arg), help="with --cluster pbs: walltime of a worker job")
    p.add_argument("--job-cores", type=positive_int, default=1, metavar="N",
                   help="with --cluster pbs: cores per worker job (default 1)")
    p.add_argument("--job-memory", type=non_empty, default="2GB", metavar="SIZE",
                   help="with --cluster pbs: memory per worker job (default 2GB)")
    p.add_argument("--results", type=non_empty, metavar="DIR",
                   help="keep each finished cell here; a later sweep reuses them")
    p.add_argument("--json", type=non_empty, metavar="FILE", help="write the table's rows as JSON ('-' for stdout)")
    p.add_argument("--csv", type=non_empty, metavar="FILE", help="write the table's rows as CSV ('-' for stdout)")
    p.add_argument("--plot", type=non_empty, metavar="FILE.png",
                   help="occupancy against wait, one point per row, bars over seeds (needs matplotlib)")
    from mysched.cli.progress import add_progress_option

    add_progress_option(p)
    p.set_defaults(run=run)


def sim_args(args: argparse.Namespace) -> tuple[str, ...]:
    """The workload and farm options every cell's `mysched simulate` gets."""
    out: list[str] = []
    for option, dest, _ in WORKLOAD:
        v = getattr(args, dest)
        if v is not None:
            out += [option, v]
    for option, dest, _ in FLAGS:
        if getattr(args, dest):
            out.append(option)
    return tuple(out)


def base_text(args: argparse.Namespace) -> tuple[str, str]:
    """The base configuration's text and name, after the reader has checked it (its own errors)."""
    from mysched.config import config_from_text, load_config

    if args.config:
        load_config(args.config)
        try:
            return read_text(args.config), args.config
        except ValueError as exc:
            raise ConfigError(f"{args.config}: {exc}") from None
    if args.trace:
        return "", "<empty configuration>"
    text = default_config_text()
    config_from_text(text, "<embedded mysched.cfg>")
    return text, "<embedded mysched.cfg>"


def make_executor(args: argparse.Namespace) -> Any:
    """Dask where it is installed (or asked for); else a local pool of processes, said once."""
    from mysched.sim.sweep import ProcessExecutor, SerialExecutor, note

    dask = importlib.util.find_spec("distributed") is not None
    try:
        from mysched.sim.sweepdask import DaskExecutor
    except ImportError:
        DaskExecutor = None  # noqa: N806 - the class, when its module is there
    if DaskExecutor is not None and dask:
        return DaskExecutor(workers=args.workers, scheduler=args.scheduler, cluster=args.cluster,
                            cluster_jobs=args.cluster_jobs, queue=args.queue, walltime=args.walltime,
                            cores=args.job_cores, memory=args.job_memory)
    if args.scheduler or args.cluster:
        raise UsageError(f"{'--scheduler' if args.scheduler else '--cluster'} needs Dask, which is not installed: "
                         "pip install 'mysched[sweep]'")
    if args.workers == 1:
        return SerialExecutor()
    note("Dask is not installed: the cells run on a local pool of processes (pip install 'mysched[sweep]')")
    return ProcessExecutor(args.workers)


def _check(args: argparse.Namespace) -> None:
    for option in ("--queue", "--walltime"):
        if getattr(args, option[2:]) is not None and args.cluster != "pbs":
            raise UsageError(f"{option} applies to --cluster pbs")
    if args.scheduler and args.cluster:
        raise UsageError("--scheduler and --cluster cannot be combined: give one place for the workers")
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib, which is not installed: pip install 'mysched[plot]'")
    if args.plot:
        from mysched.sim.plot import plot_file

        output_path(args.plot, "--plot")
        try:
            args.plot = plot_file(args.plot)
        except InputError as exc:
            raise UsageError(f"--plot {exc}") from None
    if args.json == "-" and args.csv == "-":
        raise UsageError("--json - and --csv - cannot both take stdout")
    for option in ("--json", "--csv", "--plot"):
        output_path(getattr(args, option[2:]), option)


def run(args: argparse.Namespace) -> int:
    from mysched.cli.progress import ProgressBar, wanted
    from mysched.files import write_output
    from mysched.sim import sweep, sweepgrid, sweeptable

    _check(args)
    grid = [sweepgrid.parse_set(s) for s in args.sets]
    keys = [k for k, _ in grid]
    if len(set(keys)) != len(keys):
        raise UsageError(f"--set {next(k for k in keys if keys.count(k) > 1)} is given twice: list its values once")
    if args.trace and args.seeds:
        raise UsageError("--seeds applies to the synthetic workload, not to --trace")
    seeds: list[int | None] = [None] if args.trace else list(sweepgrid.parse_seeds(args.seeds or "1"))
    policies = ["mysched"] + [p for i, p in enumerate(args.policies) if p != "mysched" and p not in args.policies[:i]]
    text, name = base_text(args)
    doc = sweepgrid.base_document(text, name)
    cells = sweep.make_cells(doc, grid, seeds, policies, sim_args(args), args.trace or "")
    store = sweep.ResultStore(args.results)  # created only once the grid is known to be good
    report = sys.stderr if "-" in (args.json, args.csv) else sys.stdout
    for setting, why in cells.refused:
        print(f"mysched: warning: {setting}: refused by the configuration, not run: {why}", file=sys.stderr)
    if not cells.cells:
        raise UsageError("every combination of --set values is refused by the configuration")
    total = len({c.key for c in cells.cells})
    print(f"sweep: {len(cells.cells)} cells ({len(cells.cells) // len(policies) // len(seeds)} setting(s) x "
          f"{len(seeds)} seed(s) x {len(policies)} polic{'y' if len(policies) == 1 else 'ies'})", file=report,
          flush=True)
    bar = ProgressBar("sweep", wanted(args.progress))
    finished = [0]

    def done(cell: sweep.Cell, result: dict | None, exc: BaseException | None) -> None:
        finished[0] += 1
        if exc is not None and not isinstance(exc, UsageError):  # options simulate refuses: said once, below
            bar.interrupt()
            print(f"mysched: warning: failed: {sweep.reason(cell, exc)}", file=sys.stderr)
        bar.update(finished[0] / total, f"{finished[0]}/{total} cells  {bar.elapsed:6.1f} s")

    stored = sum(1 for c in {c.key: c for c in cells.cells}.values() if store.get(c) is not None)
    executor = make_executor(args) if stored < total else sweep.SerialExecutor()
    try:
        results, failed = sweep.run_sweep(cells.cells, executor, store, done)
    except KeyboardInterrupt:
        bar.interrupt()
        kept = f", kept in {args.results}" if args.results else " (nothing kept: no --results DIR)"
        print(f"mysched sweep: interrupted: {finished[0]} of {total} cells finished{kept}", file=sys.stderr)
        return 130
    if failed and len(failed) == total:
        cell, first = failed[0]
        kind = UsageError if isinstance(first, UsageError) else MyschedError
        raise kind(f"every cell failed; the first: {sweep.reason(cell, first)}")
    rows = sweeptable.summarise(cells.cells, results)
    print(f"{stored} cell(s) reused from {args.results}" if stored else "", file=report, end="\n" if stored else "")
    print(sweeptable.format_table(rows), file=report)
    refused = list(cells.refused)
    failures = [(c.name, sweep.reason(c, exc)) for c, exc in failed]
    for option, content in (("json", lambda: sweeptable.rows_json(rows, refused, failures)),
                            ("csv", lambda: sweeptable.rows_csv(rows))):
        path = getattr(args, option)
        if path == "-":
            sys.stdout.write(content())
        elif path:
            write_output(path, content().encode(), option.upper())
    if args.plot:
        sweeptable.plot_rows(rows, args.plot)
        print(f"plot written to {args.plot}", file=report)
    if failed:
        print(f"mysched: error: {len(failed)} of {total} cells failed (named above)", file=sys.stderr)
        return 1
    return 0

