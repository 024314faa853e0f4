"""The grid of a sweep: `--set KEY=V1,V2,...` and `--seeds` read, and each combination of
settings written into the base configuration's text and checked by the configuration's own
reader, so a bad key or value gets its usual words (`scheduler.bogus: unknown setting`)."""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import libconf

from mysched.config import config_from_text
from mysched.errors import ConfigError, UsageError

CELL_SOURCE = "<sweep cell>"
"""The name a cell's configuration text is checked under (its line numbers mean nothing to the user)."""

MAX_CELLS = 100_000
"""More cells than this is a typo in a range, not a sweep anyone waits for."""

Setting = tuple[str, Any]

def _split_values(text: str) -> list[str]:
    """Split at commas outside double quotes ("a,b" stays one string)."""
    out, cur, quoted = [], "", False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        if ch == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [v.strip() for v in out]


def literal(text: str) -> Any:
    """A value as the configuration file would read it: a number, "string", true/false, an
    array or list; a bare word is taken as a string (``backfill=requested``)."""
    try:
        return libconf.loads(f"v = {text};")["v"]
    except Exception:  # noqa: BLE001 - libconf raises several kinds; not a literal: a bare word
        if re.fullmatch(r"[^\s\";{}()\[\]=]+", text):
            return text
        raise UsageError(f"--set: cannot read {text[:200]!r} as a value (a number, \"string\", true or false)") from None


def parse_set(text: str) -> tuple[str, list[Any]]:
    """``KEY=V1,V2,...`` -> (dotted key, values in order, without repeats)."""
    key, eq, rest = text.partition("=")
    key = key.strip()
    if not eq or not re.fullmatch(r"[A-Za-z][-\w]*(\.[A-Za-z*][-\w*]*)*", key):
        raise UsageError(f"--set {text[:200]}: expected KEY=V1,V2,... with a dotted configuration key "
                         "(drain.rate=0,6,12)")
    raw = _split_values(rest)
    if any(not v for v in raw):
        raise UsageError(f"--set {text[:200]}: an empty value")
    values: list[Any] = []
    for v in raw:
        lit = literal(v)
        if lit not in values:
            values.append(lit)
    return key, values


def parse_seeds(text: str) -> list[int]:
    """``1,2,3``, ``1-8`` or a mix (``1-4,9``): the seeds in order, without repeats."""
    seeds: list[int] = []
    for part in text.split(","):
        m = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", part)
        if not m:
            raise UsageError(f"--seeds {text[:200]}: expected seeds like 1,2,3 or 1-8")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo or hi - lo >= MAX_CELLS:
            raise UsageError(f"--seeds {text[:200]}: {part.strip()} is not a range from low to high")
        seeds.extend(s for s in range(lo, hi + 1) if s not in seeds)
    return seeds


def base_document(text: str, filename: str) -> dict:
    """The base configuration as a libconf document, its @includes read in (relative to its file)."""
    includedir = os.path.dirname(os.path.abspath(filename)) if not filename.startswith("<") else os.getcwd()
    try:
        return libconf.loads(text, filename=filename, includedir=includedir) if text.strip() else {}
    except Exception as exc:  # noqa: BLE001 - the reader named the problem already when it could
        raise ConfigError(f"{filename}: cannot be read for --set: {str(exc)[:200]}") from None


def with_settings(doc: dict, settings: tuple[Setting, ...]) -> str:
    """The configuration text of `doc` with each dotted key set (groups created as needed)."""
    out = copy.deepcopy(doc)
    for key, value in settings:
        *groups, last = key.split(".")
        node = out
        for g in groups:
            if not isinstance(node.get(g), dict):
                node[g] = {}
            node = node[g]
        node[last] = value
    try:
        return libconf.dumps(out)
    except Exception as exc:  # noqa: BLE001 - a value libconf cannot write (mixed array)
        raise UsageError(f"--set {', '.join(f'{k}={v!r}' for k, v in settings)}: {str(exc)[:200]}") from None


def refusal(text: str) -> str | None:
    """Why the configuration reader refuses `text` (its first problem, without the line of the
    generated text), or None when it reads."""
    try:
        config_from_text(text, CELL_SOURCE)
    except ConfigError as exc:
        first = exc.problems[0] if exc.problems else str(exc)
        return re.sub(rf"^{re.escape(CELL_SOURCE)}(:\d+)?: ", "", first)
    return None


def show(settings: tuple[Setting, ...]) -> str:
    return " ".join(f"{k}={json.dumps(v) if isinstance(v, str) else _lit(v)}" for k, v in settings) or "(base)"


def _lit(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def check_grid(grid: list[tuple[str, list[Any]]], refused: dict[tuple[Setting, ...], str]) -> None:
    """Refuse, before anything runs, a value refused in every combination it is in -- an unknown
    key, a value out of range: a typo must not cost a night of runs. A value refused only with
    some other setting (a scheduler.min_interval longer than scheduler.interval) leaves those cells out, named."""
    for i, (key, values) in enumerate(grid):
        for v in values:
            mine = [why for settings, why in refused.items() if settings[i][1] == v]
            total = 1
            for j, (_, vals) in enumerate(grid):
                total *= len(vals) if j != i else 1
            if mine and len(mine) == total:
                raise UsageError(f"--set {key}={json.dumps(v) if isinstance(v, str) else _lit(v)}: {mine[0]}")
