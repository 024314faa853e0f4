"""The `mysched` command line: `main` parses arguments and runs one subcommand module."""

from mysched.cli.main import command, main

__all__ = ["command", "main"]
