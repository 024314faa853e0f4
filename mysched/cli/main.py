"""The `mysched` command line: one entry point, one subcommand per task.

Every subcommand reports bad input as ``mysched: error: ...`` naming the file, line or key,
and exits non-zero; tracebacks are for bugs only (set MYSCHED_DEBUG=1 to see them).
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from typing import Callable

from mysched import __version__
from mysched.errors import MyschedError, UsageError

COMMAND_MODULES = ("simulate", "run", "check_config", "history", "jobs", "farm", "pools", "loads", "usage", "bench", "sweep",
                   "import_maui")

Handler = Callable[[argparse.Namespace], int]
_COMMANDS: list[tuple[str, str, Callable[[argparse.ArgumentParser], None], str]] = []


def command(name: str, help: str):
    """Register a subcommand: the decorated function fills its parser; `module:function` runs it."""
    def wrap(fill: Callable[[argparse.ArgumentParser], None]):
        _COMMANDS.append((name, help, fill, fill.__doc__ or help))
        return fill
    return wrap


class _Parser(argparse.ArgumentParser):
    """argparse, refusing a bad argument in one line -- ``mysched simulate: error: argument
    --nodes: must be at least 1, got -5`` -- as every other bad input is refused: argparse's
    usage summary before it (15 lines for `simulate`) buried the one that mattered. A message
    about no single argument points at --help. A refused value is cut to 200 characters (it
    quotes the whole of a 100,000-character value otherwise); subcommands' parsers are of this
    class too."""

    def error(self, message: str):  # type: ignore[override]  # noqa: ANN201 - never returns
        from mysched.config.parse import clip_long

        one = " ".join(clip_long(message).split())
        if not one.startswith("argument "):
            one += f" ('{self.prog} --help' lists them)" if "argument" in one else f" (see '{self.prog} --help')"
        self.exit(2, f"{self.prog}: error: {one}\n")


def build_parser() -> argparse.ArgumentParser:
    for mod in COMMAND_MODULES:  # each registers its subcommands
        importlib.import_module(f"mysched.cli.{mod}")

    parser = _Parser(
        prog="mysched",
        description="External scheduler for TORQUE batch farms of multi-VO Grid sites "
                    "(the MYSCHED algorithm: guaranteed VO shares, opportunistic fair share by "
                    "decayed wall-clock usage, placement by job diversity).",
    )
    parser.add_argument("--version", action="version", version=f"mysched {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, help, fill, desc in _COMMANDS:
        p = sub.add_parser(name, help=help, description=desc,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        fill(p)
    return parser


_DASHED_VALUE = re.compile(r"-(\d|\.\d|inf|nan)\S*", re.I)
"""A value that starts with '-' but is no option: -1h, -0.5, -inf, -1e3."""


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`parser` and every subcommand's parser within it, at any depth."""
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _parsers(sub)
    return out


def _innermost(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The parser of the (sub)subcommand `argv` runs: ``history prune`` rather than ``history``."""
    def named(p: argparse.ArgumentParser) -> bool:
        rest = iter(argv)
        return all(word in rest for word in p.prog.split()[1:])  # in order
    return max((p for p in _parsers(parser) if named(p)), key=lambda p: len(p.prog.split()))


def _join_dashed_values(argv: list[str], parser: argparse.ArgumentParser) -> list[str]:
    """``--pack-ttl -1h`` as ``--pack-ttl=-1h``: argparse takes a value beginning with '-' (other
    than a plain negative number) for an option and says only "expected one argument"; joined,
    the value is read and refused by its option's own rule, which names it."""
    takes_one = {o for p in _parsers(parser) for a in p._actions if a.option_strings and a.nargs is None
                 and not isinstance(a, (argparse._StoreConstAction, argparse._CountAction))
                 for o in a.option_strings}
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in takes_one and _DASHED_VALUE.fullmatch(arg) and arg not in takes_one:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def main(argv: list[str] | None = None) -> int:
    from mysched.config.parse import clip_long

    parser = build_parser()
    given = sys.argv[1:] if argv is None else list(argv)
    args, extra = parser.parse_known_args(_join_dashed_values(given, parser))
    if extra:  # said by the subcommand's parser, whose --help lists its options
        _innermost(parser, given).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        return int(args.run(args) or 0)
    except UsageError as exc:
        print(f"mysched {args.command}: error: {clip_long(str(exc))}", file=sys.stderr)
        return 2
    except MyschedError as exc:
        for line in str(exc).splitlines() or ["(no detail)"]:
            print(f"mysched: error: {clip_long(line)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("mysched: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return 0
    except Exception as exc:  # noqa: BLE001 - last line of defence: no traceback for users
        if os.environ.get("MYSCHED_DEBUG"):
            raise
        print(f"mysched: internal error: {type(exc).__name__}: {exc} "
              "(this is a bug; MYSCHED_DEBUG=1 shows the traceback)", file=sys.stderr)
        return 70


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
