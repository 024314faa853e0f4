"""Plain aligned tables for the status commands: colour only on a terminal, never with NO_COLOR."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence, TextIO

_COLOURS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}


def use_colour(stream: TextIO = sys.stdout) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, colour: str | None, enabled: bool) -> str:
    if not enabled or not colour:
        return text
    return f"\033[{_COLOURS[colour]}m{text}\033[0m"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, noheader: bool = False,
          colours: Sequence[str | None] | None = None, stream: TextIO = sys.stdout,
          right: Sequence[int] = ()) -> None:
    """Print rows as aligned columns (right-aligned where listed); `colours` colours whole rows."""
    text_rows = [["" if v is None else str(v) for v in r] for r in rows]
    widths = [len(h) for h in header]
    for r in text_rows:
        for i, v in enumerate(r):
            widths[i] = max(widths[i], len(v))
    colour = use_colour(stream)

    def fmt(r: Sequence[str]) -> str:
        cells = [v.rjust(widths[i]) if i in right else v.ljust(widths[i]) for i, v in enumerate(r)]
        return "  ".join(cells).rstrip()

    out = []
    if not noheader:
        out.append(paint(fmt(header), "bold", colour))
    for i, r in enumerate(text_rows):
        out.append(paint(fmt(r), colours[i] if colours else None, colour))
    if out:
        stream.write("\n".join(out) + "\n")


def dump_json(doc: Any, stream: TextIO = sys.stdout) -> None:
    stream.write(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")


def duration(seconds: float | None) -> str:
    """Compact duration: 45s, 12m, 3h05m, 2d04h; '-' when unknown."""
    if seconds is None:
        return "-"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
