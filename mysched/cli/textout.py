"""Plain aligned tables for the status commands: colour only on a terminal, never with NO_COLOR."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Sequence, TextIO

_COLOURS = {"red": "31", "green": "32", "yellow": "33", "blue": "34", "bold": "1", "dim": "2"}


def use_colour(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, colour: str | None, enabled: bool) -> str:
    if not enabled or not colour:
        return text
    return f"\033[{_COLOURS[colour]}m{text}\033[0m"


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], *, noheader: bool = False,
          colours: Sequence[str | None] | None = None, stream: TextIO | None = None,
          right: Sequence[int] = ()) -> None:
    """Print rows as aligned columns (right-aligned where listed); `colours` colours whole rows."""
    stream = stream or sys.stdout
    text_rows = [["" if v is None else str(v) for v in r] for r in rows]
    widths = [len(h) for h in header]
    if text_rows:
        widths = [max(w, max(map(len, col))) for w, col in zip(widths, zip(*text_rows))]
    colour = use_colour(stream)
    template = "  ".join(f"{{:{'>' if i in right else '<'}{w}}}" for i, w in enumerate(widths))
    out = []
    if not noheader:
        out.append(paint(template.format(*header).rstrip(), "bold", colour))
    if colour and colours:
        out += [paint(template.format(*r).rstrip(), colours[i], True) for i, r in enumerate(text_rows)]
    else:
        out += [template.format(*r).rstrip() for r in text_rows]
    if out:
        stream.write("\n".join(out) + "\n")


def dump_json(doc: Any, stream: TextIO | None = None) -> None:
    """Indented for a person at a terminal, compact (and fast) for a pipe."""
    stream = stream or sys.stdout
    if stream.isatty():
        stream.write(json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n")
    else:
        stream.write(json.dumps(doc, sort_keys=True, separators=(",", ":"), default=str) + "\n")


def duration(seconds: float | None) -> str:
    """Compact duration: 45s, 12m, 3h05m, 2d04h; '-' when unknown."""
    if seconds is None:
        return "-"
    if seconds != seconds or seconds == float("inf"):
        return "inf"
    s = int(max(0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86400}d{s % 86400 // 3600:02d}h"
