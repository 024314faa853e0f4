"""The configuration's schema: every section and setting, with the converter and default the
validator uses and one line of what it means.

`mysched.config.validate` (and the section builders it calls) take each group's allowed keys,
each value's converter and each default from here, so docs/configuration.md, which
`tools/gen_docs.py` writes from this table, cannot name a setting, type or default the
validator does not have. What the settings say together (a share sum, a queue that must
exist) stays in the validator: this table holds only what each one is alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from mysched.core.model.durations import parse_duration
from mysched.core.settings import DRAIN_BACKFILL, LOAD_KINDS, PACKING_POLICIES, STALE_ACTIONS, Config, FarmSpec
from mysched.config.downtimes import MARGIN, instant
from mysched.config.values import (MAX_FARM_NODES, MAX_NODE_SLOTS, boolean, boolean_or_auto, host_list, int_, name,
                                    names, number, one_of, patterns, size, string, strings)

NAMED = ("vos", "groups", "queues", "users", "node_types", "packing", "pools", "downtimes", "load_sources",
         "load_rules")
"""Top-level sections that hold blocks named by the site (`vos.atlas`, `pools.mcore`)."""


@dataclass(frozen=True)
class Setting:
    """One setting: `conv` turns the raw value into the typed one or raises ValueError (None:
    the validator reads the value itself, `kind` says what it is); `default` when it is left
    out; `default_text` when the default is worked out (printed instead of `default`)."""

    conv: Callable[[Any], Any] | None
    default: Any
    meaning: str
    kind: str = ""
    default_text: str = ""


@dataclass(frozen=True)
class Section:
    """A group of settings at a dotted path (`NAME` for a block the site names)."""

    path: str
    meaning: str
    settings: dict[str, Setting] = field(default_factory=dict)


def _s(conv: Callable[[Any], Any] | None, default: Any, meaning: str, **kw: str) -> Setting:
    return Setting(conv, default, meaning, **kw)


_LIMITS = {
    "max_running": _s(int_(0), None, "running jobs at most (MAUI's MAXJOB); wait reason `{who}_limit`"),
    "max_cores": _s(int_(0), None, "cores (slots) its running jobs hold at most (MAUI's MAXPROC); a job whose "
                    "cores would pass it waits (`{who}_core_limit`), a smaller one may still start"),
}


def _limits(who: str, *keys: str) -> dict[str, Setting]:
    return {k: Setting(s.conv, s.default, s.meaning.format(who=who)) for k, s in _LIMITS.items() if k in keys}


SECTIONS: tuple[Section, ...] = (
    Section("", "Settings at the top level of the file.", {
        "default_vo": _s(name, "others", "the VO of jobs whose unix group no VO lists; it may be left undeclared "
                         "(then it has no share and no limits)"),
    }),
    Section("scheduler", "How often cycles run and what one cycle may do.", {
        "interval": _s(parse_duration, 60.0, "time between cycles (1 s to a day)"),
        "min_interval": _s(parse_duration, 5.0, "cycles on job events, or when the last plan changes by itself (a "
                           "reservation's start, a downtime's end), come no closer than this (at least 1 s, at most "
                           "`interval`)"),
        "max_starts_per_cycle": _s(int_(1), 1000, "`pbs_runjob` calls per cycle at most"),
        "reservation_depth": _s(int_(0, 1000), 1, "EASY backfill: this many longest-waiting multi-core or multi-node "
                                "jobs that do not fit get a reservation (0: none)"),
        "reservation_wait_factor": _s(number(0.0, 1000.0), 0.0, "selective reservation: a job gets one only once it "
                                      "has waited this many times its requested walltime (1.0 suits parallel "
                                      "workloads; pilots asking the queue's maximum want 0)"),
        "max_walltime": _s(parse_duration, None, "a requested walltime of 0 or above this counts as none (the job "
                           "never backfills before a reservation), and no reservation lies further ahead",
                           default_text="each queue's `resources_max.walltime`, else a year"),
    }),
    Section("drain", "The dynamic multi-core partition: on by default and following the demand; `rate` and "
            "`max_draining` are overrides, either at 0 switches it off.", {
        "rate": _s(number(0.0, 10000.0), None, "nodes that may start draining per hour",
                   default_text="as the waiting multi-core jobs ask"),
        "max_draining": _s(int_(0, MAX_FARM_NODES), None, "nodes in the partition at most, those running multi-core "
                           "jobs included", default_text="as the demand asks, at most half the nodes"),
        "keep": _s(parse_duration, 1800.0, "how long a drained node with room is kept for multi-core jobs (at most "
                   "a day)"),
        "min_cores": _s(int_(2, MAX_NODE_SLOTS), 2, "jobs of at least this many cores on one node are multi-core"),
        "backfill": _s(one_of(*DRAIN_BACKFILL), "expected", "how long a draining node's own jobs are taken to run, "
                       "for backfill there: as long again as it has run (twice that on a node draining for at most half its "
                       "cores), at most to its requested walltime (`expected`), or to it (`requested`)"),
    }),
    Section("history", "The history store and the usage fair share reads.", {
        "window": _s(parse_duration, 2 * 86400.0, "wall-clock history that counts for fair share (at most a year)"),
        "half_life": _s(parse_duration, 86400.0, "usage decays by half over this (`\"inf\"`: no decay)"),
        "database": _s(string, Config.database, "any SQLAlchemy URL, e.g. "
                       "`postgresql+psycopg2://mysched:secret@dbhost/mysched`"),
        "accounting_dir": _s(string, Config.accounting_dir, "TORQUE accounting logs ingested every cycle (left at "
                             "the default and missing: found from pbs_server's home)"),
        "keep_cycles": _s(parse_duration, Config.keep_cycles, "the cycle log (cycles, start attempts) is pruned "
                          "after this (at least an hour; `\"inf\"`: kept for ever)"),
        "keep_jobs": _s(parse_duration, Config.keep_jobs, "finished jobs are pruned after this (at least `window`)"),
    }),
    Section("fairshare", "Opportunistic priority of a VO = share / (eps + u_hist + u_run).", {
        "eps": _s(number(1e-9, 10.0), 0.01, "keeps an idle VO's priority finite"),
    }),
    Section("server", "The batch server.", {
        "url": _s(string, Config.server, "`torque://HOST`, `pbs://HOST[:PORT]` for OpenPBS, or `sim://` for a simulated farm"),
        "libtorque": _s(string, "", "path to `libtorque.so.2`", default_text="found in the usual places"),
        "libpbs": _s(string, "", "path to OpenPBS's `libpbs.so` for a `pbs://` server (docs/openpbs.md)",
                     default_text="found where OpenPBS installs it"),
        "timeout": _s(parse_duration, 30.0, "an IFL call taking longer fails the cycle (at most an hour)"),
    }),
    Section("daemon", "The daemon's files, endpoints and leadership.", {
        "state_dir": _s(string, Config.state_dir, "where the status file for the status commands is written"),
        "metrics_address": _s(string, Config.metrics_address, "`HOST:PORT` of Prometheus `/metrics` (`\"off\"`: none)"),
        "event_address": _s(string, "", "`HOST:PORT` to listen on for pbs_server's scheduler contacts (qmgr "
                            "`scheduling = True`; port 15004 on the address the server's host name resolves to)",
                            default_text="\"\" (off)"),
        "event_allow": _s(host_list, (), "host names, addresses and networks that may contact the event port",
                          default_text="pbs_server's host, and loopback when it runs here"),
        "event_reserved_port": _s(boolean_or_auto, None, "accept contacts only from ports below 1024, as pbs_server "
                                  "sends them as root (false for a TORQUE built with `--disable-privports`)",
                                  default_text="\"auto\": yes, unless pbs_server runs here as another user"),
        "leader_timeout": _s(parse_duration, 0.0, "active/standby: a leader cut off from the history database loses "
                             "leadership after this; a standby takes over within it and a quarter more",
                             default_text="0: half the interval, at most 30 s"),
    }),
    Section("vos.NAME", "A VO: its unix groups, guaranteed share and limits.", {
        "groups": _s(names, (), "the unix groups whose jobs belong to the VO (or `groups.GROUP.vo`)",
                     default_text="none"),
        "share": _s(number(0.0, 100.0), 0.0, "percent of the usable slots guaranteed to the VO (all VOs' shares add "
                    "up to 100 at most)"),
        "slots": _s(int_(0), None, "an absolute guarantee in slots, instead of `share`"),
        **_limits("vo", "max_running", "max_cores"),
        "max_per_node": _s(int_(0), None, "running jobs of the VO per node at most (`vo_node_limit`)"),
    }),
    Section("groups.NAME", "A unix group's limits, VO and weight.", {
        **_limits("group", "max_running", "max_cores"),
        "max_per_node": _s(int_(0), None, "running jobs of the group per node at most (`group_node_limit`)"),
        "vo": _s(name, None, "the VO the group belongs to, instead of listing it under `vos.NAME.groups`"),
        "share": _s(number(0.0, 1e6), 1.0, "a weight among its VO's groups (LSF's share tree)"),
    }),
    Section("queues.NAME", "A TORQUE queue's limits and nodes.", {
        **_limits("queue", "max_running", "max_cores"),
        "nodes": _s(patterns, (), "node-name globs the queue's jobs may use", default_text="every node"),
        "node_types": _s(names, (), "node types the queue's jobs may use", default_text="every type"),
        "exclusive": _s(boolean, False, "keep other queues off the queue's nodes"),
    }),
    Section("users.NAME", "One user's limits over all their running jobs (MAUI's USERCFG); `users.default` holds "
            "for every user without a block of their own (an empty block: no limits).",
            _limits("user", "max_running", "max_cores")),
    Section("hot", "Jobs that bypass the share order and are placed first.", {
        "queues": _s(names, (), "hot queues", default_text="none"),
        "vos": _s(names, (), "hot VOs", default_text="none"),
        "groups": _s(names, (), "hot unix groups", default_text="none"),
        "users": _s(names, (), "hot users", default_text="none"),
    }),
    Section("node_types.NAME", "A kind of node and who may use it; a node takes the first type that matches it, "
            "untyped nodes are open to all. A type that names `groups` or `vos` is closed to the rest: for "
            "mysched, the jobs that may use it go there before open nodes, and the multi-core partition "
            "drains it first.", {
        "nodes": _s(patterns, (), "node-name globs of the type", default_text="none"),
        "properties": _s(names, (), "node properties (pbsnodes) of the type", default_text="none"),
        "groups": _s(names, (), "unix groups allowed on the type", default_text="none"),
        "vos": _s(names, (), "VOs allowed on the type", default_text="none"),
        "mem": _s(size, None, "memory jobs may ask for on each node of the type",
                  default_text="pbs_mom's `physmem`"),
    }),
    Section("packing.NAME", "A job class packed onto few nodes (INFN-T1 study); first match wins.", {
        "policy": _s(one_of(*PACKING_POLICIES), "none", "`none` spreads the class's jobs, `relaxed` prefers nodes "
                     "running the class, `exclusive` also keeps other jobs off as many of them as its waiting jobs "
                     "need"),
        "queues": _s(names, (), "queues of the class", default_text="none"),
        "vos": _s(names, (), "VOs of the class", default_text="none"),
        "groups": _s(names, (), "unix groups of the class", default_text="none"),
        "users": _s(names, (), "users of the class", default_text="none"),
        "ttl": _s(parse_duration, math.inf, "exclusive only: a node that got no new class job for this long is "
                  "released"),
    }),
    Section("pools.NAME", "A package guarantee pool (LSF's guaranteed resource pools); a host joins the first pool "
            "that selects it.", {
        "hosts": _s(patterns, (), "host-name globs of the pool", default_text="none"),
        "node_types": _s(names, (), "node types of the pool", default_text="none"),
        "properties": _s(names, (), "node properties of the pool", default_text="none"),
        "min_mem": _s(size, None, "only hosts with at least this memory"),
        "min_slots": _s(int_(0, MAX_NODE_SLOTS), None, "only hosts with at least this many slots"),
        "vos": _s(None, None, "each VO's guarantee", kind="group { NAME = packages or \"N%\" }"),
        "groups": _s(None, None, "each unix group's guarantee", kind="group { NAME = packages or \"N%\" }"),
        "queues": _s(None, None, "each queue's guarantee", kind="group { NAME = packages or \"N%\" }"),
    }),
    Section("pools.NAME.package", "What one package is: slots and/or memory on one host.", {
        "slots": _s(int_(0, MAX_NODE_SLOTS), 0, "slots of a package"),
        "mem": _s(size, 0, "memory of a package"),
    }),
    Section("pools.NAME.loan", "Who may borrow the guaranteed hosts the owners do not use.", {
        "queues": _s(names, (), "queues whose jobs may borrow (`\"all\"`: every queue)", default_text="none: no loans"),
        "max_walltime": _s(parse_duration, None, "a loan's requested walltime at most", default_text="no limit"),
        "restricted": _s(boolean, False, "lend only while no owner waits"),
    }),
    Section("downtimes.NAME", "A scheduled maintenance window (MAUI's `setres`): before it its nodes take only jobs "
            "that end `margin` before its start, nothing while it lasts.", {
        "start": _s(instant, None, "ISO 8601, UTC unless it carries an offset", default_text="required"),
        "end": _s(instant, None, "ISO 8601, after `start`", default_text="required"),
        "hosts": _s(patterns, (), "host-name globs of the window", default_text="every node (with no node_types)"),
        "node_types": _s(names, (), "node types of the window", default_text="every node (with no hosts)"),
        "margin": _s(parse_duration, MARGIN, "jobs must end this long before `start` (at most a day)"),
    }),
    Section("load_sources.NAME", "An external load value, read in the background on its own interval.", {
        "type": _s(string, "", "`" + "`, `".join(LOAD_KINDS) + "`", default_text="required"),
        "url": _s(string, "", "prometheus: the server's `http(s)://HOST:PORT`", default_text="required for prometheus"),
        "query": _s(string, "", "prometheus: an instant query whose result is one number",
                    default_text="required for prometheus"),
        "path": _s(string, "", "file: a number, or JSON with the number at `key`", default_text="required for file"),
        "key": _s(string, "", "file: the dotted key of the number in a JSON file"),
        "command": _s(strings, (), "command: the program and its arguments as a list (no shell); its standard "
                      "output", default_text="required for command"),
        "interval": _s(parse_duration, 60.0, "time between reads (at most a day)"),
        "timeout": _s(parse_duration, 10.0, "a read taking longer fails (at most `interval`)"),
        "max_age": _s(parse_duration, 300.0, "a last good value older than this is stale (at least `interval`)"),
        "on_stale": _s(one_of(*STALE_ACTIONS), "ignore", "what a stale source's rules do: throttle nothing "
                       "(`ignore`) or start nothing new (`stop`)"),
    }),
    Section("load_rules.NAME", "Ties a load source to VOs, groups or queues: at or above `high` nothing new starts "
            "for them (`external_load`), between `low` and `high` their limits shrink linearly.", {
        "source": _s(string, "", "the load source", default_text="required"),
        "vos": _s(names, (), "VOs throttled", default_text="none"),
        "groups": _s(names, (), "unix groups throttled", default_text="none"),
        "queues": _s(names, (), "queues throttled", default_text="none"),
        "low": _s(number(-math.inf), 0.0, "the value from which limits shrink"),
        "high": _s(number(-math.inf), 1.0, "the value at which nothing new starts", default_text="required"),
        "hysteresis": _s(number(0.0), 0.0, "a closed rule opens again below `high` minus this"),
    }),
    Section("node_load", "Nodes skipped for what pbs_mom reports (`node_load`; LSF's loadSched).", {
        "max_load_per_core": _s(number(0.0, 1000.0), None, "skip nodes with more `loadave` per core",
                                default_text="no limit"),
        "min_free_mem": _s(size, None, "skip nodes with less `availmem`", default_text="no limit"),
    }),
    Section("farm", "The simulated farm (`mysched simulate`, `mysched run --server sim://`).", {
        "nodes": _s(int_(1, MAX_FARM_NODES), FarmSpec.nodes, "nodes"),
        "slots_per_node": _s(int_(1, MAX_NODE_SLOTS), FarmSpec.slots_per_node, "slots of each node"),
        "name_format": _s(string, FarmSpec.name_format, "node names, `{index}` counting from 1"),
    }),
)

_BY_PATH = {s.path: s for s in SECTIONS}


def section_path(path: tuple[str | int, ...]) -> str:
    """The schema path of a group in a file: ``("pools", "mcore", "loan")`` -> ``pools.NAME.loan``."""
    parts = [str(p) for p in path]
    if len(parts) >= 2 and parts[0] in NAMED:
        parts[1] = "NAME"
    return ".".join(parts)


def section(path: tuple[str | int, ...]) -> Section:
    """The section of a group in a file (KeyError: the schema has none, a bug of the caller)."""
    return _BY_PATH[section_path(path)]


def allowed(path: tuple[str | int, ...]) -> dict[str, Setting | None]:
    """The keys a group may hold: its settings and its subsections (None)."""
    here = section_path(path)
    keys: dict[str, Setting | None] = dict(_BY_PATH[here].settings)
    depth = here.count(".") + 1 if here else 0
    for s in SECTIONS:
        parts = s.path.split(".")
        if s.path and len(parts) > depth and ".".join(parts[:depth]) == here:
            keys.setdefault(parts[depth], None)
    return keys


def setting(path: tuple[str | int, ...], key: str) -> Setting:
    return section(path).settings[key]


def dotted_keys() -> list[str]:
    """Every setting as it is written in a file, `NAME` for a name the site chooses."""
    return [f"{s.path}.{k}" if s.path else k for s in SECTIONS for k in s.settings]


_KINDS: dict[Callable[[Any], Any], str] = {
    parse_duration: "duration", string: "string", name: "name", names: "list of names",
    patterns: "list of node-name globs", boolean: "true or false", boolean_or_auto: "true, false or \"auto\"",
    host_list: "list of host names, addresses, networks", strings: "list of strings",
    size: "size (\"2gb\" or bytes)", instant: "date and time (ISO 8601)",
}


def kind_of(s: Setting) -> str:
    """What a setting takes, as the docs say it: from its converter, so the page cannot claim
    a type or range the validator does not check."""
    if s.kind:
        return s.kind
    return getattr(s.conv, "kind", None) or _KINDS[s.conv]  # type: ignore[index]


def _duration(seconds: float) -> str:
    if seconds == math.inf:
        return "\"inf\""
    for unit, size_s in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size_s and seconds % size_s == 0 and (unit != "m" or seconds >= 300):
            return f"\"{seconds / size_s:g}{unit}\""
    return f"{seconds:g} s"


def default_of(s: Setting) -> str:
    """A setting's default as the docs say it."""
    if s.default_text:
        return s.default_text
    d = s.default
    if d is None or d == ():
        return "none"
    if isinstance(d, bool):
        return "true" if d else "false"
    if s.conv is parse_duration:
        return _duration(float(d))
    if isinstance(d, str):
        return f"\"{d}\""
    return f"{d:g}" if isinstance(d, float) else str(d)
