"""`mysched simulate`: try a configuration on a simulated farm before deploying it."""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
from dataclasses import replace

from mysched.cli.main import command
import math

from mysched.core.settings import PACKING_POLICIES, Config, PackingClass, auto_vos

from mysched.errors import InputError, UsageError
from mysched.files import write_output
from mysched.core.model.batch import TraceJob
from mysched.core.planner import POLICIES
from mysched.sim.report import format_comparison, format_result
from mysched.sim.workloads.synthetic import MAX_BURST_JOBS, burst_count
from mysched.backends.sim.farm import MAX_FARM_SLOTS, MAX_WORKLOAD_HOURS, make_nodes
from mysched.sim.replay import simulate
from mysched.sim.result import SimOptions, SimResult
from mysched.cli.common import (config_or_default, date_arg, duration_arg, fraction, int_between, int_up_to,
                                non_empty, output_path, positive_float, positive_int, positive_up_to, whole_number)
from mysched.config.values import DAY, MAX_FARM_NODES, MAX_NODE_SLOTS, check_name_format


@command("simulate", "replay a workload through the planner on a simulated farm")
def fill(p: argparse.ArgumentParser) -> None:
    """Replay a workload through the same planner the daemon runs, on a simulated farm with a
    virtual clock, and report occupancy, share violations, diversity, waits and planner time.

    Without --trace the embedded synthetic workload (DESY-HH-like queues atlas, cms, lhcb, desy,
    operations) runs on the farm of the configuration (default: the embedded example config).
    With --trace an SWF trace (Parallel Workloads Archive, gzip or plain) or a TORQUE
    accounting log is replayed; each SWF group becomes a VO with an equal share unless the
    configuration or --vo-map maps groups to VOs."""
    p.add_argument("-c", "--config", type=non_empty, metavar="FILE",
                   help="configuration file (default: embedded example)")
    p.add_argument("--trace", type=non_empty, metavar="FILE",
                   help="SWF trace, TORQUE accounting log or directory of accounting logs to replay")
    p.add_argument("--format", choices=("auto", "swf", "accounting"), default="auto",
                   help="trace format (default: guess from the content; a directory is read as accounting logs)")
    p.add_argument("--vo-map", type=non_empty, metavar="MAP",
                   help="group to VO mapping: 'g2=atlas,g6=cms' or a file of 'GROUP VO' lines")
    p.add_argument("--first", type=positive_int, metavar="N", help="replay only the first N jobs")
    p.add_argument("--from", dest="start_from", type=date_arg, metavar="DATE",
                   help="skip jobs submitted before DATE (YYYY-MM-DD[THH:MM], UTC)")
    p.add_argument("--nodes", type=int_up_to(MAX_FARM_NODES), metavar="N",
                   help="farm size in nodes (default: config farm)")
    p.add_argument("--slots-per-node", type=int_up_to(MAX_NODE_SLOTS), metavar="S",
                   help="slots per node (default: config farm)")
    p.add_argument("--policy", choices=POLICIES,
                   help="scheduling policy: mysched, or a baseline: fifo (first fit, like pbs_sched), "
                        "least-loaded (FIFO onto the least-loaded node) or easy (FIFO with EASY backfill: "
                        "reservations as scheduler.reservation_depth, default 1)")
    p.add_argument("--compare", action="store_true", help="run every policy and print them side by side")
    p.add_argument("--interval", type=positive_up_to(DAY, " s (a day)"), metavar="SECONDS",
                   help="cycle interval, at most a day (default: scheduler.interval of the config)")
    p.add_argument("--event-driven", action="store_true",
                   help="also run a cycle soon after each submission or job end (as with pbs_server "
                        "contacting the scheduler), rate-limited by scheduler.min_interval")
    p.add_argument("--duration", type=positive_up_to(MAX_WORKLOAD_HOURS, " hours (a year)"), metavar="HOURS",
                   help=f"synthetic workload: hours of submissions, at most {MAX_WORKLOAD_HOURS} "
                   "(default 48)")
    p.add_argument("--seed", type=whole_number, help="synthetic workload: random seed (default 1)")
    p.add_argument("--mcore-fraction", type=fraction, metavar="F",
                   help="synthetic workload: fraction of atlas/cms production jobs asking for 8 cores "
                        "(fewer if the nodes are smaller) on one node (default 0: single-core, as at DESY-HH)")
    p.add_argument("--split-multicore", action="store_true",
                   help="replay each job of N cores as N single-core jobs (same submit time, run time and "
                        "owner): the same work without its shape, to set beside a run of the workload as is")
    p.add_argument("--bursts", type=int_between(0, MAX_BURST_JOBS), metavar="N",
                   help="synthetic workload: bursts of N multi-core pilots (group atlasmc, 8 cores and 16 GB "
                        f"each), the class a package guarantee (pools) is for; at most {MAX_BURST_JOBS} "
                        "pilots in all (default 0: none)")
    p.add_argument("--burst-every", type=positive_float, metavar="HOURS",
                   help="synthetic workload: hours between bursts, the first after half that (default 12)")
    p.add_argument("--pack", type=non_empty, metavar="NAME", help="pack the jobs of VO or group NAME as a job class "
                   "(adds to the configuration's packing classes)")
    p.add_argument("--pack-policy", choices=PACKING_POLICIES,
                   help="packing policy for --pack (default exclusive)")
    p.add_argument("--load-series", type=non_empty, metavar="FILE",
                   help="replay recorded load-source values (CSV time,source,value; time in seconds from the "
                        "start or a UTC date) through the configuration's load_rules; the report shows the "
                        "slot-hours each VO was held back")
    p.add_argument("--pack-ttl", type=duration_arg, metavar="DURATION",
                   help="with --pack and --pack-policy exclusive: release a node that got no new class job for "
                        "this long (default inf)")
    p.add_argument("--compare-packing", action="store_true",
                   help="run the packed class under none, relaxed and exclusive side by side")
    p.add_argument("--farm-frames", type=non_empty, metavar="DIR",
                   help="write the farm as a picture (one cell per slot) every --frame-every planner cycles")
    p.add_argument("--frame-every", type=positive_int, metavar="K",
                   help="cycles between farm pictures (default 60)")
    p.add_argument("--farm-movie", type=non_empty, metavar="FILE.gif",
                   help="string the farm pictures together as a GIF (.gif is added to a name without extension; "
                        ".png, .webp, .tiff, .pdf also animate)")
    p.add_argument("--json", type=non_empty, metavar="FILE", help="write the figures as JSON ('-' for stdout)")
    p.add_argument("--plot", type=non_empty, metavar="FILE.png",
                   help="plot running/queued jobs per VO and occupancy, up to the last submission, downtimes and "
                        "closed nodes shaded (.png is added to a name without extension; .pdf, .svg and other "
                        "matplotlib formats by their extension)")
    p.add_argument("--plot-tail", action="store_true",
                   help="with --plot: draw the whole replay, with the drain-out after the last submission")
    from mysched.cli.progress import add_progress_option

    add_progress_option(p)
    p.set_defaults(run=run)


def _with_pack(config: Config, name: str, policy: str, ttl: float) -> Config:
    if name not in config.vos and name not in config.group_vo:
        known = sorted(set(config.vos) | set(config.group_vo))
        raise UsageError(f"--pack {name}: no such VO or group (known: {', '.join(known[:20])}"
                         f"{', ...' if len(known) > 20 else ''})")
    pc = PackingClass(name=f"pack-{name}", policy=policy, vos=frozenset({name} & set(config.vos)),
                      groups=frozenset({name} & set(config.group_vo)),
                      ttl=ttl if policy == "exclusive" else math.inf)
    return replace(config, packing=(pc,) + tuple(p for p in config.packing if p.name != pc.name))


def _load_trace(args: argparse.Namespace, vo_map: dict[str, str] | None) -> tuple[list[TraceJob], dict]:
    from mysched.sim.workloads import load_trace

    return load_trace(args.trace, fmt=_trace_format(args), first=args.first, start_from=args.start_from,
                      vo_map=vo_map, warn=warn)


def _trace_format(args: argparse.Namespace) -> str:
    """--format, with a directory read as accounting logs (as TORQUE keeps them) under "auto"."""
    return "accounting" if args.format == "auto" and os.path.isdir(args.trace) else args.format


SYNTHETIC_DEFAULTS = {"duration": 48.0, "seed": 1, "mcore_fraction": 0.0, "bursts": 0, "burst_every": 12.0}
"""The synthetic workload's options (None on the command line: not given) and their defaults."""


def _why_empty(args: argparse.Namespace, vo_map: dict[str, str] | None) -> str:
    """Why a trace gave no job: a --from after its last submission names that submission."""
    if args.start_from is not None:
        import datetime as dt

        from mysched.sim.workloads import load_trace

        every, _ = load_trace(args.trace, fmt=_trace_format(args), vo_map=vo_map)
        if every:
            day = lambda t: dt.datetime.fromtimestamp(t, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")  # noqa: E731
            return (f"--from {day(args.start_from)} is after its last submission, {day(every[-1].job.submit_time)}; "
                    f"its jobs were submitted from {day(every[0].job.submit_time)}")
    return "after --first/--from and skipping cancelled jobs"


def prepare(args: argparse.Namespace) -> tuple[list[TraceJob], Config, tuple, str]:
    """Workload, configuration and farm from the arguments (shared with `bench`)."""
    vo_map = None
    info: dict = {}
    if args.vo_map:
        from mysched.sim.workloads.vomap import parse_vo_map

        vo_map = parse_vo_map(args.vo_map)
    if args.trace:
        given = [f"--{k.replace('_', '-')}" for k in SYNTHETIC_DEFAULTS if getattr(args, k, None) is not None]
        if given:  # a trace has its own jobs: these would change nothing, silently
            raise UsageError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} to the synthetic workload, "
                             "not to --trace (--split-multicore replays a trace's multi-core jobs as single-core ones)")
        config = config_or_default(args.config) if args.config else Config()
        workload, info = _load_trace(args, vo_map)
        if not workload:
            raise InputError(f"{args.trace}: no job to replay ({_why_empty(args, vo_map)})")
        groups = {tj.job.group: (tj.job.vo or tj.job.group) for tj in workload}
        if vo_map and set(vo_map) - set(groups):
            warn(f"--vo-map: no job replayed has group {_names(set(vo_map) - set(groups))} (the jobs' groups: "
                 f"{_names(groups)}): that mapping changes nothing")
        config = _auto_vos_noted(config, groups, warn)
        bare = sorted({tj.job.vo for tj in workload if tj.job.vo} - set(config.vos))
        if bare:  # --vo-map moved groups the configuration maps into VOs it does not declare
            warn(f"--vo-map names VO(s) {_names(bare)} that {config.source} does not declare, for groups it maps to "
                 "other VOs: their jobs replay there with no share and no limits")
        label = f"trace {args.trace}"
    else:
        if args.first or args.start_from is not None:
            raise UsageError("--first and --from apply to --trace")
        if args.burst_every is not None and not args.bursts:
            raise UsageError("--burst-every applies to --bursts N (default 0: no bursts)")
        for key, default in SYNTHETIC_DEFAULTS.items():
            if getattr(args, key) is None:
                setattr(args, key, default)
        config = config_or_default(args.config)
        from mysched.sim.workloads.synthetic import SyntheticSpec, generate

        n, s = _farm_size(args, config, info)
        pilots = burst_count(args.duration, args.burst_every, args.bursts)
        if pilots > MAX_BURST_JOBS:
            raise UsageError(f"--bursts {args.bursts} every --burst-every {args.burst_every:g} h for --duration "
                             f"{args.duration:g} h is {pilots:.3g} pilots, more than {MAX_BURST_JOBS}")
        workload = generate(SyntheticSpec(duration=args.duration * 3600.0, slots=n * s, seed=args.seed,
                                          mcore_fraction=args.mcore_fraction, mcore_cores=min(8, s),
                                          burst_jobs=args.bursts, burst_every=args.burst_every * 3600.0))
        if vo_map:
            workload = [tj._replace(job=tj.job._replace(vo=vo_map.get(tj.job.group, tj.job.vo)))
                        for tj in workload]
            config = auto_vos(config, {g: v for g, v in vo_map.items()})
        label = f"synthetic DESY-HH-like workload, {args.duration:g} h, seed {args.seed}"
    if args.split_multicore:
        from mysched.sim.workloads import split_multicore

        workload = split_multicore(workload)
        label += ", multi-core jobs split into single-core ones"
    n, s = _farm_size(args, config, info)
    try:  # the config checked its own farm size; --nodes or a trace may ask for more names
        check_name_format(config.farm.name_format, n)
    except ValueError as exc:
        raise UsageError(f"farm.name_format of {config.source}: {exc}") from None
    nodes = make_nodes(n, s, config.farm.name_format)
    return workload, config, nodes, label


def warn(msg: str) -> None:
    print(f"mysched: warning: {msg}", file=sys.stderr)


def _names(items, most: int = 8) -> str:
    items = sorted(items)
    return ", ".join(items[:most]) + (f", ... ({len(items)} in all)" if len(items) > most else "")


def _auto_vos_noted(config: Config, groups: dict[str, str], note) -> Config:  # noqa: ANN001 - note(str)
    """The trace's VOs declared (`auto_vos`), saying where the configuration does not apply: a
    configuration whose VOs own no job of the trace replays with shares and limits that touch
    nothing, and groups it does not know become VOs of their own with what its shares leave."""
    out = auto_vos(config, groups)
    new = sorted(set(out.vos) - set(config.vos))
    if not config.vos or not new:
        return out
    src = config.source
    owned = {out.group_vo.get(g, v) for g, v in groups.items()} & set(config.vos)
    if not owned:
        note(f"no job of the trace belongs to a VO of {src} (the trace's groups: {_names(groups)}; its VOs: "
             f"{_names(config.vos)}): its shares and limits apply to none of them. Name the groups' VOs with "
             "--vo-map GROUP=VO")
    each = out.vos[new[0]].share  # auto_vos splits what is left equally
    how = (f"with no share ({src}'s shares add up to 100 %)" if each <= 0 else
           f"{each:.1%} share each (what {src}'s shares leave, split equally)")
    note(f"{len(new)} VO(s) of the trace are not in {src} and replay as VOs of their own, {how}: {_names(new)} "
         f"(the daemon would count unknown groups to default_vo '{config.default_vo}'; --vo-map GROUP=VO "
         "names their VOs)")
    return out


def _farm_size(args: argparse.Namespace, config: Config, info: dict) -> tuple[int, int]:
    """Nodes and slots per node: the options, else the trace's header, else the configuration's
    farm; within the caps of sim://, which a trace header or two capped options could pass."""
    picked = []
    for option, given, header, configured in (("--nodes", args.nodes, info.get("nodes"), config.farm.nodes),
                                              ("--slots-per-node", args.slots_per_node, info.get("slots_per_node"),
                                               config.farm.slots_per_node)):
        if given:
            picked.append((given, option))
        elif header:
            picked.append((header, f"header MaxNodes/MaxProcs of {args.trace}"))
        else:
            picked.append((configured, f"farm of {config.source}"))
    (n, n_from), (s, s_from) = picked
    if n > MAX_FARM_NODES or s > MAX_NODE_SLOTS or n * s > MAX_FARM_SLOTS:
        src = n_from if n_from == s_from else f"nodes from {n_from}, slots from {s_from}"
        raise UsageError(f"a farm of {n} nodes x {s} slots ({src}) is too large to simulate: at "
                         f"most {MAX_FARM_NODES} nodes, {MAX_NODE_SLOTS} slots per node and {MAX_FARM_SLOTS} "
                         "slots in all (--nodes, --slots-per-node)")
    return n, s


def _check_outputs(args: argparse.Namespace) -> None:
    """Fail before a long simulation, not after it, if an output cannot be written; settle the
    file names the plot and the movie really get, so that the report says where they are."""
    for option, value in (("--plot", args.plot), ("--farm-frames", args.farm_frames)):
        if value and importlib.util.find_spec("matplotlib") is None:
            raise UsageError(f"{option} needs matplotlib, which is not installed: pip install 'mysched[plot]'")
    if args.farm_movie and not args.farm_frames:
        raise UsageError("--farm-movie needs --farm-frames DIR (the pictures it is made of)")
    if args.plot or args.farm_movie:
        from mysched.sim.plot import movie_file, plot_file

        for option, attr, settle in (("--plot", "plot", plot_file), ("--farm-movie", "farm_movie", movie_file)):
            if getattr(args, attr):
                output_path(getattr(args, attr), option)  # a directory, before a name is made of it
                try:
                    setattr(args, attr, settle(getattr(args, attr)))
                except InputError as exc:
                    raise UsageError(f"{option} {exc}") from None
    output_path(args.json, "--json")
    output_path(args.plot, "--plot")
    output_path(args.farm_movie, "--farm-movie")
    if args.farm_frames:
        d = os.path.abspath(args.farm_frames)
        if os.path.exists(d) and not os.path.isdir(d):
            raise UsageError(f"--farm-frames {args.farm_frames}: not a directory")
        while not os.path.exists(d):  # the pictures' directory is created, with its parents
            d = os.path.dirname(d)
        if not os.path.isdir(d) or not os.access(d, os.W_OK | os.X_OK):
            raise UsageError(f"--farm-frames {args.farm_frames}: cannot create or write in {d}")


def _pack_ttl(args: argparse.Namespace) -> float:
    """--pack-ttl, refused where it would be ignored (as the config refuses ttl for a class that is not exclusive)."""
    if args.pack_ttl is None:
        return math.inf
    if not args.pack:
        raise UsageError("--pack-ttl applies to the class of --pack NAME")
    if args.pack_policy != "exclusive" and not args.compare_packing:
        raise UsageError(f"--pack-ttl applies only to --pack-policy exclusive, not {args.pack_policy}")
    return args.pack_ttl


def _settle_options(args: argparse.Namespace) -> None:
    """Refuse an option that the others given would make change nothing, then fill in the
    defaults: --policy with --compare (every policy runs), --pack-policy without --pack,
    --frame-every without --farm-frames."""
    for option, given, needed, what in (("--policy", args.policy, not args.compare, "--compare runs every policy"),
                                        ("--pack-policy", args.pack_policy, args.pack, "it applies to --pack NAME"),
                                        ("--frame-every", args.frame_every, args.farm_frames,
                                         "it applies to --farm-frames DIR")):
        if given is not None and not needed:
            raise UsageError(f"{option} {given} would change nothing: {what}")
    if args.plot_tail and not args.plot:
        raise UsageError("--plot-tail would change nothing: it applies to --plot FILE")
    args.policy = args.policy or "mysched"
    args.pack_policy = args.pack_policy or "exclusive"
    args.frame_every = args.frame_every or 60


def run(args: argparse.Namespace) -> int:
    _settle_options(args)
    _check_outputs(args)
    pack_ttl = _pack_ttl(args)
    workload, config, nodes, label = prepare(args)
    interval = args.interval or config.interval
    if args.compare and args.compare_packing:
        raise UsageError("--compare and --compare-packing cannot be combined; run them one after the other")
    if args.compare_packing and not (args.pack or config.packing):
        raise UsageError("--compare-packing needs a packed class: --pack NAME or packing classes in the config")
    runs: list[tuple[str, Config, str]] = []
    if args.compare_packing:
        for pol in PACKING_POLICIES:
            if args.pack:
                c = _with_pack(config, args.pack, pol, pack_ttl)
            else:
                c = replace(config, packing=tuple(replace(pc, policy=pol) for pc in config.packing))
            runs.append((pol, c, "mysched"))
    else:
        if args.pack:
            config = _with_pack(config, args.pack, args.pack_policy, pack_ttl)
        for policy in (list(POLICIES) if args.compare else [args.policy]):
            runs.append((policy, config, policy))
    from mysched.sim.workloadfit import idle_settings

    for note in idle_settings(runs[0][1], workload):
        warn(note)
    from mysched.cli.progress import ProgressBar, wanted

    show = wanted(args.progress)
    report = sys.stderr if args.json == "-" else sys.stdout  # --json -: stdout holds the JSON alone
    print(f"simulating {label}: {len(workload)} jobs on {len(nodes)} nodes x {nodes[0].slots} slots, "
          f"{'event-driven, ' if args.event_driven else ''}{interval:g} s cycles", flush=True, file=report)
    results: list[SimResult] = []
    series = None
    if args.load_series:
        from mysched.sim.loadseries import read_load_series

        if not config.load_rules:
            raise UsageError(f"--load-series: the configuration ({config.source}) has no load_rules to apply")
        series = read_load_series(args.load_series, config)
    for label_, cfg_, policy in runs:
        opts = SimOptions(policy=policy, interval=interval, event_driven=args.event_driven,
                          min_interval=min(cfg_.min_interval, interval),
                          frame_every=args.frame_every if args.farm_frames else 0, load_series=series)
        bar = ProgressBar(f"{label_:<14}", show)
        r = simulate(workload, cfg_, nodes, opts, progress=lambda f, bar=bar: bar.update(f, f"{bar.elapsed:6.1f} s"))
        r.policy = label_
        results.append(r)
        if args.farm_frames:
            from mysched.sim.plot import write_frames

            movie = args.farm_movie
            if movie and len(runs) > 1:
                root, ext = os.path.splitext(movie)
                movie = f"{root}-{label_}{ext or '.gif'}"
            paths = write_frames(r, args.farm_frames, [pc.name for pc in cfg_.packing], movie)
            print(f"{len(paths)} farm picture(s) written to {args.farm_frames}" + (f", movie {movie}" if movie else ""),
                  file=report)
    if len(results) > 1:
        print(format_comparison(results), file=report)
        if args.compare_packing:
            ff = {r.policy: r.packing.get("farm", {}).get("fill_factor") for r in results}
            if ff.get("relaxed") is not None and ff.get("exclusive") is not None:
                diff = round((ff["exclusive"] - ff["relaxed"]) * 100, 2) + 0.0  # + 0.0: no "-0.00"
                print(f"farm fill factor of exclusive against relaxed: {ff['exclusive']:.2%} against "
                      f"{ff['relaxed']:.2%}, " + (f"{'a loss' if diff < 0 else 'a gain'} of {abs(diff):.2f} "
                                                   "percentage points" if diff else "no difference"), file=report)
    else:
        print(format_result(results[0]), file=report)
    if args.json:
        doc = results[0].to_json() if len(results) == 1 else {r.policy: r.to_json() for r in results}
        text = json.dumps(doc, indent=2, sort_keys=True)
        if args.json == "-":
            print(text)
        else:
            write_output(args.json, (text + "\n").encode(), "JSON")
    if args.plot:
        from mysched.sim.plot import plot_packing, plot_result

        if args.compare_packing:
            plot_packing(results, args.plot, args.plot_tail)
        else:
            plot_result(results, args.plot, args.plot_tail)
        print(f"plot written to {args.plot}", file=report)
    return 0
