"""`mysched usage`: wall-clock and CPU hours from the history store."""

from __future__ import annotations

import argparse
import os
import sys

from mysched.cli.common import date_arg, non_empty
from mysched.cli.main import command
from mysched.cli.textout import dump_json, table
from mysched.errors import StatusError, UsageError


SHOWN_SUSPECTS = 5
"""Suspicious records `usage` names (all are counted; `mysched history suspects` lists them)."""


# -- usage ------------------------------------------------------------------------------------

@command("usage", "wall-clock and CPU hours from the history store (accounting summary)")
def fill_usage(p: argparse.ArgumentParser) -> None:
    """Accounting summary from the history store, per VO, group, user or queue: the jobs that
    ended in the interval, and the wall-clock core-hours and CPU hours of every job's run inside
    it, so that consecutive intervals add up to the whole (as APEL counts)."""
    p.add_argument("-c", "--config", type=non_empty, metavar="FILE", help="configuration (history.database, group -> VO; without "
                   "it a job counts to the VO recorded with it, else to its unix group)")
    p.add_argument("--db", type=non_empty, metavar="URL", help="history database URL (default: history.database of -c FILE, else "
                   "history.db in --state-dir or $MYSCHED_STATE_DIR when it exists, else "
                   "/var/lib/mysched/history.db; which one is said on stderr)")
    p.add_argument("--state-dir", type=non_empty, metavar="DIR", help="the daemon's state directory (default: $MYSCHED_STATE_DIR)")
    p.add_argument("--since", type=date_arg, metavar="DATE", help="from DATE (YYYY-MM-DD[THH:MM], UTC)")
    p.add_argument("--until", type=date_arg, metavar="DATE", help="until DATE, not included (the next interval's --since)")
    p.add_argument("--by", choices=("vo", "group", "user", "queue"), default="vo",
                   help="one row per VO (the default), group, user or queue")
    p.add_argument("--json", action="store_true", help="JSON: database, since, until, by, rows[{key,jobs,"
                   "wall_hours,cpu_hours}], total{jobs,wall_hours,cpu_hours}, suspicious{count,records[]}: E records "
                   "charged to no one, as 'mysched history suspects' lists them")
    p.add_argument("--noheader", action="store_true", help="no header line and no total (for scripts)")
    p.set_defaults(run=run_usage)


def run_usage(args: argparse.Namespace) -> int:
    # here, not at the top: every command's module is imported to build the parser, and
    # SQLAlchemy costs 20 MB and a tenth of a second that `jobs` or `bench` should not pay
    from mysched.cli.common import config_or_default
    from mysched.history.dbchoice import database_url
    from mysched.history.store import Store, sqlite_file

    # Without -c there is no site mapping: the embedded example's would put every group it does
    # not know (a site's own VOs) into "others" without a word. Each group then stands for itself.
    if args.since is not None and args.until is not None and args.until <= args.since:
        raise UsageError("--until must be later than --since")
    vo_of = config_or_default(args.config).vo_of if args.config else None
    choice = database_url(args.db, args.config, args.state_dir or os.environ.get("MYSCHED_STATE_DIR"))
    if not choice.explicit:
        print(f"mysched: {choice.note()}", file=sys.stderr)
    url = choice.url
    path = sqlite_file(url)  # the file itself, without '?mode=ro' or a 'file:' URI's prefix
    if path:
        if not os.path.exists(path):
            raise StatusError(f"{path}: no history database (the daemon creates it; or give --db URL)")
        if not os.access(path, os.R_OK):
            raise StatusError(f"{path}: permission denied (ask your admin for read access, or use "
                              "'mysched shares' which needs none)")
    store = Store(url, create=False)
    unmapped: set[str] = set()  # without -c: the groups of jobs with no VO recorded, each a row of its own
    out = store.usage_summary(args.since, args.until, by=args.by,
                              vo_of=vo_of or (lambda g: unmapped.add(g)))  # None: the group is the key
    n_suspect, suspect = store.suspects(limit=SHOWN_SUSPECTS)
    head = args.by.upper()
    if args.by == "vo" and vo_of is None and out:
        head, said = _keyed_by(unmapped, {r["key"] for r in out})
        if not args.json:
            print(f"mysched: no -c FILE: {said} (-c FILE maps groups to VOs as the daemon does)", file=sys.stderr)
    total = {"jobs": sum(r["jobs"] for r in out), "wall_hours": round(sum(r["wall_hours"] for r in out), 3),
             "cpu_hours": round(sum(r["cpu_hours"] for r in out), 3)}
    if args.json:
        from mysched.cli.history import suspect_rows

        dump_json({"database": choice.masked, "since": args.since, "until": args.until, "by": args.by,
                   "rows": [{**r, "wall_hours": round(r["wall_hours"], 3), "cpu_hours": round(r["cpu_hours"], 3)}
                            for r in out], "total": total,
                   "suspicious": {"count": n_suspect, "records": suspect_rows(suspect)}})
        return 0
    if n_suspect:
        where = ", ".join(f"{r['path']}:{r['line']}" for r in suspect)
        print(f"mysched: {n_suspect} suspicious accounting record(s) charged to no one, not counted here: {where}"
              f"{', ...' if n_suspect > len(suspect) else ''} ('mysched history suspects' lists them)",
              file=sys.stderr)
    cpu = any(r["cpu_hours"] > 0 for r in out)  # none: jobs of a simulated farm, or logs without cput
    table([head, "JOBS", "WALL(h)"] + (["CPU(h)", "EFFICIENCY"] if cpu else []),
          [[r["key"], r["jobs"], f"{r['wall_hours']:.1f}"]
           + ([f"{r['cpu_hours']:.1f}", f"{r['cpu_hours'] / r['wall_hours']:.0%}" if r["wall_hours"] else "-"]
              if cpu else []) for r in out],
          noheader=args.noheader, right=(1, 2, 3, 4) if cpu else (1, 2))
    if not args.noheader:
        print(f"\ntotal: {total['jobs']} jobs, {total['wall_hours']:.1f} wall-clock core-hours, "
              + (f"{total['cpu_hours']:.1f} CPU hours" if cpu else "no CPU time recorded (CPU and efficiency "
                 "columns left out)"))
    return 0


def _keyed_by(unmapped: set[str], keys: set[str]) -> tuple[str, str]:
    """The table's first column and what its rows are, without a configuration: a job counts to
    the VO recorded with it (jobs the daemon ran against sim://), else to its unix group (jobs
    read from accounting logs, which name no VO)."""
    if not unmapped:
        return "VO", "one row per VO recorded with the jobs"
    if unmapped >= keys:
        return "GROUP", "one row per unix group (no job has a VO recorded)"
    return "VO/GROUP", (f"one row per VO recorded with the jobs, and per unix group for the jobs without one "
                        f"({len(unmapped & keys)} group(s))")
