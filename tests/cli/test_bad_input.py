"""Bad input through the command line, as an admin or user would give it: configurations,
traces, accounting logs, URLs and arguments. Each case is refused with an error that names
its file, line, key or argument, or accepted with a located warning that is counted --
never an internal error, never a silent loss. `tools/badinput.py` tallies the outcomes.
"""

from __future__ import annotations

import contextlib
import gzip
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pytest

from mysched.cli.main import main

REFUSED, WARNED = "refused", "warned"


@dataclass(frozen=True)
class Case:
    name: str
    kind: str
    """config, trace, accounting, cli"""
    expect: str
    """REFUSED (exit != 0, located error) or WARNED (exit 0, located warning counted)"""
    argv: Callable[[Path], list[str]]
    files: dict[str, str | bytes]
    where: str
    """what the message must name: "{file}", "{file}:N", a key or an argument"""


def _cfg(name: str, text: str, where: str) -> Case:
    return Case(name, "config", REFUSED, lambda d: ["check-config", "-c", str(d / "site.cfg")],
                {"site.cfg": text}, where)


def _trace(name: str, text: str | bytes, where: str, expect: str = WARNED) -> Case:
    return Case(name, "trace", expect, lambda d: ["simulate", "--trace", str(d / "t.swf"), "--nodes", "2",
                                                   "--slots-per-node", "4", "--progress", "never"], {"t.swf": text}, where)


def _acct(name: str, line: str | bytes, where: str, expect: str = WARNED) -> Case:
    return Case(name, "accounting", expect, lambda d: ["history", "import", "--db", f"sqlite:///{d}/h.db",
                                                        str(d / "20261122")], {"20261122": line}, where)


def _cli(name: str, argv: list[str], where: str) -> Case:
    return Case(name, "cli", REFUSED, lambda d: [a.replace("{d}", str(d)) for a in argv], {}, where)


SWF_OK = "1 0 10 100 4 -1 -1 4 200 -1 1 1 1 -1 1 -1 -1 -1\n"
E = "11/22/2026 10:00:00;E;{id};"
GOOD_E = "user=u group=g queue=q start=1795300000 end=1795300600"

CASES = [
    # -- configuration ----------------------------------------------------------------------
    _cfg("syntax error", 'vos = { atlas = { share = 50 };\n', "site.cfg:"),
    _cfg("unknown key", 'scheduler = { intervall = 60; };\n', "scheduler.intervall"),
    _cfg("wrong type", 'scheduler = { interval = "soon"; };\n', "scheduler.interval"),
    _cfg("negative share", 'vos = { a = { groups = ["a"]; share = -5; }; };\n', "vos.a.share"),
    _cfg("shares over 100", 'vos = { a = { groups = ["a"]; share = 70; }; b = { groups = ["b"]; share = 70; }; };\n',
         "site.cfg:"),
    _cfg("zero interval", 'scheduler = { interval = 0; };\n', "scheduler.interval"),
    _cfg("absurd interval", 'scheduler = { interval = 1000000000000; };\n', "scheduler.interval"),
    _cfg("min_interval over interval", 'scheduler = { interval = 10; min_interval = 20; };\n',
         "scheduler.min_interval"),
    _cfg("bad metrics address", 'daemon = { metrics_address = "not an address"; };\n', "daemon.metrics_address"),
    _cfg("bad leader timeout", 'daemon = { leader_timeout = 0.5; };\n', "daemon.leader_timeout"),
    _cfg("bogus server url", 'server = { url = "bogus://x"; };\n', "server.url"),
    _cfg("database not a url", 'history = { database = "not a url"; };\n', "history.database"),
    _cfg("name_format bad field", 'farm = { name_format = "wn{idx:04d}"; };\n', "farm.name_format"),
    _cfg("name_format huge width", 'farm = { name_format = "wn{index:99999999999d}"; };\n', "farm.name_format"),
    _cfg("name_format repeats names", 'farm = { nodes = 20; name_format = "wn{index!s:.1}"; };\n',
         "farm.name_format: gives nodes 1 and 10 the same name"),
    Case("name_format repeats past the config's farm", "cli", REFUSED,
         lambda d: ["simulate", "-c", str(d / "site.cfg"), "--nodes", "20", "--duration", "1", "--progress", "never"],
         {"site.cfg": 'farm = { nodes = 9; name_format = "wn{index:.0e}"; };\n'}, "farm.name_format"),
    _cfg("farm too large", 'farm = { nodes = 1000000000; };\n', "farm.nodes"),
    _cfg("nested 5000 deep", "a = " + "{ b = " * 5000 + "1" + "; }" * 5000 + ";\n", "site.cfg"),
    _cfg("missing include", '@include "nowhere.cfg"\n', "nowhere.cfg"),
    _cfg("duplicate setting", 'scheduler = { interval = 60; interval = 30; };\n', "duplicate setting"),
    _cfg("group in two VOs", 'vos = { a = { groups = ["g"]; share = 10; }; b = { groups = ["g"]; share = 10; }; };\n',
         "site.cfg:"),
    _cfg("VO without group", 'vos = { a = { share = 10; }; };\n', "vos.a"),
    _cfg("bad packing policy", 'packing = { mc = { policy = "tight"; queues = ["q"]; }; };\n', "packing.mc"),
    _cfg("binary file", "\x00\x01\x02garbage\xff", "site.cfg"),
    _cfg("passwd file", "root:x:0:0:root:/root:/bin/bash\n", "site.cfg:1"),
    # -- traces -----------------------------------------------------------------------------
    _trace("negative runtime", SWF_OK + "2 5 10 -100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n", "t.swf:2"),
    _trace("NaN field", SWF_OK + "2 5 10 nan 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n", "t.swf:2"),
    _trace("no processors", SWF_OK + "2 5 10 100 0 -1 -1 0 200 -1 1 1 1 -1 1 -1 -1 -1\n", "t.swf:2"),
    _trace("duplicate job number", SWF_OK + SWF_OK, "t.swf:2"),
    _trace("text in a field", SWF_OK + "2 5 10 100 two -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n", "t.swf:2"),
    _trace("short line", SWF_OK + "2 5 10\n", "t.swf:2"),
    _trace("nothing replayable", "; only a header\n", "t.swf", expect=REFUSED),
    _trace("binary trace", b"\x00\xff\xfe" * 100, "t.swf", expect=REFUSED),
    _trace("absurd submit time", SWF_OK + "2 99999999999999 10 100 2 -1 -1 2 200 -1 1 1 1 -1 1 -1 -1 -1\n",
           "t.swf:2"),
    *(Case(f"accounting trace qtime={q}", "trace", WARNED,
           lambda d: ["simulate", "--trace", str(d / "20261122"), "--nodes", "2", "--slots-per-node", "2",
                      "--progress", "never"],
           {"20261122": E.format(id="1.s") + f"user=u group=g qtime={q} start=1795300000 end=1795300600\n"
            + E.format(id="2.s") + GOOD_E + "\n"}, f"20261122:1: job 1.s: qtime={q}")
      for q in ("nan", "-inf", "-99999999999")),
    Case("missing trace", "trace", REFUSED, lambda d: ["simulate", "--trace", str(d / "none.swf")], {}, "none.swf"),
    # -- accounting -------------------------------------------------------------------------
    _acct("bad time stamp", "yesterday;E;1.s;" + GOOD_E + "\n", "20261122", REFUSED),  # no record at all
    _acct("no user", E.format(id="1.s") + "group=g queue=q start=1795300000 end=1795300600\n", "20261122:1"),
    _acct("no group", E.format(id="1.s") + "user=u queue=q start=1795300000 end=1795300600\n", "20261122:1"),
    _acct("end in the far future", E.format(id="1.s") + "user=u group=g start=1795300000 end=99999999999\n",
          "20261122:1"),
    _acct("end before start", E.format(id="1.s") + "user=u group=g start=1795300600 end=1795300000\n", "20261122:1"),
    _acct("garbled cput", E.format(id="1.s") + GOOD_E + " resources_used.cput=zz:yy\n", "20261122:1"),
    _acct("negative cput", E.format(id="1.s") + GOOD_E + " resources_used.cput=-5\n", "20261122:1"),
    _acct("garbled exit status", E.format(id="1.s") + GOOD_E + " Exit_status=?\n", "20261122:1"),
    _acct("too few fields", "11/22/2026 10:00:00;E\n", "20261122:1"),
    _acct("binary line", b"\x00\xff;E;\x01\n", "20261122", REFUSED),  # no record at all
    _acct("zstd file", b"\x28\xb5\x2f\xfd" + bytes(range(40)), "20261122"),
    _acct("gzip file cut short", gzip.compress((E.format(id="1.s") + GOOD_E + "\n").encode())[:-9], "20261122"),
    # -- arguments, URLs ------------------------------------------------------------------------
    _cli("negative queued", ["bench", "--queued", "-5"], "--queued"),
    _cli("huge simulated farm", ["simulate", "--nodes", "1000000000"], "--nodes"),
    _cli("negative duration", ["simulate", "--duration", "-1"], "--duration"),
    _cli("fraction over 1", ["simulate", "--mcore-fraction", "2"], "--mcore-fraction"),
    _cli("zero interval", ["simulate", "--interval", "0"], "--interval"),
    _cli("first N negative", ["simulate", "--first", "-3"], "--first"),
    _cli("sim url too large", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server", "sim://?nodes=100000000"],
         "sim://"),
    _cli("sim url bad value", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server", "sim://?nodes=abc"],
         "sim://"),
    _cli("infinite duration", ["simulate", "--duration", "inf"], "--duration"),
    _cli("duration beyond floats", ["simulate", "--duration", "1e308"], "--duration"),
    _cli("duration over a year", ["simulate", "--duration", "20000", "--nodes", "1", "--slots-per-node", "1",
                                  "--interval", "86400"], "--duration"),
    _cli("infinite interval", ["simulate", "--duration", "1", "--interval", "inf"], "--interval"),
    _cli("interval over a day", ["simulate", "--duration", "1", "--interval", "1e300"], "--interval"),
    _cli("farm over a million slots", ["simulate", "--duration", "0.01", "--nodes", "1000", "--slots-per-node", "1001"],
         "--slots-per-node"),
    _cli("a burst every nanosecond", ["simulate", "--duration", "1", "--bursts", "5", "--burst-every", "1e-9"],
         "--burst-every"),
    _cli("bursts over a million", ["simulate", "--duration", "1", "--bursts", "20000000"], "--bursts"),
    _cli("sim url infinite speed", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server",
                                    "sim://?speed=inf&nodes=2"], "speed must be"),
    _cli("sim url hours nan", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server", "sim://?hours=nan"],
         "hours must be a positive number"),
    _cli("sim url speed nan", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server",
                               "sim://?speed=nan&nodes=2&hours=1"], "speed must be"),
    _cli("sim url backlog nan", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server",
                                 "sim://?backlog=nan&nodes=2&hours=1"], "backlog must be"),
    _cli("empty server url", ["run", "--once", "--no-db", "--state-dir", "{d}/s", "--server", ""], "--server"),
    _cli("empty config file name", ["simulate", "-c", "", "--duration", "1"], "--config"),
    _cli("empty pack name", ["simulate", "--pack", "", "--duration", "1", "--nodes", "2"], "--pack"),
    _cli("empty bench json name", ["bench", "--nodes", "2", "--running", "1", "--queued", "1", "--repeat", "1",
                                   "--json", ""], "--json"),
    _cli("pack-ttl without --pack", ["simulate", "--duration", "1", "--nodes", "2", "--pack-ttl", "5m"], "--pack-ttl"),
    _cli("pack-ttl of a relaxed class", ["simulate", "--duration", "1", "--nodes", "2", "--pack", "atlas",
                                         "--pack-policy", "relaxed", "--pack-ttl", "5m"], "--pack-ttl"),
    _cli("bogus server url", ["run", "--once", "--no-db", "--server", "bogus://x"], "bogus://x"),
    _cli("database url garbage", ["history", "import", "--db", "not a url", "{d}"], "not a url"),
    _cli("database under a missing directory", ["usage", "--db", "sqlite:///{d}/no/such/h.db"], "no/such"),
    _cli("import under a missing directory", ["history", "import", "--db", "sqlite:///{d}/no/such/h.db", "{d}"],
         "no/such"),
    _cli("no status file", ["jobs", "--state-dir", "{d}/nothing"], "nothing"),
    _cli("unknown job", ["why", "--state-dir", "{d}/nothing", "42"], "nothing"),
    _cli("max-age nan", ["jobs", "--state-dir", "{d}/nothing", "--max-age", "nan"], "--max-age"),
    _cli("max-age negative", ["jobs", "--state-dir", "{d}/nothing", "--max-age", "-1"], "--max-age"),
    _cli("usage since nan", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "nan"], "--since"),
    _cli("usage until inf", ["usage", "--db", "sqlite:///{d}/h.db", "--until", "inf"], "--until"),
    Case("simulate from nan", "cli", REFUSED, lambda d: ["simulate", "--trace", str(d / "t.swf"), "--from", "nan",
                                                         "--progress", "never"], {"t.swf": SWF_OK}, "--from"),
    _cli("bad usage window", ["usage", "--db", "sqlite:///{d}/h.db", "--since", "last tuesday"], "--since"),
]


def run_case(case: Case, d: Path) -> tuple[str, int, str, str]:
    """(outcome, exit status, stdout, stderr) of one case run in directory `d`."""
    for name, content in case.files.items():
        p = d / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
    out_f, err_f = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out_f), contextlib.redirect_stderr(err_f):
        try:
            rc = main(case.argv(d))
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
    out, err = out_f.getvalue(), err_f.getvalue()
    text = out + err
    if "internal error" in text or "Traceback" in text:
        return "internal error", rc, out, err
    if rc != 0:
        return REFUSED, rc, out, err
    return (WARNED if "warning" in err else "accepted"), rc, out, err


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_bad_input_is_refused_or_warned_with_its_location(case, tmp_path):
    outcome, rc, out, err = run_case(case, tmp_path)
    assert outcome == case.expect, (outcome, rc, out[-500:], err[-500:])
    said = err if outcome == REFUSED else "\n".join(ln for ln in err.splitlines() if "warning" in ln)
    assert case.where.replace("{d}", str(tmp_path)) in said, said[-500:]
    if outcome == WARNED and case.kind == "trace":
        assert "replayed after a repair" in err or "not replayed" in err  # counted in the report
    if outcome == WARNED and case.kind == "accounting":
        assert ("1 malformed line(s) skipped" in out or "1 kept without a garbled field" in out
                or "(1 more not read)" in out)
