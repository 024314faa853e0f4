"""The `mysched` command line: one entry point, one subcommand per task.

Every subcommand reports bad input as ``mysched: error: ...`` naming the file, line or key,
and exits non-zero; tracebacks are for bugs only (set MYSCHED_DEBUG=1 to see them).
"""

from __future__ import annotations

import argparse
import importlib
import os
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
    """argparse, with a refused argument's value cut to 200 characters in the message (it
    quotes the whole of a 100,000-character value otherwise); subcommands' parsers are of
    this class too."""

    def error(self, message: str):  # type: ignore[override]  # noqa: ANN201 - never returns
        from mysched.config.parse import clip_long

        super().error(clip_long(message))


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


def main(argv: list[str] | None = None) -> int:
    from mysched.config.parse import clip_long

    parser = build_parser()
    args = parser.parse_args(argv)
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
