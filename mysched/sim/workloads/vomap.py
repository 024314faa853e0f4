"""``--vo-map``: which VO each group of a replayed trace belongs to."""

from __future__ import annotations

import os

from mysched.errors import InputError


def parse_vo_map(text_or_path: str | os.PathLike[str]) -> dict[str, str]:
    """Group -> VO for ``--vo-map``: ``g2=atlas,g6=cms``, or a file of ``GROUP VO`` or
    ``GROUP=VO`` lines (``#`` comments, blank lines allowed). Bad syntax raises `InputError`
    naming the item or ``FILE:LINE``."""
    text = os.fspath(text_or_path)
    if os.path.isfile(text):
        try:
            with open(text, encoding="utf-8", errors="replace") as f:
                items = list(enumerate(f, 1))
        except OSError as exc:
            raise InputError(f"{text}: cannot read: {exc.strerror or exc}") from None
        source = text

        def where(i: int) -> str:
            return f"{text}:{i}"
    else:
        if "=" not in text:
            raise InputError(f"{text}: no such file, and not a GROUP=VO list (e.g. g2=atlas,g6=cms)")
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
            raise InputError(f"{where(i)}: expected GROUP=VO or GROUP VO, got {raw.strip()!r}")
        group, vo = parts
        if group in out and out[group] != vo:
            raise InputError(f"{where(i)}: group {group} mapped twice ({out[group]} and {vo})")
        out[group] = vo
    if not out:
        raise InputError(f"{source}: empty VO mapping")
    return out
