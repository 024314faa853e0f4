"""Subcommands; importing this package registers them with `mysched.cli`."""

from . import check_config, simulate  # noqa: F401
