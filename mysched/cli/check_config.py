"""`mysched check-config`: validate a configuration file before deploying it."""

from __future__ import annotations

import argparse

from mysched.cli.main import command
from mysched.config import load_config


@command("check-config", "validate a configuration file")
def fill(p: argparse.ArgumentParser) -> None:
    """Validate a configuration file: unknown keys, wrong types, shares over 100 %, a group in
    two VOs, unknown queues, duplicate keys. Every problem is printed as FILE:LINE: key: message;
    the exit status is 1 if there is any."""
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file to check")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    total = sum(v.share for v in cfg.vos.values()) * 100
    print(f"{args.config}: OK — {len(cfg.vos)} VOs ({total:g} % of slots guaranteed), "
          f"{len(cfg.group_vo)} groups mapped, {len(cfg.queues)} queues, {len(cfg.node_types)} node types, "
          f"{len(cfg.packing)} packing classes; default VO '{cfg.default_vo}'"
          + ("" if cfg.default_vo in cfg.vos else " (not declared under vos: no share, no limits)"))
    return 0
