"""`mysched import-maui`: a site's maui.cfg as a mysched configuration, to start from."""

from __future__ import annotations

import argparse
import sys
import time

from mysched.cli.common import non_empty
from mysched.cli.main import command
from mysched.config import validate
from mysched.config.mauiimport import import_maui
from mysched.config.parse import MAX_CONFIG_BYTES, NotText, clip_long, parse_text, read_text
from mysched.errors import UsageError
from mysched.files import read_capped


@command("import-maui", "write a mysched configuration from a MAUI maui.cfg")
def fill(p: argparse.ArgumentParser) -> None:
    """Read a MAUI 3.2 maui.cfg and write a commented mysched configuration on standard output:
    GROUPCFG/ACCOUNTCFG FSTARGET become VO and group shares, MAXJOB and MAXPROC of accounts,
    groups, users and classes max_running and max_cores, USERCFG[DEFAULT] users.default,
    CLASSCFG queues, FSDEPTH x FSINTERVAL and FSDECAY history.window and half_life,
    RESERVATIONDEPTH scheduler.reservation_depth, RMPOLLINTERVAL scheduler.interval, RMCFG's
    HOST server.url, an SRCFG of hosts for no job its next windows as downtimes. Every parameter it cannot carry over (QOSCFG, priority weights,
    NODEALLOCATIONPOLICY, ...) is named on standard error with FILE:LINE and what mysched does
    instead; lines it cannot read are warnings. A MAUI account is a VO; a group belongs to the
    VO --vo-map names, else to the account of its name, else to the VO of the configured name
    it begins with (atlasprd: atlas), else to a VO of its own (docs/import-maui.md). Check the
    result with mysched check-config -c FILE. Exit status 2 if FILE cannot be read, 1 if
    nothing in it could be carried over."""
    p.add_argument("file", type=non_empty, metavar="FILE", help="MAUI's configuration file (maui.cfg)")
    p.add_argument("--vo-map", type=non_empty, metavar="MAP",
                   help="which VO each unix group belongs to: a file of GROUP VO lines or g1=atlas,g2=cms")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    vo_map = None
    if args.vo_map:
        from mysched.sim.workloads.vomap import parse_vo_map

        vo_map = parse_vo_map(args.vo_map)
    try:
        text = read_text(args.file)
    except NotText:  # Latin-1 comments are common in old files: the names are ASCII
        text = read_capped(args.file, MAX_CONFIG_BYTES, "maui.cfg").decode("utf-8", errors="replace")
    except ValueError as exc:
        raise UsageError(f"{args.file}: {str(exc).replace('configuration file', 'maui.cfg')}") from None
    got = import_maui(text, args.file, now=time.time(), vo_map=vo_map)
    for line in got.notes:
        print(clip_long(line), file=sys.stderr)
    sys.stdout.write(got.text)
    if got.empty:
        print(f"mysched import-maui: error: {clip_long(args.file)}: nothing in it could be carried over (see above)", file=sys.stderr)
        return 1
    _, problems = validate(parse_text(got.text, "<imported configuration>"))
    for problem in problems:  # a bug of the importer: said, never hidden
        print(f"mysched import-maui: error: the configuration written does not validate: {problem}", file=sys.stderr)
    return 1 if problems else 0
