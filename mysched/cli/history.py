"""`mysched history`: backfill and inspect the wall-clock history store."""

from __future__ import annotations

import argparse
import os
import sys

from mysched.cli.common import duration_arg, non_empty
from mysched.cli.main import command
from mysched.cli.progress import ProgressBar, add_progress_option, wanted
from mysched.errors import InputError, UsageError


@command("history", "import TORQUE or OpenPBS accounting logs into the history store")
def fill(p: argparse.ArgumentParser) -> None:
    """Backfill the history store from TORQUE or OpenPBS accounting logs (server_priv/accounting/YYYYMMDD).
    Import is incremental and idempotent: files already read are skipped up to where they were
    read, and a job is never counted twice, so it is safe to run while the daemon runs (whose
    fair share counts what it imports within the hour: it reads its usage window whole hourly)."""
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    imp = sub.add_parser("import", help="import accounting files or directories",
                         description="Import TORQUE or OpenPBS accounting files (or directories of YYYYMMDD files, "
                         "also YYYYMMDD.gz, .bz2 or .xz) into the history store; compressed files (by their "
                         "content, whatever their name) are read whole. Which server wrote a record is told by "
                         "the record itself (OpenPBS's cores from exec_host or exec_vnode, its R records with the "
                         "usage of the run requeued, a job array as a whole not charged): no option. Malformed or "
                         "implausible records are skipped, and a record whose CPU time, exit status, exec_host or "
                         "exec_vnode is garbled is kept for its wall-clock, each with a FILE:LINE warning. "
                         "A last line without its newline is taken for one pbs_server is still writing: it is "
                         "left for the next import, with a warning, unless the file has not changed for "
                         "ten minutes (a finished file, a copy or a hand edit), which is then read to its end -- but for an E "
                         "record there that stops before its Exit_status=, cut short by a crash: that one is skipped "
                         "with a warning. "
                         "An E record is charged only if it matches a job the farm ran: an S record, or a start "
                         "the daemon recorded, with the same job id, owner and start; the others are kept apart "
                         "as suspicious (FILE:LINE warnings; 'mysched history suspects' lists them), charged to no "
                         "one -- as are lines inside another record's account= value (qsub -A with a newline, "
                         "which TORQUE writes unescaped), however much they look like records. A file with lines "
                         "but not one accounting record is an error (exit status 1), the other files are read.")
    imp.add_argument("paths", nargs="+", metavar="PATH", help="accounting file or directory")
    imp.add_argument("-c", "--config", type=non_empty, metavar="FILE", help="configuration file (for history.database)")
    imp.add_argument("--db", type=non_empty, metavar="URL", help="history database URL (default: history.database)")
    imp.add_argument("--trust-all", action="store_true", help="charge every E record, matched or not (logs from "
                     "before mysched ran, or whose S records are lost; lines inside an account= value still are not)")
    add_progress_option(imp)
    imp.set_defaults(run=run_import)
    sus = sub.add_parser("suspects", help="list the accounting records charged to no one",
                         description="List the E records the history store holds apart, charged to no one, with "
                         "the FILE:LINE they were read from: 'unmatched' (no S record nor start of the daemon's "
                         "with the same job id, owner and start; charged if its S record is read later) and "
                         "'inside' (a line inside another record's account= value: qsub -A with a newline).")
    sus.add_argument("-c", "--config", type=non_empty, metavar="FILE", help="configuration file (for history.database)")
    sus.add_argument("--db", type=non_empty, metavar="URL", help="history database URL (default: history.database)")
    sus.add_argument("--json", action="store_true", help="JSON: database, count, records[{path,line,reason,job_id,"
                     "user,group,start,end,cores,core_hours}]")
    sus.set_defaults(run=run_suspects)
    pr = sub.add_parser("prune", help="delete records older than history.keep_cycles / keep_jobs now",
                        description="Delete from the history store the cycle log (cycles and their start attempts) "
                        "older than history.keep_cycles (default 30 days) and the finished jobs older than "
                        "history.keep_jobs (default: kept for ever), as the leading daemon does every hour. "
                        "Give the daemon's configuration (-c), whose keeps and history.window it checks; "
                        "without it only --keep-cycles is taken. Safe while the daemon runs.")
    pr.add_argument("-c", "--config", type=non_empty, metavar="FILE", help="configuration file (history.database, keep_cycles, "
                    "keep_jobs)")
    pr.add_argument("--db", type=non_empty, metavar="URL", help="history database URL (default: history.database)")
    pr.add_argument("--keep-cycles", type=duration_arg, metavar="DURATION", help="instead of history.keep_cycles "
                    "(e.g. 7d; inf keeps all)")
    pr.add_argument("--keep-jobs", type=duration_arg, metavar="DURATION", help="instead of history.keep_jobs "
                    "(at least history.window; inf keeps all; needs -c)")
    pr.set_defaults(run=run_prune)


def run_prune(args: argparse.Namespace) -> int:
    import time

    from mysched.config import load_config
    from mysched.config.values import keep_problems
    from mysched.core.settings import Config
    from mysched.history.dbchoice import database_url
    from mysched.history.retention import kept, prune
    from mysched.history.store import Store, sqlite_file

    if not args.config and (args.keep_cycles is None or args.keep_jobs is not None):
        # deleting by the built-in defaults could cut what the site keeps, or its fair-share window
        raise UsageError("give -c FILE (the daemon's configuration: its keep_cycles, keep_jobs and window), "
                         "or --keep-cycles without it (--keep-jobs needs -c)")
    cfg = load_config(args.config) if args.config else Config()
    keep_cycles = cfg.keep_cycles if args.keep_cycles is None else args.keep_cycles
    keep_jobs = cfg.keep_jobs if args.keep_jobs is None else args.keep_jobs
    for key, what in keep_problems(keep_cycles, keep_jobs, cfg.history_window):
        raise UsageError(f"--{key.replace('_', '-')} {what}")
    choice = database_url(args.db, args.config)
    path = sqlite_file(choice.url)
    if path and not os.path.exists(path):  # a mistyped path would leave an empty new database
        raise UsageError(f"{path}: no history database (from {choice.source})")
    if not choice.explicit:
        print(f"mysched: {choice.note()}", file=sys.stderr)
    store = Store(choice.url)
    now, cycles, starts, jobs = time.time(), 0, 0, 0
    while True:
        got = prune(store, now, keep_cycles, keep_jobs)
        cycles, starts, jobs = cycles + got.cycles, starts + got.starts, jobs + got.jobs
        if not got.more:
            break

    print(f"{store.masked}: deleted {cycles} cycle(s) with {starts} start record(s) (kept {kept(keep_cycles)}) "
          f"and {jobs} finished job(s) (kept {kept(keep_jobs)})")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from mysched.history.ingest import FINISHED_AFTER, ingest_accounting
    from mysched.history.dbchoice import database_url
    from mysched.history.store import Store, in_memory

    choice = database_url(args.db, args.config)
    url = choice.url
    if not url:
        raise UsageError("no database: give --db URL or history.database in the config")
    if in_memory(url):
        raise UsageError(f"{choice.source}: {choice.masked} is an in-memory database, which keeps nothing once "
                         "the import ends: give a file (sqlite:////path/history.db) or a database server")
    store = Store(url)
    bar = ProgressBar("importing", wanted(args.progress))

    def progress(done: int, total: int, lines: int) -> None:
        if total:
            bar.update(done / total, f"{done / 1e6:,.1f} of {total / 1e6:,.1f} MB, "
                                     f"{lines / max(bar.elapsed, 1e-3):,.0f} lines/s")

    def warn(msg: str) -> None:
        bar.interrupt()
        print(f"mysched: warning: {msg}", file=sys.stderr)

    rep = ingest_accounting(store, args.paths, on_problem=warn, progress=progress if bar.enabled else None,
                            finished_after=FINISHED_AFTER, compressed=True, trust_all=args.trust_all)
    if rep.empty_dirs and len(rep.empty_dirs) == len(args.paths):  # nothing to read at all: a wrong path
        raise InputError(f"{', '.join(rep.empty_dirs)}: no accounting file in it (TORQUE and OpenPBS name them "
                         "YYYYMMDD, in server_priv/accounting)")
    for d in rep.empty_dirs:
        warn(f"{d}: no accounting file in it (TORQUE and OpenPBS name them YYYYMMDD, in server_priv/accounting)")
    print(f"{rep.files} file(s)" + (f" ({rep.unread_files} more not read)" if rep.unread_files else "") +
          f", {rep.lines} new line(s): {rep.records_added} job record(s) added, "
          f"{rep.duplicates} already known, {rep.malformed} malformed line(s) skipped, "
          f"{rep.repaired} kept without a garbled field, "
          f"{rep.ignored} other record(s)" +
          (f", {rep.waiting} last line(s) left for their newline" if rep.waiting else "") +
          f", {rep.suspicious} suspicious record(s) not charged" +
          (f" (earlier ones charged now that their S record came: {rep.promoted})" if rep.promoted else "") +
          f"; {store.count_finished()} jobs in {store.masked}")
    if rep.suspicious:
        warn(f"{rep.suspicious} suspicious E record(s) not charged: 'mysched history suspects' lists them"
             + ("" if args.trust_all else " (--trust-all charges the unmatched ones of logs from before mysched)"))
    if rep.not_logs:
        for path in rep.not_logs:
            print(f"mysched: error: {path}: not a TORQUE or OpenPBS accounting log (not one record in it)", file=sys.stderr)
        return 1
    return 0


def suspect_rows(records: list[dict]) -> list[dict]:
    """The suspect records as the commands show them (JSON keys)."""
    return [{"path": r["path"], "line": r["line"], "reason": r["reason"], "job_id": r["job_id"] or None,
             "user": r["user"] or None, "group": r["grp"] or None, "start": r["start"], "end": r["end"],
             "cores": r["cores"],
             "core_hours": round((r["end"] - r["start"]) * r["cores"] / 3600.0, 3)} for r in records]


def run_suspects(args: argparse.Namespace) -> int:
    from mysched.cli.textout import dump_json, table
    from mysched.history.dbchoice import database_url
    from mysched.history.store import Store, sqlite_file

    choice = database_url(args.db, args.config)
    path = sqlite_file(choice.url)
    if path and not os.path.exists(path):
        raise UsageError(f"{path}: no history database (from {choice.source})")
    if not choice.explicit:
        print(f"mysched: {choice.note()}", file=sys.stderr)
    n, records = Store(choice.url, create=False).suspects()
    rows = suspect_rows(records)
    if args.json:
        dump_json({"database": choice.masked, "count": n, "records": rows})
        return 0
    table(["WHERE", "REASON", "JOB", "USER", "GROUP", "CORE-HOURS"],
          [[f"{r['path']}:{r['line']}", r["reason"], (r["job_id"] or "-")[:60], (r["user"] or "-")[:40],
            (r["group"] or "-")[:40],
            f"{r['core_hours']:,.1f}"] for r in rows], right=(5,))
    print(f"\n{n} suspicious record(s), charged to no one")
    return 0
