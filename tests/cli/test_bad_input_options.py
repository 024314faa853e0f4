"""Issue 32, item 6: a bad value of any option of any subcommand is refused in ONE line that
names the option and the value -- ``mysched simulate: error: argument --nodes: must be at least
1, got -5`` -- never after argparse's usage summary (15 lines for `simulate`), never in Python's
words (``invalid int value``), never as "expected one argument" for a value that begins with
'-'. Every option is tried, so a new one with a bare ``type=int`` fails here."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys

import pytest

from mysched.cli.main import _parsers, build_parser, main
from mysched.errors import clip

BAD = ["-5", "0", "abc", "", "nan", "-inf", "1e999", "2026-13-45", "-1h", "x" * 300, "sim://?nodes=abc"]
"""Negative, zero, non-numeric, empty, not finite, a bad date, a bad duration, a long value, a URL."""
PYTHON_WORDS = re.compile(r"invalid (int|float) value|could not convert|invalid literal|expected one argument|"
                          r"Traceback|Error\b|^usage:", re.M)


def _options() -> list[tuple[list[str], str]]:
    """(subcommand words, option) for every option of every subcommand that takes a value."""
    out = []
    for p in _parsers(build_parser()):
        words = p.prog.split()[1:]
        for a in p._actions:
            if a.option_strings and a.nargs is None and not isinstance(a, argparse._StoreConstAction) \
                    and a.dest not in ("help", "version"):
                out.append((words, a.option_strings[-1]))
    return out


OPTIONS = _options()
PARSER = build_parser()


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as exc:
            rc = exc.code if isinstance(exc.code, int) else 2
    return rc, err.getvalue()


def test_every_subcommand_and_its_value_options_are_tried():
    """The walk sees the nested subcommands too (a walk that found none would pass vacuously)."""
    tried = {(" ".join(w), o) for w, o in OPTIONS}
    assert {("simulate", "--nodes"), ("simulate", "--seed"), ("history prune", "--keep-cycles"),
            ("usage", "--since"), ("run", "--server"), ("bench", "--mcore-fraction")} <= tried
    assert len(tried) > 60


@pytest.mark.parametrize("words,option", OPTIONS, ids=[" ".join(w + [o]) for w, o in OPTIONS])
def test_a_refused_option_value_is_one_line_naming_option_and_value(words, option, monkeypatch):
    # parsing only: a value the option takes would otherwise run the command; after parsing,
    # a required argument missing is a refusal of another argument, not of this value
    monkeypatch.setattr(argparse.ArgumentParser, "parse_known_args", _parse_only(argparse.ArgumentParser.parse_known_args))
    monkeypatch.setattr(sys.modules["mysched.cli.main"], "build_parser", lambda: PARSER)  # the same for every value: faster
    for value in BAD:
        rc, err = _run(words + [option, value])
        if f"argument {option}" not in err and not re.search(rf"argument [-\w]*/?{option}\b", err):
            continue  # taken (a name, a file, a URL checked when used), or another argument refused
        assert rc == 2 and err.endswith("\n") and err.count("\n") == 1, (value, err)
        assert err.startswith(f"mysched {' '.join(words)}: error: argument "), err
        assert repr(clip(value)) in err or (not value and "must not be empty" in err) \
            or f"got {value}" in err, (value, err)
        assert not PYTHON_WORDS.search(err), err


def _parse_only(parse):
    def wrapper(self, args=None, namespace=None):
        out = parse(self, args, namespace)
        if self.prog == "mysched":
            raise SystemExit(0)  # parsed: the command is not run
        return out
    return wrapper


@pytest.mark.parametrize("argv,said", [
    (["simulate", "--nodes", "-5"], "mysched simulate: error: argument --nodes: must be at least 1, got -5\n"),
    (["simulate", "--seed", "abc"], "mysched simulate: error: argument --seed: expected a whole number, got 'abc'\n"),
    (["simulate", "--mcore-fraction", "half"],
     "mysched simulate: error: argument --mcore-fraction: expected a number between 0 and 1, got 'half'\n"),
    (["history", "prune", "--keep-cycles", "-1h"],
     "mysched history prune: error: argument --keep-cycles: expected a duration such as 3600, \"90m\", \"2d\" or "
     "\"01:30:00\", got '-1h'\n"),
    (["simulate", "--sim", "x"],
     "mysched simulate: error: unrecognized arguments: --sim x ('mysched simulate --help' lists them)\n"),
    (["history", "prune", "--older", "1d"],
     "mysched history prune: error: unrecognized arguments: --older 1d ('mysched history prune --help' lists them)\n"),
    (["check-config"], "mysched check-config: error: the following arguments are required: -c/--config "
                       "('mysched check-config --help' lists them)\n"),
])
def test_refusals_read_as_one_line(argv, said):
    rc, err = _run(argv)
    assert (rc, err) == (2, said)


@pytest.mark.parametrize("query,said", [
    ("nodes=abc", "nodes must be a positive whole number, got abc"),
    ("nodes=-5", "nodes must be a positive whole number, got -5"),
    ("nodes=0", "nodes must be a positive whole number, got 0"),
    ("slots=1.5", "slots must be a positive whole number, got 1.5"),
    ("speed=-1", "speed must be a positive number of at most 1e+06, got -1"),
    ("hours=abc", "hours must be a positive number of at most 8784 (a year), got abc"),
    ("backlog=-2", "backlog must be a number of hours from 0 to 8784, got -2"),
    ("seed=x", "seed must be a whole number, got x"),
    ("nodes=2&nodes=3", "parameter(s) given twice: nodes"),
    ("colour=red", "unknown parameter(s) colour; known: backlog, hours, nodes, seed, slots, speed"),
])
def test_a_bad_sim_url_parameter_is_one_line_naming_it_and_its_value(query, said, tmp_path):
    rc, err = _run(["run", "--once", "--no-db", "--state-dir", str(tmp_path), "--server", f"sim://?{query}"])
    assert rc == 2 and err == f"mysched run: error: server URL 'sim://?{query}': {said}\n"
