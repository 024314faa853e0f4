"""Bad configuration files, as an admin would write them, through `mysched check-config` (and
`run`, which must refuse what check-config refuses): special and huge files, includes that
cannot work, URLs and databases that cannot work, intervals below their floor, guarantees the
farm cannot give, an empty file. Each is refused in one line naming its file, line and key,
in words -- never an internal error, never a hang, never Python's or libconf's text."""

from __future__ import annotations

import importlib.util
import re

import pytest

from mysched.daemon.reload import reread
from mysched.errors import ConfigError
from tests.cli.test_bad_input import REFUSED, Case, run_case
from tests.daemon.test_daemon import make

PYTHON_WORDS = re.compile(r"Traceback|internal error|Error\b|invalid literal|codec|Errno|Unexpected token|"
                          r"Expected end|Couldn't load|\(':'|row \d+, column")
VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; };\n'


def _cfg(name: str, text: str | bytes, where: str, **more: str | bytes) -> Case:
    return Case(name, "config", REFUSED, lambda d: ["check-config", "-c", str(d / "site.cfg")],
                {"site.cfg": text, **more}, where)


def _run(name: str, text: str, where: str, *server: str) -> Case:
    """`run --once` refuses the file as check-config does, before it starts anything."""
    return Case(name, "cli", REFUSED, lambda d: ["run", "-c", str(d / "site.cfg"), "--once", "--no-db",
                                                 "--state-dir", str(d / "state"), *server], {"site.cfg": text}, where)


SIM16 = "sim://?nodes=2&slots=8"
HUGE_GUARANTEE = 'vos = { atlas = { groups = ["atlas"]; slots = 1000000; }; };\n'


CASES = [
    # -- reading --------------------------------------------------------------------------------
    _cfg("include /dev/zero", VOS + '@include "/dev/zero"\n', 'site.cfg:2: @include "/dev/zero": is a character device'),
    _cfg("include a directory", VOS + '@include "."\n', 'site.cfg:2: @include ".": is a directory'),
    _cfg("include itself", VOS + '@include "site.cfg"\n', "site.cfg:2: @include \"site.cfg\": the file @includes itself"),
    _cfg("include circle", VOS + '@include "b.cfg"\n', 'b.cfg:1: @include "site.cfg": the file @includes itself',
         **{"b.cfg": '@include "site.cfg"\n'}),
    _cfg("include too large", VOS + '@include "big.cfg"\n', 'site.cfg:2: @include "big.cfg": is ',
         **{"big.cfg": "#" * (1 << 21)}),
    _cfg("include not UTF-8", VOS + '@include "l.cfg"\n', 'site.cfg:2: @include "l.cfg": line 1 is not UTF-8',
         **{"l.cfg": b"default_vo = \"caf\xe9\";\n"}),
    _cfg("huge file", "#" * (1 << 21), "site.cfg: is 2097152 bytes"),
    _cfg("one huge line of settings", "a = 1; " * 300000, "site.cfg: is "),
    _cfg("integer of 5000 digits", "a = " + "9" * 5000 + ";\n", "site.cfg:1: syntax error: a number too long"),
    _cfg("bad string escape", 'default_vo = "\\xzz";\n', "site.cfg:1: syntax error: a string with a bad escape"),
    _cfg("lists 100000 deep", "a = " + "(" * 100000 + ")" * 100000 + ";\n", "site.cfg:1: syntax error: settings nested"),
    _cfg("missing colon", VOS + "scheduler { interval = 60; };\n", "site.cfg:2: syntax error: 'scheduler' must be followed by '='"),
    _cfg("stray brace", VOS + "};\n", "site.cfg:2: syntax error: '}' closes nothing"),
    _cfg("unclosed comment", VOS + "/* to do\n", "site.cfg:2: syntax error: a /* comment is never closed"),
    _cfg("long unknown key", VOS + "x" * 5000 + " = 1;\n", "site.cfg:2: " + "x" * 200 + "... (5000 characters)"),
    _cfg("long bad value", VOS + 'scheduler = { interval = ' + '"y y" ' * 3000 + "; };\n",
         "site.cfg:2: scheduler.interval: expected a duration"),
    _cfg("name_format unpaired brace", 'farm = { name_format = "wn{index"; };\n', "farm.name_format: expected a pattern"),
    _cfg("name_format width of 5000 digits", 'farm = { name_format = "wn{index:' + "9" * 5000 + 'd}"; };\n',
         "farm.name_format: expected a pattern"),
    _cfg("name_format for a string", 'farm = { name_format = "wn{index:s}"; };\n',
         "farm.name_format: expected a pattern"),
    # -- what cannot work -----------------------------------------------------------------------
    _cfg("empty server url", VOS + 'server = { url = ""; };\n', "site.cfg:2: server.url: names no pbs_server host"),
    _cfg("server url without host", VOS + 'server = { url = "torque://"; };\n', "site.cfg:2: server.url: names no"),
    _cfg("server url not a host", VOS + 'server = { url = "two words"; };\n', "site.cfg:2: server.url: expected"),
    _cfg("sim url bad nodes", VOS + 'server = { url = "sim://?nodes=abc"; };\n',
         "site.cfg:2: server.url: nodes must be a positive whole number, got abc"),
    _cfg("sim url unknown parameter", VOS + 'server = { url = "sim://?cores=4"; };\n',
         "site.cfg:2: server.url: unknown parameter(s) cores"),
    _cfg("sim url too large", VOS + 'server = { url = "sim://?nodes=10000&slots=1000"; };\n',
         "site.cfg:2: server.url: nodes x slots is 10000000"),
    _cfg("unknown database kind", VOS + 'history = { database = "nosuchdb://x/y"; };\n',
         "site.cfg:2: history.database: unknown kind of database 'nosuchdb'"),
    *([_cfg("database driver not installed", VOS + 'history = { database = "mysql://u@h/db"; };\n',
            "site.cfg:2: history.database: the mysqldb driver of mysql is not installed here (Python module MySQLdb)")]
      if importlib.util.find_spec("MySQLdb") is None else []),
    _cfg("database not a url", VOS + 'history = { database = "::"; };\n', "site.cfg:2: history.database: not a"),
    _cfg("interval of 1 ms", VOS + 'scheduler = { interval = 0.001; min_interval = 0; };\n',
         "site.cfg:2: scheduler.interval: must be a duration from 1 s to a day"),
    _cfg("min_interval of 0", VOS + 'scheduler = { min_interval = 0; };\n',
         "site.cfg:2: scheduler.min_interval: must be at least 1 s"),
    _cfg("empty file", "", "site.cfg: the file sets nothing"),
    _cfg("only comments", "# to do\n/* later */\n", "site.cfg: the file sets nothing"),
    _cfg("only empty groups", "vos = {};\nscheduler = {};\n", "site.cfg: the file sets nothing"),
    _cfg("including only an empty file", '@include "e.cfg"\n', "site.cfg: the file sets nothing", **{"e.cfg": ""}),
    _cfg("guarantee over the sim farm", f'server = {{ url = "{SIM16}"; }};\n' + HUGE_GUARANTEE,
         "site.cfg:2: vos: the guarantees add up to 1000000 slots (slots: atlas 1000000), more than the farm's 16"),
    _cfg("shares and slots over the sim farm", f'server = {{ url = "{SIM16}"; }};\n'
         'vos = { a = { groups = ["a"]; slots = 10; }; b = { groups = ["b"]; share = 50; }; };\n',
         "site.cfg:2: vos: the guarantees add up to 18 slots (slots: a 10; shares: 50 % of the farm)"),
    Case("guarantee over the --server farm", "config", REFUSED,
         lambda d: ["check-config", "-c", str(d / "site.cfg"), "--server", SIM16], {"site.cfg": HUGE_GUARANTEE},
         "site.cfg:1: vos: the guarantees add up to 1000000 slots"),
    _run("run refuses a guarantee over the farm", HUGE_GUARANTEE, "site.cfg: vos: the guarantees add up to 1000000",
         "--server", SIM16),
    _run("run refuses an empty file", "", "site.cfg: the file sets nothing", "--server", SIM16),
    _run("run refuses a 1-ms interval", VOS + 'scheduler = { interval = 0.001; };\n', "scheduler.interval: must be",
         "--server", SIM16),
    _run("run refuses an empty server url", VOS + 'server = { url = ""; };\n', "server.url: names no pbs_server host"),
    _run("run refuses a bad sim url", VOS + 'server = { url = "sim://?nodes=abc"; };\n', "server.url: nodes must be"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_a_bad_configuration_is_refused_in_one_located_line(case, tmp_path):
    outcome, rc, out, err = run_case(case, tmp_path)
    assert outcome == case.expect, (outcome, rc, out[-500:], err[-500:])
    assert case.where.replace("{d}", str(tmp_path)) in err, err[-600:]
    assert not PYTHON_WORDS.search(err), err[-600:]
    for line in err.splitlines():
        assert len(line) < 1000 and not re.search(r"(.)\1{200}", line), line[:300]


def test_a_reload_refuses_what_check_config_and_run_refuse(tmp_path, caplog):
    """The same file is refused alike: an empty one, and guarantees over the farm the daemon
    reads (2 nodes of 2 slots here) -- the running configuration stays."""
    path = tmp_path / "site.cfg"
    path.write_text(VOS)
    d, server, farm = make(config_path=str(path))
    assert d.cycle().result == "ok"
    before = d.config
    for text, said in (("", "the file sets nothing"),
                       (HUGE_GUARANTEE, "site.cfg:1: vos: the guarantees add up to 1000000 slots (slots: atlas "
                                        "1000000), more than the farm's 4")):
        path.write_text(text)
        assert d.reload() is False and d.config is before
        assert said in caplog.text
        with pytest.raises(ConfigError, match=re.escape(said)):
            reread(str(path), before, 4)
    path.write_text('vos = { atlas = { groups = ["atlas"]; slots = 4; }; };\n')  # the whole farm: it fits
    assert d.reload() is True and d.config.vos["atlas"].slots == 4
