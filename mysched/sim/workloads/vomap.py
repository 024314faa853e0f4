"""``--vo-map``: which VO each group of a replayed trace belongs to."""

from __future__ import annotations

import os

from mysched.errors import InputError, clip
from mysched.files import os_reason, read_capped

MAX_BYTES = 16 << 20
"""The largest VO map file read (a line per group: thousands of groups take kilobytes)."""


def parse_vo_map(text_or_path: str | os.PathLike[str]) -> dict[str, str]:
    """Group -> VO for ``--vo-map``: ``g2=atlas,g6=cms``, or a file of ``GROUP VO`` or
    ``GROUP=VO`` lines (``#`` comments, blank lines allowed). Bad syntax raises `InputError`
    naming the item or ``FILE:LINE``."""
    text = os.fspath(text_or_path)
    if os.path.lexists(text):
        try:
            data = read_capped(text, MAX_BYTES, "VO map")
        except OSError as exc:
            raise InputError(f"{text}: cannot read: {os_reason(exc)}") from None
        items = list(enumerate(data.decode("utf-8", errors="replace").splitlines(), 1))
        source = text

        def where(i: int) -> str:
            return f"{text}:{i}"
    else:
        if "=" not in text:
            raise InputError(f"{clip(text)}: no such file, and not a GROUP=VO list (e.g. g2=atlas,g6=cms)")
        items = list(enumerate(text.split(","), 1))
        source = "--vo-map"

        def where(i: int) -> str:
            return f"--vo-map item {i}"
    out: dict[str, str] = {}
    for i, raw in items:
        item = raw.split("#", 1)[0].strip()
        if not item:
            continue
        if "=" in item:
            parts = [p.strip() for p in item.split("=")]
        else:
            parts = item.split()
        if len(parts) != 2 or not all(parts) or any(c.isspace() for p in parts for c in p):
            raise InputError(f"{where(i)}: expected GROUP=VO or GROUP VO, got {clip(raw.strip())!r}")
        group, vo = parts
        if group in out and out[group] != vo:
            raise InputError(f"{where(i)}: group {clip(group)} mapped twice ({clip(out[group])} and {clip(vo)})")
        out[group] = vo
    if not out:
        raise InputError(f"{source}: empty VO mapping")
    return out
