"""Argument types and helpers shared by subcommands."""

from __future__ import annotations

import argparse
import datetime as dt
import math
import os
from importlib import resources
from typing import Callable

from mysched.core.settings import Config
from mysched.errors import UsageError, clip

from mysched.config import config_from_text, load_config


def int_between(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argument type: a whole number from `minimum` (to `maximum`: sizes that could exhaust memory)."""
    def conv(text: str) -> int:
        try:
            v = int(text)
        except ValueError:  # also 5000 digits: Python's own words name its limit on digits
            raise argparse.ArgumentTypeError(f"expected a whole number, got {clip(text)!r}") from None
        if v < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum}, got {v}")
        return v
    return conv


positive_int = int_between(1)
non_negative_int = int_between(0)
whole_number = int_between(-2**256, 2**256)
"""A seed: any whole number of a sensible size."""


def int_up_to(maximum: int) -> Callable[[str], int]:
    return int_between(1, maximum)


def positive_float(text: str) -> float:
    """A positive, finite number (inf and nan would only fail later, deep in a run)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return v


def positive_up_to(maximum: float, unit: str = "") -> Callable[[str], float]:
    """An argument type: a positive number of at most `maximum` (durations that would never end)."""
    def conv(text: str) -> float:
        v = positive_float(text)
        if v > maximum:
            raise argparse.ArgumentTypeError(f"must be at most {maximum:g}{unit}, got {text}")
        return v
    return conv


def duration_arg(text: str) -> float:
    """A duration option (3600, "90m", "2d", "01:30:00", "inf"), refused by argparse if not one."""
    from mysched.core.model.durations import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def non_empty(text: str) -> str:
    """A file, name or URL that must be given: an empty value is a mistake, not "use the default"."""
    if not text.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return text


def address_arg(text: str) -> str:
    """A HOST:PORT option ("off" disables), read by the rule the configuration's addresses obey."""
    from mysched.config.values import parse_address

    try:
        parse_address(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def fraction(text: str) -> float:
    """An argument between 0 and 1."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, got {text!r}") from None
    if not 0.0 <= v <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, got {text}")
    return v


MIN_DATE, MAX_DATE = -62135596800.0, 253402300799.0
"""0001-01-01 and 9999-12-31T23:59:59 UTC, the times a date can name."""


def date_arg(text: str) -> float:
    """Unix seconds from ``YYYY-MM-DD``, ``YYYY-MM-DDTHH:MM[:SS]`` (UTC) or a number.

    A number must be a finite time a date could name (nan would compare false and filter nothing)."""
    try:
        v = float(text)
    except ValueError:
        pass
    else:
        if not MIN_DATE <= v <= MAX_DATE:  # also nan
            raise argparse.ArgumentTypeError(f"expected a date or Unix seconds from {MIN_DATE:.0f} to {MAX_DATE:.0f} "
                                             f"(years 1 to 9999), got {text!r}")
        return v
    for fmt in ("%Y-%m-%d", "%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d %H:%M:%S"):
        try:
            return dt.datetime.strptime(text, fmt).replace(tzinfo=dt.timezone.utc).timestamp()
        except ValueError:
            continue
    raise argparse.ArgumentTypeError(f"expected a date like 2004-11-01 or 2004-11-01T12:00 (UTC), got {text!r}")


def output_path(path: str | None, option: str) -> None:
    """Fail before a long run, not after it, if an output file cannot be written there."""
    if path is None or path == "-":
        return
    if os.path.isdir(path):
        raise UsageError(f"{option} {path}: is a directory; give a file name")
    d = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(d) or not os.access(d, os.W_OK):
        raise UsageError(f"{option} {path}: directory {d} does not exist or is not writable")


def default_config_text() -> str:
    """The embedded example configuration (a DESY-HH-like site), same as etc/mysched.cfg."""
    return resources.files("mysched").joinpath("data/mysched.cfg").read_text(encoding="utf-8")


def config_or_default(path: str | None) -> Config:
    if path:
        return load_config(path)
    return config_from_text(default_config_text(), "<embedded mysched.cfg>")
