"""A second, independent bad-input battery (issue 34, item 5): every key of the configuration
with values of the wrong type, out of range, empty or absurd; every subcommand's options with
odd values; history databases that are no databases; `sim://` URLs with odd parameters. Each
case is refused in one line naming its file, line, key or argument, in words, or accepted with
a meaning a user can rely on (`ACCEPTED`: exit 0, nothing said against it) -- never an internal
error, a hang, Python's or libconf's wording, or a silent acceptance of what cannot work.
Same `Case` and `run_case` as `test_bad_input`; `tools/badinput.py` tallies the CASES."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import pytest

from tests.cli.test_bad_input import REFUSED, SWF_OK, WARNED, Case, run_case

ACCEPTED = "accepted"
PYTHON_WORDS = re.compile(r"Traceback|internal error|Error\b|invalid literal|codec|Errno|Unexpected token|"
                          r"Expected end|Couldn't load|\(':'|row \d+, column|NoneType|object has no|"
                          r"unsupported operand|not supported between|could not convert|OverflowError")
VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; cms = { groups = ["cms"]; share = 20; }; };\n'


def _cfg(name: str, text: str | bytes, where: str, expect: str = REFUSED, **more: str | bytes) -> Case:
    """check-config of VOS and `text` (or of `text` alone when it is bytes)."""
    body = text if isinstance(text, bytes) else VOS + text
    return Case(name, "config", expect, lambda d: ["check-config", "-c", str(d / "site.cfg")],
                {"site.cfg": body, **more}, where)


def _ok(name: str, text: str) -> Case:
    """A setting accepted with a sensible meaning."""
    return _cfg(name, text, "", ACCEPTED)


def _cli(name: str, argv: list[str], where: str, expect: str = REFUSED, **files: str | bytes) -> Case:
    return Case(name, "cli", expect, lambda d: [a.replace("{d}", str(d)) for a in argv], dict(files), where)


L2 = "site.cfg:2: "
CASES: list[Case] = [
    # -- scheduler --------------------------------------------------------------------------
    _cfg("interval 1e400s", 'scheduler = { interval = "1e400s"; };\n', L2 + "scheduler.interval"),
    _cfg("interval -1h", 'scheduler = { interval = "-1h"; };\n', L2 + "scheduler.interval"),
    _ok("interval 00:99:99", 'scheduler = { interval = "00:99:99"; };\n'),
    _cfg("interval nan string", 'scheduler = { interval = "nan"; };\n', L2 + "scheduler.interval"),
    _cfg("interval inf", 'scheduler = { interval = "inf"; };\n', L2 + "scheduler.interval"),
    _cfg("interval a list", 'scheduler = { interval = [60]; };\n', L2 + "scheduler.interval"),
    _cfg("interval a group", 'scheduler = { interval = { a = 1; }; };\n', L2 + "scheduler.interval"),
    _cfg("interval a boolean", 'scheduler = { interval = true; };\n', L2 + "scheduler.interval"),
    _cfg("interval empty string", 'scheduler = { interval = ""; };\n', L2 + "scheduler.interval"),
    _cfg("interval 1:2:3:4:5", 'scheduler = { interval = "1:2:3:4:5"; };\n', L2 + "scheduler.interval"),
    _cfg("interval 99999 digits", 'scheduler = { interval = "' + "9" * 5000 + 's"; };\n', L2 + "scheduler.interval"),
    _cfg("interval unicode digits", 'scheduler = { interval = "\u0661\u0662:00"; };\n', L2 + "scheduler.interval"),
    _cfg("interval -0", 'scheduler = { interval = -0.0; };\n', L2 + "scheduler.interval"),
    _cfg("interval 1e309", 'scheduler = { interval = 1e309; };\n', L2 + "scheduler.interval"),
    _cfg("min_interval negative", 'scheduler = { min_interval = -5; };\n', L2 + "scheduler.min_interval"),
    _cfg("max_starts 0", 'scheduler = { max_starts_per_cycle = 0; };\n', L2 + "scheduler.max_starts_per_cycle"),
    _cfg("max_starts -1", 'scheduler = { max_starts_per_cycle = -1; };\n', L2 + "scheduler.max_starts_per_cycle"),
    _cfg("max_starts 2.5", 'scheduler = { max_starts_per_cycle = 2.5; };\n', L2 + "scheduler.max_starts_per_cycle"),
    _cfg("max_starts string", 'scheduler = { max_starts_per_cycle = "10"; };\n', L2 + "scheduler.max_starts_per_cycle"),
    _cfg("max_starts 10^30", 'scheduler = { max_starts_per_cycle = 1000000000000000000000000000000; };\n',
         "", ACCEPTED),
    _cfg("reservation_depth 1001", 'scheduler = { reservation_depth = 1001; };\n', L2 + "scheduler.reservation_depth"),
    _cfg("reservation_depth -1", 'scheduler = { reservation_depth = -1; };\n', L2 + "scheduler.reservation_depth"),
    _cfg("wait factor negative", 'scheduler = { reservation_wait_factor = -1.0; };\n',
         L2 + "scheduler.reservation_wait_factor"),
    _cfg("wait factor huge", 'scheduler = { reservation_wait_factor = 1e300; };\n',
         L2 + "scheduler.reservation_wait_factor"),
    _cfg("max_walltime 0", 'scheduler = { max_walltime = 0; };\n', L2 + "scheduler.max_walltime"),
    _cfg("max_walltime inf", 'scheduler = { max_walltime = "inf"; };\n', L2 + "scheduler.max_walltime"),
    _cfg("max_walltime -1h", 'scheduler = { max_walltime = "-1h"; };\n', L2 + "scheduler.max_walltime"),
    _ok("max_walltime 30d", 'scheduler = { max_walltime = "30d"; };\n'),
    _cfg("scheduler a list", 'scheduler = [1, 2];\n', L2 + "scheduler"),
    _cfg("scheduler a string", 'scheduler = "fast";\n', L2 + "scheduler"),
    # -- history ----------------------------------------------------------------------------
    _cfg("window 0", 'history = { window = 0; };\n', L2 + "history.window"),
    _cfg("window inf", 'history = { window = "inf"; };\n', L2 + "history.window"),
    _cfg("window 400d", 'history = { window = "400d"; };\n', L2 + "history.window"),
    _cfg("half_life 0", 'history = { half_life = 0; };\n', L2 + "history.half_life"),
    _cfg("half_life -1d", 'history = { half_life = "-1d"; };\n', L2 + "history.half_life"),
    _ok("half_life inf", 'history = { half_life = "inf"; };\n'),
    _cfg("database empty", 'history = { database = ""; };\n', L2 + "history.database"),
    _cfg("database a number", 'history = { database = 5; };\n', L2 + "history.database"),
    _cfg("database sqlite dir missing", 'history = { database = "sqlite:////nonexistent/dir/h.db"; };\n',
         "", ACCEPTED),
    _cfg("database sqlite a directory", 'history = { database = "sqlite:////tmp"; };\n', "", ACCEPTED),
    _cfg("database unicode scheme", 'history = { database = "\u00e9db://x"; };\n', L2 + "history.database"),
    _cfg("database NUL", 'history = { database = "sqlite:///a\\x00b"; };\n', L2 + "history.database"),
    _cfg("accounting_dir a list", 'history = { accounting_dir = ["/a"]; };\n', L2 + "history.accounting_dir"),
    _cfg("accounting_dir empty", 'history = { accounting_dir = ""; };\n', "", ACCEPTED),
    _cfg("keep_cycles -1d", 'history = { keep_cycles = "-1d"; };\n', L2 + "history.keep_cycles"),
    _cfg("keep_jobs under window", 'history = { keep_jobs = "1h"; };\n', L2 + "history.keep_jobs"),
    _cfg("keep_cycles 0", 'history = { keep_cycles = 0; };\n', L2 + "history.keep_cycles"),
    # -- fairshare --------------------------------------------------------------------------
    _cfg("eps 0", 'fairshare = { eps = 0; };\n', L2 + "fairshare.eps"),
    _cfg("eps negative", 'fairshare = { eps = -1.0; };\n', L2 + "fairshare.eps"),
    _cfg("eps 1e309", 'fairshare = { eps = 1e309; };\n', L2 + "fairshare.eps"),
    _cfg("eps string", 'fairshare = { eps = "small"; };\n', L2 + "fairshare.eps"),
    _cfg("fairshare unknown key", 'fairshare = { epsilon = 0.1; };\n', L2 + "fairshare.epsilon"),
    # -- server -----------------------------------------------------------------------------
    _cfg("url port 99999", 'server = { url = "torque://head:99999"; };\n', L2 + "server.url"),
    _cfg("url port text", 'server = { url = "torque://head:abc"; };\n', L2 + "server.url"),
    _cfg("url host with space", 'server = { url = "torque://he ad"; };\n', L2 + "server.url"),
    _cfg("url unclosed bracket", 'server = { url = "torque://[::1"; };\n', L2 + "server.url"),
    _cfg("url a number", 'server = { url = 5; };\n', L2 + "server.url"),
    _cfg("url NUL", 'server = { url = "torque://a\\x00b"; };\n', L2 + "server.url"),
    _cfg("url 100k host", 'server = { url = "torque://' + "h" * 100000 + '"; };\n', L2 + "server.url"),
    _cfg("url path", 'server = { url = "torque://head/x/y"; };\n', L2 + "server.url"),
    _cfg("url unicode host", 'server = { url = "torque://k\u00f6pfchen"; };\n', L2 + "server.url: expected"),
    _cfg("url sim negative slots", 'server = { url = "sim://?slots=-1"; };\n', L2 + "server.url"),
    _cfg("url sim nodes 0", 'server = { url = "sim://?nodes=0"; };\n', L2 + "server.url"),
    _cfg("url sim speed 0", 'server = { url = "sim://?speed=0"; };\n', L2 + "server.url"),
    _cfg("url sim hours inf", 'server = { url = "sim://?hours=inf"; };\n', L2 + "server.url"),
    _cfg("url sim nodes twice", 'server = { url = "sim://?nodes=2&nodes=3"; };\n', L2 + "server.url"),
    _cfg("url sim empty value", 'server = { url = "sim://?nodes="; };\n', L2 + "server.url"),
    _cfg("url sim host", 'server = { url = "sim://elsewhere?nodes=2"; };\n', L2 + "server.url"),
    _cfg("timeout 0", 'server = { timeout = 0; };\n', L2 + "server.timeout"),
    _cfg("timeout 1e400s", 'server = { timeout = "1e400s"; };\n', L2 + "server.timeout"),
    _cfg("timeout 2h", 'server = { timeout = "2h"; };\n', L2 + "server.timeout"),
    _cfg("libtorque a number", 'server = { libtorque = 5; };\n', L2 + "server.libtorque"),
    _cfg("libtorque missing file", 'server = { libtorque = "/nonexistent/libtorque.so.2"; };\n', "", ACCEPTED),
    _cfg("libtorque a directory", 'server = { libtorque = "/tmp"; };\n', "", ACCEPTED),
    # -- daemon -----------------------------------------------------------------------------
    _cfg("state_dir empty", 'daemon = { state_dir = ""; };\n', "", ACCEPTED),
    _cfg("state_dir a file", 'daemon = { state_dir = "/etc/passwd"; };\n', "", ACCEPTED),
    _cfg("metrics port 99999", 'daemon = { metrics_address = "127.0.0.1:99999"; };\n', L2 + "daemon.metrics_address"),
    _cfg("metrics no port", 'daemon = { metrics_address = "127.0.0.1:"; };\n', L2 + "daemon.metrics_address"),
    _cfg("metrics unclosed bracket", 'daemon = { metrics_address = "[::1:9720"; };\n', L2 + "daemon.metrics_address"),
    _cfg("metrics unicode digits", 'daemon = { metrics_address = "h:\u0661\u0662"; };\n', L2 + "daemon.metrics_address"),
    _ok("metrics off", 'daemon = { metrics_address = "off"; };\n'),
    _ok("metrics ipv6", 'daemon = { metrics_address = "[::1]:9720"; };\n'),
    _cfg("event port -1", 'daemon = { event_address = "127.0.0.1:-1"; };\n', L2 + "daemon.event_address"),
    _cfg("event_allow bad network", 'daemon = { event_allow = ["10.0.0.0/33"]; };\n', L2 + "daemon.event_allow"),
    _cfg("event_allow empty name", 'daemon = { event_allow = [""]; };\n', L2 + "daemon.event_allow"),
    _cfg("event_allow empty list", 'daemon = { event_allow = []; };\n', L2 + "daemon.event_allow"),
    _cfg("event_allow a number", 'daemon = { event_allow = 10; };\n', L2 + "daemon.event_allow"),
    _cfg("event_allow glob", 'daemon = { event_allow = ["head*["]; };\n', L2 + "daemon.event_allow"),
    _cfg("event_reserved_port maybe", 'daemon = { event_reserved_port = "maybe"; };\n',
         L2 + "daemon.event_reserved_port"),
    _cfg("event_reserved_port 2", 'daemon = { event_reserved_port = 2; };\n', L2 + "daemon.event_reserved_port"),
    _cfg("leader_timeout -1", 'daemon = { leader_timeout = -1; };\n', L2 + "daemon.leader_timeout"),
    _cfg("leader_timeout over interval", 'daemon = { leader_timeout = "2h"; };\n', L2 + "daemon.leader_timeout"),
    # -- farm -------------------------------------------------------------------------------
    _cfg("farm nodes 0", 'farm = { nodes = 0; };\n', L2 + "farm.nodes"),
    _cfg("farm nodes -1", 'farm = { nodes = -1; };\n', L2 + "farm.nodes"),
    _cfg("farm nodes 2.5", 'farm = { nodes = 2.5; };\n', L2 + "farm.nodes"),
    _cfg("farm slots 0", 'farm = { slots_per_node = 0; };\n', L2 + "farm.slots_per_node"),
    _cfg("farm slots 5000", 'farm = { slots_per_node = 5000; };\n', L2 + "farm.slots_per_node"),
    _cfg("farm nodes x slots too many", 'farm = { nodes = 100000; slots_per_node = 4096; };\n', "site.cfg:2: farm"),
    _cfg("name_format empty", 'farm = { name_format = ""; };\n', L2 + "farm.name_format"),
    _cfg("name_format without index", 'farm = { name_format = "wn"; };\n', L2 + "farm.name_format"),
    _cfg("name_format positional", 'farm = { name_format = "wn{0}"; };\n', L2 + "farm.name_format"),
    _cfg("name_format attribute", 'farm = { name_format = "wn{index.real}"; };\n', L2 + "farm.name_format"),
    _cfg("name_format item", 'farm = { name_format = "wn{index[0]}"; };\n', L2 + "farm.name_format"),
    _cfg("name_format nested width", 'farm = { name_format = "wn{index:{index}}"; };\n', L2 + "farm.name_format"),
    _cfg("name_format a space", 'farm = { name_format = "wn {index}"; };\n', "", ACCEPTED),
    _cfg("name_format a slash", 'farm = { name_format = "wn/{index}"; };\n', "", ACCEPTED),
    _ok("name_format twice", 'farm = { name_format = "wn{index}x{index}"; };\n'),
    _cfg("name_format 100k", 'farm = { name_format = "' + "w" * 100000 + '{index}"; };\n', "", ACCEPTED),
    # -- VOs --------------------------------------------------------------------------------
    _cfg("share 0", b'vos = { z = { groups = ["z"]; share = 0; }; };\n', "", ACCEPTED),
    _cfg("share -0", b'vos = { z = { groups = ["z"]; share = -0.0; }; };\n', "", ACCEPTED),
    _cfg("share 1e309", b'vos = { z = { groups = ["z"]; share = 1e309; }; };\n', "site.cfg:1: vos.z.share"),
    _cfg("share a string", b'vos = { z = { groups = ["z"]; share = "50%"; }; };\n', "site.cfg:1: vos.z.share"),
    _cfg("share 100.0000001", b'vos = { z = { groups = ["z"]; share = 100.0000001; }; };\n', "site.cfg:1: vos.z.share"),
    _cfg("slots -1", b'vos = { z = { groups = ["z"]; slots = -1; }; };\n', "site.cfg:1: vos.z.slots"),
    _cfg("slots 10^30", b'vos = { z = { groups = ["z"]; slots = 1000000000000000000000000000000; }; };\n',
         "", ACCEPTED),
    _cfg("slots 2.5", b'vos = { z = { groups = ["z"]; slots = 2.5; }; };\n', "site.cfg:1: vos.z.slots"),
    _cfg("share and slots", b'vos = { z = { groups = ["z"]; slots = 2; share = 5; }; };\n', "site.cfg:1: vos.z"),
    _cfg("max_running -1", b'vos = { z = { groups = ["z"]; max_running = -1; }; };\n', "site.cfg:1: vos.z.max_running"),
    _cfg("max_cores string", b'vos = { z = { groups = ["z"]; max_cores = "many"; }; };\n',
         "site.cfg:1: vos.z.max_cores"),
    _cfg("max_per_node 1.5", b'vos = { z = { groups = ["z"]; max_per_node = 1.5; }; };\n',
         "site.cfg:1: vos.z.max_per_node"),
    _cfg("groups empty list", b'vos = { z = { groups = []; share = 5; }; };\n', "site.cfg:1: vos.z"),
    _cfg("groups a string", b'vos = { z = { groups = "z"; share = 5; }; };\n', "", ACCEPTED),
    _cfg("groups numbers", b'vos = { z = { groups = [1, 2]; share = 5; }; };\n', "site.cfg:1: vos.z.groups"),
    _cfg("groups empty name", b'vos = { z = { groups = [""]; share = 5; }; };\n', "site.cfg:1: vos.z.groups"),
    _cfg("groups name with space", b'vos = { z = { groups = ["a b"]; share = 5; }; };\n', "site.cfg:1: vos.z.groups"),
    _cfg("groups name 100k", b'vos = { z = { groups = ["' + b"g" * 100000 + b'"]; share = 5; }; };\n',
         "site.cfg:1: vos.z.groups"),
    _cfg("groups repeated in a VO", b'vos = { z = { groups = ["z", "z"]; share = 5; }; };\n', "", ACCEPTED),
    _cfg("group name unicode", 'vos = { z = { groups = ["gr\u00fcn"]; share = 5; }; };\n'.encode(), "", ACCEPTED),
    _cfg("group in a VO and under groups", 'groups = { atlas = { vo = "cms"; }; };\n', L2 + "groups.atlas.vo"),
    _cfg("VO a number", b'vos = { z = 5; };\n', "site.cfg:1: vos.z"),
    _cfg("vos a list", b'vos = ["atlas"];\n', "site.cfg:1: vos"),
    _cfg("VO name 100k", b'vos = { ' + b"v" * 100000 + b' = { groups = ["z"]; share = 5; }; };\n', "", ACCEPTED),
    _cfg("VO unknown key", b'vos = { z = { groups = ["z"]; shares = 5; }; };\n', "site.cfg:1: vos.z.shares"),
    _cfg("shares 60 + 50", b'vos = { a = { groups = ["a"]; share = 60; }; b = { groups = ["b"]; share = 50; }; };\n',
         "site.cfg:1: vos"),
    _cfg("VO named like default, no group", b'default_vo = "z";\nvos = { z = { share = 5; }; };\n', "", ACCEPTED),
    _cfg("default_vo empty", 'default_vo = "";\n', L2 + "default_vo"),
    _cfg("default_vo a number", 'default_vo = 5;\n', L2 + "default_vo"),
    _cfg("default_vo with space", 'default_vo = "a b";\n', L2 + "default_vo"),
    # -- groups -----------------------------------------------------------------------------
    _cfg("group vo unknown", 'groups = { g = { vo = "nope"; }; };\n', L2 + "groups.g.vo"),
    _cfg("group share 0", 'groups = { atlas = { share = 0; }; };\n', L2 + "groups.atlas.share"),
    _cfg("group share -1", 'groups = { atlas = { share = -1; }; };\n', L2 + "groups.atlas.share"),
    _cfg("group share 1e309", 'groups = { atlas = { share = 1e309; }; };\n', L2 + "groups.atlas.share"),
    _cfg("group max_per_node -1", 'groups = { atlas = { max_per_node = -1; }; };\n', L2 + "groups.atlas.max_per_node"),
    _cfg("group a list", 'groups = { atlas = [1]; };\n', L2 + "groups.atlas"),
    _cfg("group vo a number", 'groups = { g = { vo = 1; }; };\n', L2 + "groups.g.vo"),
    _cfg("group vo empty", 'groups = { g = { vo = ""; }; };\n', L2 + "groups.g.vo"),
    # -- queues -----------------------------------------------------------------------------
    _cfg("queue nodes glob [", 'queues = { q = { nodes = ["wn["]; }; };\n', L2 + "queues.q.nodes"),
    _cfg("queue nodes empty pattern", 'queues = { q = { nodes = [""]; }; };\n', L2 + "queues.q.nodes"),
    _ok("queue nodes glob **", 'queues = { q = { nodes = ["**"]; }; };\n'),
    _cfg("queue node_types unknown", 'queues = { q = { node_types = ["gpu"]; }; };\n', L2 + "queues.q.node_types"),
    _cfg("queue exclusive string", 'queues = { q = { exclusive = "yes"; nodes = ["wn1"]; }; };\n',
         L2 + "queues.q.exclusive"),
    _cfg("queue exclusive no nodes", 'queues = { q = { exclusive = true; }; };\n', L2 + "queues.q.exclusive"),
    _cfg("queue max_cores -1", 'queues = { q = { max_cores = -1; }; };\n', L2 + "queues.q.max_cores"),
    _cfg("queue max_running 1e3", 'queues = { q = { max_running = 1e3; }; };\n', L2 + "queues.q.max_running"),
    _cfg("queue name 100k", 'queues = { ' + "q" * 100000 + ' = { max_running = 1; }; };\n', "", ACCEPTED),
    _cfg("queue nodes a string", 'queues = { q = { nodes = "wn*"; }; };\n', "", ACCEPTED),
    # -- hot --------------------------------------------------------------------------------
    _cfg("hot unknown queue", 'queues = { q = {}; };\nhot = { queues = ["nope"]; };\n', "site.cfg:3: hot.queues"),
    _cfg("hot unknown vo", 'hot = { vos = ["nope"]; };\n', L2 + "hot.vos"),
    _cfg("hot users a string", 'hot = { users = "root"; };\n', "", ACCEPTED),
    _cfg("hot users empty name", 'hot = { users = [""]; };\n', L2 + "hot.users"),
    _cfg("hot unknown key", 'hot = { nodes = ["a"]; };\n', L2 + "hot.nodes"),
    # -- node types -------------------------------------------------------------------------
    _cfg("node type empty", 'node_types = { t = {}; };\n', L2 + "node_types.t"),
    _cfg("node type nodes empty list", 'node_types = { t = { nodes = []; }; };\n', L2 + "node_types.t"),
    _cfg("node type glob [", 'node_types = { t = { nodes = ["wn[0-"]; }; };\n', L2 + "node_types.t.nodes"),
    _cfg("node type mem 1zb", 'node_types = { t = { nodes = ["wn*"]; mem = "1zb"; }; };\n', L2 + "node_types.t.mem"),
    _cfg("node type mem -1gb", 'node_types = { t = { nodes = ["wn*"]; mem = "-1gb"; }; };\n', L2 + "node_types.t.mem"),
    _cfg("node type mem nan", 'node_types = { t = { nodes = ["wn*"]; mem = "nan"; }; };\n', L2 + "node_types.t.mem"),
    _cfg("node type mem 0", 'node_types = { t = { nodes = ["wn*"]; mem = 0; }; };\n', L2 + "node_types.t.mem"),
    _cfg("node type mem 1e400gb", 'node_types = { t = { nodes = ["wn*"]; mem = "1e400gb"; }; };\n',
         L2 + "node_types.t.mem"),
    _cfg("node type unknown vo", 'node_types = { t = { nodes = ["wn*"]; vos = ["nope"]; }; };\n', L2 + "node_types.t.vos"),
    _cfg("node type properties empty", 'node_types = { t = { properties = [""]; }; };\n',
         L2 + "node_types.t.properties"),
    _cfg("node type unknown group", 'node_types = { t = { nodes = ["wn*"]; groups = [""]; }; };\n',
         L2 + "node_types.t.groups"),
    _cfg("node types a list", 'node_types = ["t"];\n', L2 + "node_types"),
    # -- packing ----------------------------------------------------------------------------
    _cfg("packing policy unknown", 'packing = { p = { policy = "tight"; vos = ["atlas"]; }; };\n', L2 + "packing.p.policy"),
    _cfg("packing ttl on none", 'packing = { p = { policy = "none"; vos = ["atlas"]; ttl = "1h"; }; };\n',
         L2 + "packing.p.ttl"),
    _cfg("packing ttl -1h", 'packing = { p = { policy = "exclusive"; vos = ["atlas"]; ttl = "-1h"; }; };\n',
         L2 + "packing.p.ttl"),
    _cfg("packing ttl 0", 'packing = { p = { policy = "exclusive"; vos = ["atlas"]; ttl = 0; }; };\n',
         "", ACCEPTED),
    _cfg("packing empty class", 'packing = { p = { policy = "relaxed"; }; };\n', L2 + "packing.p"),
    _cfg("packing class default", 'packing = { default = { vos = ["atlas"]; }; };\n', L2 + "packing.default"),
    _cfg("packing a number", 'packing = 5;\n', L2 + "packing"),
    _cfg("packing class a list", 'packing = { p = [1]; };\n', L2 + "packing.p"),
    _cfg("packing unknown vo", 'packing = { p = { vos = ["nope"]; }; };\n', L2 + "packing.p.vos"),
    _cfg("packing group twice", 'packing = { p = { groups = ["atlas"]; }; r = { groups = ["atlas"]; }; };\n',
         "", ACCEPTED),
    # -- drain ------------------------------------------------------------------------------
    _ok("drain rate only (an override of the partition on by default)", 'drain = { rate = 5; };\n'),
    _cfg("drain rate -1", 'drain = { rate = -1; max_draining = 2; };\n', L2 + "drain.rate"),
    _cfg("drain rate 1e309", 'drain = { rate = 1e309; max_draining = 2; };\n', L2 + "drain.rate"),
    _cfg("drain keep -1h", 'drain = { rate = 1; max_draining = 2; keep = "-1h"; };\n', L2 + "drain.keep"),
    _cfg("drain keep 2d", 'drain = { rate = 1; max_draining = 2; keep = "2d"; };\n', L2 + "drain.keep"),
    _cfg("drain min_cores 1", 'drain = { rate = 1; max_draining = 2; min_cores = 1; };\n', L2 + "drain.min_cores"),
    _cfg("drain backfill odd", 'drain = { rate = 1; max_draining = 2; backfill = "never"; };\n', L2 + "drain.backfill"),
    _cfg("drain max_draining over the sim farm", 'server = { url = "sim://?nodes=2&slots=8"; };\n'
         'drain = { rate = 1; max_draining = 50; };\n', "", ACCEPTED),
    # -- users ------------------------------------------------------------------------------
    _cfg("users default -1", 'users = { default = { max_running = -1; }; };\n', L2 + "users.default.max_running"),
    _cfg("users a list", 'users = [1];\n', L2 + "users"),
    _cfg("user unknown key", 'users = { bob = { max_jobs = 1; }; };\n', L2 + "users.bob.max_jobs"),
    _cfg("user a number", 'users = { bob = 3; };\n', L2 + "users.bob"),
    _cfg("user max_cores 1.5", 'users = { bob = { max_cores = 1.5; }; };\n', L2 + "users.bob.max_cores"),
    _ok("user empty block", 'users = { default = { max_running = 5; }; bob = {}; };\n'),
]

POOL = 'pools = {{ p = {{ hosts = ["wn*"]; package = {{ slots = 8; }}; groups = {{ atlas = "25%"; }}; {} }}; }};\n'
CASES += [
    # -- pools ------------------------------------------------------------------------------
    _ok("pool plain", POOL.format("")),
    _cfg("pool hosts glob [", POOL.replace('"wn*"', '"wn["').format(""), L2 + "pools.p.hosts"),
    _cfg("pool hosts empty pattern", POOL.replace('"wn*"', '""').format(""), L2 + "pools.p.hosts"),
    _cfg("pool hosts a number", POOL.replace('["wn*"]', '5').format(""), L2 + "pools.p.hosts"),
    _cfg("pool package slots 0", POOL.replace("slots = 8", "slots = 0").format(""), L2 + "pools.p.package"),
    _cfg("pool package slots -8", POOL.replace("slots = 8", "slots = -8").format(""), L2 + "pools.p.package.slots"),
    _cfg("pool package mem 1zb", POOL.replace("slots = 8", 'mem = "1zb"').format(""), L2 + "pools.p.package.mem"),
    _cfg("pool package a list", POOL.replace("{{ slots = 8; }}", "[8]").format(""), L2 + "pools.p.package"),
    _cfg("pool guarantee 150%", POOL.replace('"25%"', '"150%"').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee -5%", POOL.replace('"25%"', '"-5%"').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee nan%", POOL.replace('"25%"', '"nan%"').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee inf%", POOL.replace('"25%"', '"inf%"').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee %", POOL.replace('"25%"', '"%"').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee -3", POOL.replace('"25%"', '-3').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee 2.5", POOL.replace('"25%"', '2.5').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool guarantee true", POOL.replace('"25%"', 'true').format(""), L2 + "pools.p.groups.atlas"),
    _cfg("pool unknown group", POOL.replace("atlas =", "nogroup =").format(""), L2 + "pools.p.groups.nogroup"),
    _cfg("pool unknown vo", POOL.replace("groups = {{ atlas", "vos = {{ nope").format(""), L2 + "pools.p.vos.nope"),
    _cfg("pool no consumers", POOL.replace('groups = {{ atlas = "25%"; }};', "").format(""), L2 + "pools.p"),
    _cfg("pool consumers over 100%", POOL.replace('atlas = "25%";', 'atlas = "60%"; cms = "60%";').format(""),
         L2 + "pools.p"),
    _cfg("pool unknown node type", POOL.format('node_types = ["gpu"];'), L2 + "pools.p.node_types"),
    _cfg("pool min_mem -1", POOL.format("min_mem = -1;"), L2 + "pools.p.min_mem"),
    _cfg("pool min_slots -1", POOL.format("min_slots = -1;"), L2 + "pools.p.min_slots"),
    _cfg("pool loan unknown queue", 'queues = { q = {}; };\n' + POOL.format('loan = { queues = ["nope"]; };'),
         "site.cfg:3: pools.p.loan.queues"),
    _cfg("pool loan max_walltime -1h", POOL.format('loan = { queues = ["all"]; max_walltime = "-1h"; };'),
         L2 + "pools.p.loan.max_walltime"),
    _cfg("pool loan restricted string", POOL.format('loan = { restricted = "yes"; };'), L2 + "pools.p.loan.restricted"),
    _cfg("pool loan unknown key", POOL.format('loan = { walltime = 5; };'), L2 + "pools.p.loan.walltime"),
    _cfg("pools a list", 'pools = [1];\n', L2 + "pools"),
    _cfg("pool a number", 'pools = { p = 1; };\n', L2 + "pools.p"),
    _cfg("pool packages 10^30", POOL.replace('"25%"', '1000000000000000000000000000000').format(""),
         "", ACCEPTED),
    # -- downtimes --------------------------------------------------------------------------
    _ok("downtime plain", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; }; };\n'),
    _cfg("downtime end before start", 'downtimes = { d = { start = "2026-12-01T12:00"; end = "2026-12-01T08:00"; }; };\n',
         L2 + "downtimes.d.end"),
    _cfg("downtime end at start", 'downtimes = { d = { start = "2026-12-01T12:00"; end = "2026-12-01T12:00"; }; };\n',
         L2 + "downtimes.d.end"),
    _cfg("downtime 02/30", 'downtimes = { d = { start = "2026-02-30T08:00"; end = "2026-03-01T12:00"; }; };\n',
         L2 + "downtimes.d.start"),
    _cfg("downtime hour 25", 'downtimes = { d = { start = "2026-12-01T25:00"; end = "2026-12-02T12:00"; }; };\n',
         L2 + "downtimes.d.start"),
    _cfg("downtime offset +25:00", 'downtimes = { d = { start = "2026-12-01T08:00+25:00"; end = "2026-12-02T12:00"; }; };\n',
         L2 + "downtimes.d.start"),
    _cfg("downtime a date alone", 'downtimes = { d = { start = "2026-12-01"; end = "2026-12-02T12:00"; }; };\n',
         L2 + "downtimes.d.start"),
    _cfg("downtime a number", 'downtimes = { d = { start = 1795300000; end = 1795400000; }; };\n',
         L2 + "downtimes.d.start"),
    _cfg("downtime year 99999", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "99999-12-01T12:00"; }; };\n',
         L2 + "downtimes.d.end"),
    _cfg("downtime year 0001", 'downtimes = { d = { start = "0001-01-01T00:00"; end = "0001-01-01T12:00"; }; };\n',
         "", ACCEPTED),
    _cfg("downtime year 9999 end", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "9999-12-31T23:59+00:00"; }; };\n',
         "", ACCEPTED),
    _cfg("downtime no end", 'downtimes = { d = { start = "2026-12-01T08:00"; }; };\n', L2 + "downtimes.d"),
    _cfg("downtime empty", 'downtimes = { d = {}; };\n', L2 + "downtimes.d"),
    _cfg("downtime margin -5m", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; '
         'margin = "-5m"; }; };\n', L2 + "downtimes.d.margin"),
    _cfg("downtime margin 2d", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; '
         'margin = "2d"; }; };\n', L2 + "downtimes.d.margin"),
    _cfg("downtime hosts glob [", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; '
         'hosts = ["wn["]; }; };\n', L2 + "downtimes.d.hosts"),
    _cfg("downtime hosts empty pattern", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; '
         'hosts = [""]; }; };\n', L2 + "downtimes.d.hosts"),
    _cfg("downtime unknown node type", 'downtimes = { d = { start = "2026-12-01T08:00"; end = "2026-12-01T12:00"; '
         'node_types = ["gpu"]; }; };\n', L2 + "downtimes.d.node_types"),
    _cfg("downtime NUL in time", 'downtimes = { d = { start = "2026-12-01T08:00\\x00"; end = "2026-12-01T12:00"; }; };\n',
         "", ACCEPTED),
    _cfg("downtime unicode digits", 'downtimes = { d = { start = "\u0662\u0660\u0662\u0666-12-01T08:00"; '
         'end = "2026-12-01T12:00"; }; };\n', L2 + "downtimes.d.start"),
    _cfg("downtimes a list", 'downtimes = ["d"];\n', L2 + "downtimes"),
    _cfg("downtime 100k name", 'downtimes = { ' + "d" * 100000 + ' = { start = 1; }; };\n', L2 + "downtimes."),
    # -- load sources, rules, node_load ------------------------------------------------------
    _ok("load source file", 'load_sources = { s = { type = "file"; path = "/tmp/x"; }; };\n'),
    _cfg("load source type odd", 'load_sources = { s = { type = "snmp"; }; };\n', L2 + "load_sources.s.type"),
    _cfg("load source no type", 'load_sources = { s = { path = "/x"; }; };\n', L2 + "load_sources.s.type"),
    _cfg("load source prometheus no url", 'load_sources = { s = { type = "prometheus"; query = "up"; }; };\n',
         L2 + "load_sources.s"),
    _cfg("load source url ftp", 'load_sources = { s = { type = "prometheus"; url = "ftp://x"; query = "up"; }; };\n',
         L2 + "load_sources.s.url"),
    _cfg("load source url port 99999", 'load_sources = { s = { type = "prometheus"; url = "http://x:99999"; '
         'query = "up"; }; };\n', L2 + "load_sources.s.url"),
    _cfg("load source query empty", 'load_sources = { s = { type = "prometheus"; url = "http://x:9090"; '
         'query = " "; }; };\n', L2 + "load_sources.s.query"),
    _cfg("load source path empty", 'load_sources = { s = { type = "file"; path = ""; }; };\n', L2 + "load_sources.s.path"),
    _cfg("load source command empty", 'load_sources = { s = { type = "command"; command = []; }; };\n',
         L2 + "load_sources.s.command"),
    _cfg("load source command with spaces", 'load_sources = { s = { type = "command"; command = "/bin/probe -x"; }; };\n',
         L2 + "load_sources.s.command"),
    _cfg("load source command numbers", 'load_sources = { s = { type = "command"; command = [1]; }; };\n',
         L2 + "load_sources.s.command"),
    _cfg("load source interval 0", 'load_sources = { s = { type = "file"; path = "/x"; interval = 0; }; };\n',
         L2 + "load_sources.s.interval"),
    _cfg("load source interval 1e400s", 'load_sources = { s = { type = "file"; path = "/x"; interval = "1e400s"; }; };\n',
         L2 + "load_sources.s.interval"),
    _cfg("load source timeout over interval", 'load_sources = { s = { type = "file"; path = "/x"; interval = 10; '
         'timeout = 20; }; };\n', L2 + "load_sources.s.timeout"),
    _cfg("load source max_age under interval", 'load_sources = { s = { type = "file"; path = "/x"; interval = 60; '
         'max_age = 10; }; };\n', L2 + "load_sources.s.max_age"),
    _cfg("load source on_stale odd", 'load_sources = { s = { type = "file"; path = "/x"; on_stale = "panic"; }; };\n',
         L2 + "load_sources.s.on_stale"),
    _cfg("load source key on a command", 'load_sources = { s = { type = "command"; command = ["/bin/true"]; '
         'key = "a"; }; };\n', L2 + "load_sources.s.key"),
    _cfg("load source a number", 'load_sources = { s = 5; };\n', L2 + "load_sources.s"),
    _cfg("load rule unknown source", 'load_rules = { r = { source = "nope"; vos = ["atlas"]; high = 1; }; };\n',
         L2 + "load_rules.r.source"),
    _cfg("load rule low over high", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["atlas"]; low = 5; high = 1; }; };\n', "site.cfg:3: load_rules.r.low"),
    _cfg("load rule hysteresis -1", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["atlas"]; high = 1; hysteresis = -1; }; };\n',
         "site.cfg:3: load_rules.r.hysteresis"),
    _cfg("load rule hysteresis too wide", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["atlas"]; low = 0; high = 1; hysteresis = 5; }; };\n',
         "site.cfg:3: load_rules.r.hysteresis"),
    _cfg("load rule no targets", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; high = 1; }; };\n', "site.cfg:3: load_rules.r"),
    _cfg("load rule no high", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["atlas"]; }; };\n', "site.cfg:3: load_rules.r"),
    _cfg("load rule high 1e309", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["atlas"]; high = 1e309; }; };\n', "site.cfg:3: load_rules.r.high"),
    _cfg("load rule unknown vo", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; vos = ["nope"]; high = 1; }; };\n', "site.cfg:3: load_rules.r.vos"),
    _cfg("load rule groups empty name", 'load_sources = { s = { type = "file"; path = "/x"; }; };\n'
         'load_rules = { r = { source = "s"; groups = [""]; high = 1; }; };\n', "site.cfg:3: load_rules.r.groups"),
    _cfg("node_load per core 0", 'node_load = { max_load_per_core = 0; };\n', L2 + "node_load.max_load_per_core"),
    _cfg("node_load per core -1", 'node_load = { max_load_per_core = -1.0; };\n', L2 + "node_load.max_load_per_core"),
    _cfg("node_load free mem abc", 'node_load = { min_free_mem = "abc"; };\n', L2 + "node_load.min_free_mem"),
    _cfg("node_load free mem -2gb", 'node_load = { min_free_mem = "-2gb"; };\n', L2 + "node_load.min_free_mem"),
    _cfg("node_load unknown key", 'node_load = { max_load = 1; };\n', L2 + "node_load.max_load"),
    # -- syntax and structure -----------------------------------------------------------------
    _cfg("NUL byte in the file", VOS.encode() + b"scheduler = { interval = 60\x00; };\n", "site.cfg:2"),
    _cfg("BOM at the start", b"\xef\xbb\xbf" + VOS.encode(), "", ACCEPTED),
    _cfg("CRLF line ends", VOS.replace("\n", "\r\n").encode() + b"scheduler = { interval = x; };\r\n", "site.cfg:2"),
    _cfg("unicode key", 'sch\u00e9duler = { interval = 60; };\n', "site.cfg:2"),
    _cfg("hex integer", 'scheduler = { interval = 0x3c; };\n', "", ACCEPTED),
    _cfg("integer64 suffix", 'scheduler = { interval = 60L; };\n', "", ACCEPTED),
    _cfg("array of mixed types", 'hot = { users = ["a", 1]; };\n', L2 + "hot.users"),
    _cfg("include an empty name", '@include ""\n', L2),
    _cfg("include a missing file", '@include "nope.cfg"\n', "nope.cfg"),
    Case("include a FIFO", "config", REFUSED, lambda d: (os.mkfifo(d / "f"), ["check-config", "-c", str(d / "site.cfg")])[1],
         {"site.cfg": VOS + '@include "f"\n'}, L2 + '@include "f": is a'),
    _cfg("duplicate VO", 'vos = { x = { groups = ["x"]; }; };\n', L2 + "vos"),
    _cfg("string with newline escape", 'default_vo = "a\\nb";\n', L2 + "default_vo"),
    _cfg("colon for equals", 'scheduler : { interval : 60; };\n', "", ACCEPTED),
]

SIM = ["--nodes", "2", "--slots-per-node", "2", "--duration", "0.2", "--progress", "never"]
RUN = ["run", "--once", "--no-db", "--state-dir", "{d}/s"]
SIMURL = "sim://?nodes=2&slots=2&hours=1"
LOADS = 'load_sources = { s = { type = "file"; path = "/x"; }; };\nload_rules = { r = { source = "s"; vos = ["atlas"]; high = 1; }; };\n'


def _sim(name: str, extra: list[str], where: str, expect: str = REFUSED, **files: str | bytes) -> Case:
    return _cli(name, ["simulate", *SIM, *extra], where, expect, **files)


def _run(name: str, extra: list[str], where: str, expect: str = REFUSED, **files: str | bytes) -> Case:
    return _cli(name, [*RUN, *extra], where, expect, **files)


def _status(d: Path) -> None:
    """A status file of a small sim:// farm in d/s, for the status commands' cases."""
    import contextlib
    import io

    from mysched.cli.main import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["run", "--once", "--no-db", "--state-dir", str(d / "s"), "--server", SIMURL]) == 0


def _show(name: str, argv: list[str], where: str, expect: str = REFUSED) -> Case:
    """A status command against a fresh status file."""
    return Case(name, "cli", expect, lambda d: (_status(d), [a.replace("{d}", str(d)) for a in
                                                             [argv[0], "--state-dir", "{d}/s", *argv[1:]]])[1],
                {}, where)


def _fifo_at(name: str, argv: list[str], where: str, fifo: str = "f") -> Case:
    return Case(name, "cli", REFUSED, lambda d: (os.mkfifo(d / fifo), [a.replace("{d}", str(d)) for a in argv])[1],
                {}, where)


CASES += [
    # -- simulate ----------------------------------------------------------------------------
    _sim("nodes 0", ["--nodes", "0"], "--nodes"),
    _sim("nodes abc", ["--nodes", "abc"], "--nodes"),
    _sim("nodes 1e3", ["--nodes", "1e3"], "--nodes"),
    _sim("nodes empty", ["--nodes", ""], "--nodes"),
    _sim("nodes huge int", ["--nodes", "9" * 400], "--nodes"),
    _sim("nodes unicode digits", ["--nodes", "\u0662"], "", ACCEPTED),
    _sim("slots 0", ["--slots-per-node", "0"], "--slots-per-node"),
    _sim("slots -3", ["--slots-per-node", "-3"], "--slots-per-node"),
    _sim("interval nan", ["--interval", "nan"], "--interval"),
    _sim("interval -0", ["--interval", "-0"], "--interval"),
    _sim("interval 1e309", ["--interval", "1e309"], "--interval"),
    _sim("interval 0x10", ["--interval", "0x10"], "--interval"),
    _sim("duration 0", ["--duration", "0"], "--duration"),
    _sim("duration -0", ["--duration", "-0"], "--duration"),
    _sim("duration nan", ["--duration", "nan"], "--duration"),
    _sim("duration empty", ["--duration", ""], "--duration"),
    _sim("duration 100k chars", ["--duration", "1" * 100000], "--duration"),
    _sim("seed abc", ["--seed", "abc"], "--seed"),
    _sim("seed 2**70", ["--seed", str(2 ** 70)], "", ACCEPTED),
    _sim("seed -1", ["--seed", "-1"], "", ACCEPTED),
    _sim("mcore fraction nan", ["--mcore-fraction", "nan"], "--mcore-fraction"),
    _sim("mcore fraction -0.1", ["--mcore-fraction", "-0.1"], "--mcore-fraction"),
    _sim("mcore fraction inf", ["--mcore-fraction", "inf"], "--mcore-fraction"),
    _sim("mcore fraction -0", ["--mcore-fraction", "-0"], "", ACCEPTED),
    _sim("first 0", ["--first", "0"], "--first"),
    _cli("first huge", ["simulate", "--trace", "{d}/t.swf", "--first", "9" * 30, "--nodes", "2", "--slots-per-node", "2",
                        "--progress", "never"], "", ACCEPTED, **{"t.swf": SWF_OK}),
    _sim("from 02/30", ["--from", "2026-02-30"], "--from"),
    _sim("from empty", ["--from", ""], "--from"),
    _sim("from year 99999", ["--from", "99999-01-01"], "--from"),
    _sim("from unicode", ["--from", "\u0662\u0660\u0662\u0666-01-01"], "--from"),
    _sim("from 100k chars", ["--from", "2" * 100000], "--from"),
    _sim("policy bogus", ["--policy", "bogus"], "--policy"),
    _sim("format bogus", ["--format", "xml"], "--format"),
    _sim("bursts -1", ["--bursts", "-1"], "--bursts"),
    _sim("burst-every 0", ["--bursts", "2", "--burst-every", "0"], "--burst-every"),
    _sim("burst-every nan", ["--bursts", "2", "--burst-every", "nan"], "--burst-every"),
    _sim("burst-every without bursts", ["--burst-every", "2"], "--burst-every"),
    _sim("pack blank", ["--pack", " "], "--pack"),
    _sim("pack unknown VO", ["--pack", "nosuchvo"], "--pack"),
    _sim("pack unicode", ["--pack", "\u00e4tlas"], "--pack"),
    _sim("pack-policy without pack", ["--pack-policy", "relaxed"], "--pack-policy"),
    _sim("pack-ttl -1h", ["--pack", "atlas", "--pack-ttl", "-1h"], "--pack-ttl"),
    _sim("pack-ttl nan", ["--pack", "atlas", "--pack-ttl", "nan"], "--pack-ttl"),
    _sim("pack-ttl 0", ["--pack", "atlas", "--pack-ttl", "0"], "warning: packing class pack-atlas", WARNED),
    _sim("compare-packing without pack", ["--compare-packing"], "--compare-packing"),
    _sim("compare and policy", ["--compare", "--policy", "fifo"], "--policy"),
    _sim("frame-every 0", ["--farm-frames", "{d}/fr", "--frame-every", "0"], "--frame-every"),
    _sim("frame-every without frames", ["--frame-every", "5"], "--frame-every"),
    _sim("farm-frames a file", ["--farm-frames", "{d}/f.txt"], "f.txt", **{"f.txt": "x"}),
    _sim("farm-movie not gif", ["--farm-movie", "{d}/m.png"], "--farm-movie"),
    _sim("farm-movie in a missing dir", ["--farm-frames", "{d}/fr", "--farm-movie", "{d}/no/m.gif"], "no/m.gif"),
    _sim("json a directory", ["--json", "{d}"], "--json"),
    _sim("json in a missing dir", ["--json", "{d}/no/r.json"], "no/r.json"),
    _sim("json under /proc", ["--json", "/proc/nodir/r.json"], "/proc/nodir"),
    _sim("plot a directory", ["--plot", "{d}"], "--plot"),
    _sim("plot not png", ["--plot", "{d}/p.txt"], "--plot"),
    _sim("plot in a missing dir", ["--plot", "{d}/no/p.png"], "no/p.png"),
    _sim("vo-map no equals", ["--vo-map", "g2"], "g2: no such file, and not a GROUP=VO list"),
    _sim("vo-map empty group", ["--vo-map", "=atlas"], "--vo-map"),
    _sim("vo-map empty VO", ["--vo-map", "g2="], "--vo-map"),
    _sim("vo-map a directory", ["--vo-map", "{d}/"], "{d}/"),
    _sim("vo-map twice one group", ["--vo-map", "g2=atlas,g2=cms"], "--vo-map"),
    _sim("vo-map of the synthetic workload", ["--vo-map", "atlasprd=cms"], "", ACCEPTED),
    _sim("load-series missing", ["-c", "{d}/c.cfg", "--load-series", "{d}/none.csv"], "none.csv", **{"c.cfg": VOS + LOADS}),
    _sim("load-series a directory", ["-c", "{d}/c.cfg", "--load-series", "{d}"], "{d}", **{"c.cfg": VOS + LOADS}),
    _sim("load-series garbage", ["-c", "{d}/c.cfg", "--load-series", "{d}/l.csv"], "l.csv",
         **{"l.csv": b"\x00\xff" * 100, "c.cfg": VOS + LOADS}),
    _sim("load-series empty", ["-c", "{d}/c.cfg", "--load-series", "{d}/l.csv"], "l.csv", **{"l.csv": "", "c.cfg": VOS + LOADS}),
    Case("load-series a FIFO", "cli", REFUSED, lambda d: (os.mkfifo(d / "f"), [a.replace("{d}", str(d)) for a in [
        "simulate", *SIM, "-c", "{d}/c.cfg", "--load-series", "{d}/f"]])[1], {"c.cfg": VOS + LOADS}, "{d}/f"),
    _sim("config a directory", ["-c", "{d}"], "{d}"),
    _sim("config /dev/null", ["-c", "/dev/null"], "/dev/null"),
    _sim("config missing", ["-c", "{d}/none.cfg"], "none.cfg"),
    _cli("trace /dev/null", ["simulate", "--trace", "/dev/null", "--progress", "never"], "/dev/null"),
    _cli("trace an empty directory", ["simulate", "--trace", "{d}/", "--progress", "never"], "{d}"),
    _sim("split-multicore with compare", ["--split-multicore", "--compare"], "", ACCEPTED),
    # -- run ---------------------------------------------------------------------------------
    _run("server sim with a host", ["--server", "sim://host?nodes=2"], "sim://"),
    _run("server sim parameter twice", ["--server", "sim://?nodes=2&nodes=3"], "nodes"),
    _run("server sim slots 0", ["--server", "sim://?nodes=2&slots=0"], "slots"),
    _run("server sim seed abc", ["--server", "sim://?nodes=2&seed=abc"], "seed"),
    _run("server sim seed huge", ["--server", "sim://?nodes=2&seed=" + "9" * 40], "seed"),
    _run("server sim backlog -1", ["--server", "sim://?nodes=2&backlog=-1"], "backlog"),
    _run("server sim hours 1e309", ["--server", "sim://?nodes=2&hours=1e309"], "hours"),
    _run("server sim speed 1e-300", ["--server", "sim://?nodes=2&hours=1&speed=1e-300"], "", ACCEPTED),
    _run("server sim unicode value", ["--server", "sim://?nodes=\u0662"], "nodes"),
    _run("server sim percent junk", ["--server", "sim://?nodes=%ff"], "nodes"),
    _run("server sim fragment", ["--server", "sim://?nodes=2#x"], "", ACCEPTED),
    _run("server sim 100k", ["--server", "sim://?nodes=" + "1" * 100000], "nodes"),
    _run("server torque port 0", ["--server", "torque://h:0"], "torque://h:0"),
    _run("server torque 100k", ["-c", "{d}/c.cfg", "--server", "torque://" + "h" * 100000], "torque://hhh", **{"c.cfg": VOS}),
    _run("server just spaces", ["--server", "   "], "--server"),
    _run("server unicode", ["-c", "{d}/c.cfg", "--server", "torque://\u00fcber"], "torque://\u00fcber", **{"c.cfg": VOS}),
    _run("server http", ["--server", "http://x"], "http://x"),
    _run("db empty", ["--server", SIMURL, "--db", ""], "--db"),
    _cli("db and no-db", ["run", "--once", "--state-dir", "{d}/s", "--server", SIMURL, "--no-db", "--db",
                          "sqlite:///{d}/h.db"], "--db"),
    _cli("db a directory", ["run", "--once", "--state-dir", "{d}/s", "--server", SIMURL, "--db", "sqlite:///{d}"], "{d}"),
    _cli("db unknown kind", ["run", "--once", "--state-dir", "{d}/s", "--server", SIMURL, "--db", "nosuch://x"], "nosuch"),
    _cli("state-dir a file", ["run", "--once", "--no-db", "--state-dir", "{d}/f", "--server", SIMURL], "{d}/f",
         f="x"),
    _cli("state-dir under /proc", ["run", "--once", "--no-db", "--state-dir", "/proc/nodir/s", "--server", SIMURL],
         "/proc/nodir"),
    _run("metrics address odd", ["--server", SIMURL, "--metrics-address", "nowhere"], "--metrics-address"),
    _run("metrics port 99999", ["--server", SIMURL, "--metrics-address", "127.0.0.1:99999"], "--metrics-address"),
    _run("event address odd", ["--server", SIMURL, "--event-address", "a:b:c"], "--event-address"),
    _run("event port unicode", ["--server", SIMURL, "--event-address", "127.0.0.1:\u0661"], "--event-address"),
    _run("log level odd", ["--server", SIMURL, "--log-level", "loud"], "--log-level"),
    _run("config a directory", ["--server", SIMURL, "-c", "{d}"], "{d}"),
    _run("config empty name", ["--server", SIMURL, "-c", ""], "--config"),
    _cli("run without once or server", ["run", "--no-db", "--state-dir", "{d}/s", "-c", "{d}/none.cfg"], "none.cfg"),
    # -- check-config --------------------------------------------------------------------------
    _cli("check-config a directory", ["check-config", "-c", "{d}"], "{d}"),
    _cli("check-config /dev/null", ["check-config", "-c", "/dev/null"], "/dev/null"),
    _fifo_at("check-config a FIFO", ["check-config", "-c", "{d}/f"], "{d}/f"),
    _cli("check-config server odd", ["check-config", "-c", "{d}/c.cfg", "--server", "bogus://"], "bogus://",
         **{"c.cfg": VOS}),
    _cli("check-config server sim too big", ["check-config", "-c", "{d}/c.cfg", "--server",
                                             "sim://?nodes=100000&slots=4096"], "nodes x slots", **{"c.cfg": VOS}),
    _cli("check-config missing", ["check-config", "-c", "{d}/none.cfg"], "none.cfg"),
    _cli("check-config long name", ["check-config", "-c", "{d}/" + "n" * 300], "file name too long"),
    # -- status commands ------------------------------------------------------------------------
    _show("jobs empty user", ["jobs", "-u", ""], "--user"),
    _show("jobs unicode user", ["jobs", "-u", "\u00fcser"], "", ACCEPTED),
    _show("jobs 100k user", ["jobs", "-u", "u" * 100000], "", ACCEPTED),
    _show("jobs state bogus", ["jobs", "--state", "bogus"], "--state"),
    _show("jobs max-age 1e309", ["jobs", "--max-age", "1e309"], "--max-age"),
    _show("jobs max-age -0", ["jobs", "--max-age", "-0"], "--max-age"),
    _show("jobs max-age empty", ["jobs", "--max-age", ""], "--max-age"),
    _show("why empty id", ["why", ""], "JOBID"),
    _show("why unknown id", ["why", "nosuch.job"], "nosuch.job"),
    _show("why 100k id", ["why", "j" * 100000], "jjj"),
    _show("why unicode id", ["why", "\u00e9.sim"], "\u00e9.sim"),
    _show("when unknown id", ["when", "nosuch.job"], "nosuch.job"),
    _show("when empty id", ["when", ""], "JOBID"),
    _show("nodes unknown node", ["nodes", "nosuchnode"], "nosuchnode"),
    _show("nodes empty type", ["nodes", "--type", ""], "--type"),
    _show("nodes state bogus", ["nodes", "--state", "bogus"], "--state"),
    _show("shares both", ["shares", "--groups", "--users"], "", ACCEPTED),
    _show("pools json", ["pools", "--json"], "", ACCEPTED),
    _cli("jobs state-dir a file", ["jobs", "--state-dir", "{d}/f"], "{d}/f", f="x"),
    # -- bench -----------------------------------------------------------------------------------
    _cli("bench nodes 0", ["bench", "--nodes", "0"], "--nodes"),
    _cli("bench repeat 0", ["bench", "--repeat", "0"], "--repeat"),
    _cli("bench repeat huge", ["bench", "--nodes", "2", "--running", "1", "--queued", "1", "--repeat", "9" * 20],
         "--repeat"),
    _cli("bench running over slots", ["bench", "--nodes", "2", "--slots-per-node", "2", "--running", "5",
                                      "--queued", "1", "--repeat", "1"], "--running"),
    _cli("bench mcore nan", ["bench", "--mcore-fraction", "nan"], "--mcore-fraction"),
    _cli("bench json a directory", ["bench", "--nodes", "2", "--running", "1", "--queued", "1", "--repeat", "1",
                                    "--json", "{d}"], "--json"),
    _cli("bench json under /proc", ["bench", "--nodes", "2", "--running", "1", "--queued", "1", "--repeat", "1",
                                    "--json", "/proc/nodir/b.json"], "/proc/nodir"),
    # -- history, usage ---------------------------------------------------------------------------
    _cli("prune keep-cycles -1h", ["history", "prune", "--db", "sqlite:///{d}/h.db", "--keep-cycles", "-1h"],
         "--keep-cycles"),
    _cli("prune keep-jobs nan", ["history", "prune", "--db", "sqlite:///{d}/h.db", "--keep-jobs", "nan"],
         "--keep-jobs"),
    _cli("prune keep-jobs 1s", ["history", "prune", "--db", "sqlite:///{d}/h.db", "--keep-jobs", "1s"], "keep"),
    _cli("import no paths", ["history", "import", "--db", "sqlite:///{d}/h.db"], "import"),
    _cli("import /dev/null", ["history", "import", "--db", "sqlite:///{d}/h.db", "/dev/null"], "/dev/null"),
    _cli("import progress bogus", ["history", "import", "--progress", "sometimes", "{d}"], "--progress"),
    _cli("usage since 02/30", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "2026-02-30"], "--since"),
    _cli("usage since empty", ["usage", "--db", "sqlite:///{d}/h.db", "--since", ""], "--since"),
    _cli("usage since year 99999", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "99999-01-01"], "--since"),
    _cli("usage since year 1", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "0001-01-01"], "{d}/h.db"),
    _cli("usage until before since", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "2026-02-01",
                                      "--until", "2026-01-01"], "--until"),
    _cli("usage until equals since", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "2026-02-01",
                                      "--until", "2026-02-01"], "--until"),
    _cli("usage since with offset", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "2026-02-01T00:00+25:00"],
         "--since"),
    _cli("usage since hour 24", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "2026-02-01T24:00"], "--since"),
    _cli("usage by bogus", ["usage", "--db", "sqlite:///{d}/h.db", "--by", "host"], "--by"),
    _cli("usage db a directory", ["usage", "--db", "sqlite:///{d}"], "{d}"),
    _cli("usage db a text file", ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db", **{"h.db": "not a database\n"}),
    _cli("usage db empty file", ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db", **{"h.db": ""}),
    _cli("usage db random bytes", ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db",
         **{"h.db": b"SQLite format 3\x00" + bytes(range(256)) * 16}),
    _fifo_at("usage db a FIFO", ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db", "h.db"),
    _cli("usage db unknown kind", ["usage", "--db", "nosuch://x"], "nosuch"),
    _cli("usage db empty", ["usage", "--db", ""], "--db"),
    _cli("suspects db a directory", ["history", "suspects", "--db", "sqlite:///{d}"], "{d}"),
    _cli("suspects db a text file", ["history", "suspects", "--db", "sqlite:///{d}/h.db"], "{d}/h.db",
         **{"h.db": "not a database\n"}),
    _cli("prune db a text file", ["history", "prune", "--db", "sqlite:///{d}/h.db", "--keep-cycles", "1d"], "{d}/h.db",
         **{"h.db": "not a database\n"}),
    _cli("import into a text file", ["history", "import", "--db", "sqlite:///{d}/h.db", "{d}/a"], "{d}/h.db",
         **{"h.db": "not a database\n", "a": "11/22/2026 10:00:00;Q;1.s;queue=q\n"}),
]

S_REC = "11/22/2026 10:00:00;S;{id};user=u group=g queue=q start=1795300000 owner=u@ui exec_host=wn01/0\n"
E_REC = ("11/22/2026 10:10:00;E;{id};user=u group=g jobname=j queue=q start=1795300000 owner=u@ui exec_host=wn01/0 "
         "end=1795300600 Exit_status=0{more}\n")


def _acct(name: str, content: str | bytes, where: str, expect: str = WARNED, *extra: str) -> Case:
    return Case(name, "accounting", expect, lambda d: ["history", "import", "--db", f"sqlite:///{d}/h.db",
                                                        "--progress", "never", *extra, str(d / "20261122")],
                {"20261122": content}, where)


def _pair(name: str, more: str, where: str = "", expect: str = ACCEPTED, jid: str = "1.s") -> Case:
    """An S and E record of one job, the E record with `more` at its end."""
    return _acct(name, S_REC.format(id=jid) + E_REC.format(id=jid, more=more), where, expect)


def _db_of(d: Path, sql: str) -> None:
    con = sqlite3.connect(d / "h.db")
    con.executescript(sql)
    con.commit()
    con.close()


def _db_case(name: str, sql: str, argv: list[str], where: str, **files: str) -> Case:
    return Case(name, "cli", REFUSED, lambda d: (_db_of(d, sql), [a.replace("{d}", str(d)) for a in argv])[1],
                dict(files), where)


def _locked(d: Path, argv: list[str]) -> list[str]:
    """A database another process holds an exclusive lock on (kept for the test's life)."""
    import threading

    from mysched.cli.main import main
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["history", "import", "--db", f"sqlite:///{d}/h.db", "--progress", "never", str(d / "a")])
    con = sqlite3.connect(d / "h.db", check_same_thread=False, isolation_level=None)
    con.execute("BEGIN EXCLUSIVE")
    _LOCKS.append(con)
    threading.Timer(60, con.close).start()
    return [a.replace("{d}", str(d)) for a in argv]


_LOCKS: list = []
GOODLOG = S_REC.format(id="1.s") + E_REC.format(id="1.s", more="")

CASES += [
    # -- accounting lines ----------------------------------------------------------------------
    _pair("value with = inside", " jobname=a=b=c"),
    _pair("account with = inside", " account=x=y"),
    _pair("duplicated key end", " end=1795300900"),
    _pair("duplicated key user (pbs_server's first one counts)", " user=mallory"),
    _pair("huge cput", " resources_used.cput=999999999999:00:00"),
    _pair("huge walltime used", " resources_used.walltime=999999999999:00:00"),
    _pair("huge slots", " total_execution_slots=99999999999999999999", "20261122:2", WARNED),
    _pair("negative slots", " total_execution_slots=-4"),
    _pair("unicode slots", " total_execution_slots=\u00b2"),
    _pair("huge exit status", " Exit_status=99999999999999999999999", "20261122:2: garbled Exit_status", WARNED),
    _pair("negative exit status", " Exit_status=-11"),
    _pair("mem 1zb", " resources_used.mem=1zb"),
    _pair("mem unicode", " resources_used.mem=\u00b2kb"),
    _pair("unicode user", "", "", ACCEPTED, "1.s") if False else
    _acct("unicode user", S_REC.format(id="1.s").replace("user=u", "user=\u00fc") +
          E_REC.format(id="1.s", more="").replace("user=u", "user=\u00fc"), "", ACCEPTED),
    _acct("negative start", S_REC.format(id="1.s").replace("1795300000", "-5") +
          E_REC.format(id="1.s", more="").replace("start=1795300000", "start=-5"), "20261122:2"),
    _acct("start nan", S_REC.format(id="1.s").replace("1795300000", "nan") +
          E_REC.format(id="1.s", more="").replace("start=1795300000", "start=nan"), "20261122:2"),
    _acct("end 1e30", S_REC.format(id="1.s") + E_REC.format(id="1.s", more="").replace("end=1795300600", "end=1e30"),
          "20261122:2"),
    _acct("end negative", S_REC.format(id="1.s") + E_REC.format(id="1.s", more="").replace("end=1795300600", "end=-1"),
          "20261122:2"),
    _acct("date 02/30/2026", "02/30/2026 10:00:00;E;1.s;user=u group=g start=1795300000 end=1795300600\n" + GOODLOG,
          "20261122:1"),
    _acct("date 13/01/2026", "13/01/2026 10:00:00;E;1.s;user=u group=g start=1795300000 end=1795300600\n" + GOODLOG,
          "20261122:1"),
    _acct("time 25:61:61", "11/22/2026 25:61:61;E;1.s;user=u group=g start=1795300000 end=1795300600\n" + GOODLOG,
          "20261122:1"),
    _acct("date in 2999", GOODLOG.replace("11/22/2026", "11/22/2999"), "", ACCEPTED),
    _acct("future start and end", S_REC.format(id="1.s").replace("1795300000", "32503680000") +
          E_REC.format(id="1.s", more="").replace("start=1795300000", "start=32503680000")
          .replace("end=1795300600", "end=32503680600"), "20261122:2"),
    _acct("record type lower case", GOODLOG.replace(";E;", ";e;"), "", ACCEPTED),
    _acct("unknown record type", GOODLOG + "11/22/2026 10:20:00;Z;1.s;x=y\n", "", ACCEPTED),
    _acct("empty job id", GOODLOG + "11/22/2026 10:20:00;E;;user=u group=g start=1795300000 end=1795300600\n",
          "20261122:3"),
    _acct("job id with ;", GOODLOG + "11/22/2026 10:20:00;E;1;2.s;user=u group=g start=1795300000 end=1795300600\n",
          "20261122:3"),
    _acct("NUL in a record", GOODLOG.replace("jobname=j", "jobname=j\x00k"), "20261122:2: NUL bytes", WARNED),
    _acct("CRLF line ends", GOODLOG.replace("\n", "\r\n"), "", ACCEPTED),
    _acct("a field without =", GOODLOG.replace("jobname=j", "jobname"), "", ACCEPTED),
    _acct("100k field", GOODLOG.replace("jobname=j", "jobname=" + "j" * 100000), "", ACCEPTED),
    _acct("the same E twice", GOODLOG + E_REC.format(id="1.s", more=""), "", ACCEPTED),
    _acct("only an S record", S_REC.format(id="1.s"), "", ACCEPTED),
    _acct("latin-1 bytes", GOODLOG.encode() + "11/22/2026 10:20:00;E;2.s;user=caf\xe9\n".encode("latin-1"), "20261122:3"),
    # -- databases ---------------------------------------------------------------------------
    _db_case("usage of another schema", "CREATE TABLE t(x); INSERT INTO t VALUES (1);",
             ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db"),
    _db_case("suspects of another schema", "CREATE TABLE t(x);", ["history", "suspects", "--db", "sqlite:///{d}/h.db"],
             "{d}/h.db"),
    _db_case("import into another schema", "CREATE TABLE jobs(x);",
             ["history", "import", "--db", "sqlite:///{d}/h.db", "{d}/a"], "h.db", a=GOODLOG),
    _db_case("usage of a newer schema", "PRAGMA user_version = 999; CREATE TABLE t(x);",
             ["usage", "--db", "sqlite:///{d}/h.db"], "{d}/h.db"),
    _db_case("usage of a newer schema version", "CREATE TABLE schema_version(version INTEGER NOT NULL); "
             "INSERT INTO schema_version VALUES (999);", ["usage", "--db", "sqlite:///{d}/h.db"], "newer than this mysched"),
    _db_case("import into a newer schema version", "CREATE TABLE schema_version(version INTEGER NOT NULL); "
             "INSERT INTO schema_version VALUES (999);", ["history", "import", "--db", "sqlite:///{d}/h.db", "{d}/a"],
             "newer than this mysched", a=GOODLOG),
    _db_case("schema version of text", "CREATE TABLE schema_version(version); INSERT INTO schema_version VALUES ('x');",
             ["usage", "--db", "sqlite:///{d}/h.db"], "not a version number"),
    _db_case("run on another application's database", "CREATE TABLE cycles(x);",
             ["run", "--once", "--server", SIMURL, "--state-dir", "{d}/s", "--db", "sqlite:///{d}/h.db"],
             "holds tables of another application (cycles)"),
    _db_case("prune of another application's database", "CREATE TABLE t(x);",
             ["history", "prune", "--db", "sqlite:///{d}/h.db", "--keep-cycles", "1d"], "{d}/h.db"),
    Case("usage of a locked database (readers go on)", "cli", ACCEPTED,
         lambda d: _locked(d, ["usage", "--db", "sqlite:///{d}/h.db", "--by", "user"]), {"a": GOODLOG}, ""),
    Case("import into a locked database", "cli", REFUSED,
         lambda d: _locked(d, ["history", "import", "--db", "sqlite:///{d}/h.db", "--progress", "never", "{d}/b"]),
         {"a": GOODLOG, "b": GOODLOG.replace("1.s", "2.s")}, "h.db"),
]

CASES += [
    # -- sim:// through check-config --server and run -------------------------------------------
    *(_cli(f"check-config --server {u}", ["check-config", "-c", "{d}/c.cfg", "--server", u], w, **{"c.cfg": VOS})
      for u, w in (("sim://?nodes=-1", "nodes"), ("sim://?slots=1e3", "slots"), ("sim://?speed=-5", "speed"),
                   ("sim://?hours=0", "hours"), ("sim://?backlog=inf", "backlog"), ("sim://?seed=1.5", "seed"),
                   ("sim://?nodes=2&bogus=1", "bogus"), ("sim://?=", "unknown parameter"),
                   ("sim://?nodes=2&nodes=2", "given twice"), ("sim:///path", "names no host or path"),
                   ("sim://?nodes=" + "9" * 30, "nodes"), ("sim://?nodes=%00", "nodes"),
                   ("torque://h:65536", "torque://h:65536"), ("torque://[::1]:99", "", ))
      if w),
    _cli("check-config --server ipv6 with port", ["check-config", "-c", "{d}/c.cfg", "--server", "torque://[::1]:1"],
         "[::1]:1", **{"c.cfg": VOS}),
    _run("server sim speed 1e7", ["--server", "sim://?nodes=2&hours=1&speed=1e7"], "speed"),
    _run("server sim backlog 1e9", ["--server", "sim://?nodes=2&hours=1&backlog=1e9"], "backlog"),
    _run("server sim hours 9000", ["--server", "sim://?nodes=2&hours=9000"], "hours"),
    _run("server sim seed -5", ["--server", "sim://?nodes=2&slots=2&hours=1&seed=-5"], "", ACCEPTED),
    _run("server sim all defaults", ["--server", "sim://"], "", ACCEPTED),
    _run("server sim upper case", ["-c", "{d}/c.cfg", "--server", "SIM://?nodes=2"], "unknown server scheme 'SIM'",
         **{"c.cfg": VOS}),
    _run("server sim dry run", ["--dry-run", "--server", SIMURL], "", ACCEPTED),
]

# == the test (new blocks of CASES go above) ===============================================


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_odd_input_is_refused_in_one_located_line_or_accepted_with_a_meaning(case, tmp_path):
    outcome, rc, out, err = run_case(case, tmp_path)
    assert outcome == case.expect, (outcome, rc, out[-500:], err[-500:])
    assert case.where.replace("{d}", str(tmp_path)) in err, err[-600:]
    assert not PYTHON_WORDS.search(err), err[-600:]
    for line in err.splitlines():
        assert len(line) < 1000, line[:300]
    if outcome == ACCEPTED:
        assert "warning" not in err and "error" not in err, err[-600:]
