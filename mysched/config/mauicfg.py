"""Reading a MAUI 3.2 ``maui.cfg``, for `mysched import-maui` (`mauiimport` maps what it read).

MAUI's file is lines of ``PARAM VALUE`` or ``PARAM[INDEX] ATTR=VALUE ATTR=VALUE``, ``#``
comments, parameter and attribute names in any case (values keep theirs). A credential's
attributes may be spread over several lines (``SRCFG[test] STARTTIME=8:00:00`` on one,
``SRCFG[test] ENDTIME=17:00:00`` on the next): MAUI merges them, so does this reader. A line
it cannot read is a located warning, never an exception: a site's file of fifteen years has
typos MAUI itself skipped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mysched.errors import clip

CFG_PARAMS = frozenset({"GROUPCFG", "ACCOUNTCFG", "ACCTCFG", "USERCFG", "CLASSCFG", "QOSCFG", "SRCFG", "NODECFG",
                        "RMCFG", "AMCFG", "SYSCFG", "SYSTEMCFG", "CLIENTCFG", "PARCFG"})
"""Parameters whose value is ``ATTR=VALUE`` pairs (ACCTCFG is MAUI's other spelling of ACCOUNTCFG)."""

_LINE = re.compile(r"^([A-Za-z][A-Za-z0-9_.]*)(?:\[([^\[\]\s]*)\])?(?:\s+(.*))?$")
_ATTR = re.compile(r"^([A-Za-z][A-Za-z0-9_.]*(?:\[[^\[\]=\s]*\])?)=(.*)$")


@dataclass
class Setting:
    """One parameter (``FSDEPTH``) or one credential's (``GROUPCFG[atlas]``) as read: its value,
    or its attributes with the line each was set on."""

    param: str
    index: str | None
    line: int
    value: str = ""
    attrs: dict[str, tuple[str, int]] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return self.param + (f"[{self.index}]" if self.index is not None else "")


@dataclass
class MauiFile:
    """What a maui.cfg says, in the order it first says it, and the warnings of reading it."""

    filename: str
    settings: dict[tuple[str, str | None], Setting] = field(default_factory=dict)
    warnings: list[tuple[int, str]] = field(default_factory=list)

    def get(self, param: str, index: str | None = None) -> Setting | None:
        return self.settings.get((param, index))

    def of(self, param: str) -> list[Setting]:
        """Every indexed setting of `param` (``GROUPCFG[...]``), in file order."""
        return [s for (p, i), s in self.settings.items() if p == param and i is not None]


def read_maui(text: str, filename: str) -> MauiFile:
    """The settings of a maui.cfg's text; lines that are no ``PARAM VALUE`` are warnings."""
    out = MauiFile(filename)
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        m = _LINE.match(line)
        if not m:
            out.warnings.append((lineno, f"not a MAUI parameter line (PARAM VALUE or PARAM[NAME] ATTR=VALUE): "
                                         f"{clip(line)!r}"))
            continue
        param, index, value = m.group(1).upper(), m.group(2), (m.group(3) or "").strip()
        if param == "ACCTCFG":
            param = "ACCOUNTCFG"
        if index == "":
            out.warnings.append((lineno, f"{param}[]: an empty name in brackets"))
            continue
        if not value:
            out.warnings.append((lineno, f"{param}{f'[{index}]' if index else ''}: no value"))
            continue
        key = (param, index)
        s = out.settings.get(key)
        if param in CFG_PARAMS:
            if s is None:
                s = out.settings[key] = Setting(param, index, lineno)
            _attrs(s, value, lineno, out.warnings)
        else:
            if s is not None:
                out.warnings.append((lineno, f"{s.label} set again (first on line {s.line}): this line counts, "
                                             "as in MAUI"))
            out.settings[key] = Setting(param, index, lineno, value)
    return out


def _attrs(s: Setting, value: str, lineno: int, warnings: list[tuple[int, str]]) -> None:
    """``ATTR=VALUE`` pairs into `s`; a bare word after a pair continues its list, as in
    MAUI's own ``QOSLIST=high low special-``."""
    last: str | None = None
    for token in value.split():
        m = _ATTR.match(token)
        if m:
            last = m.group(1).upper()
            s.attrs[last] = (m.group(2), lineno)
        elif last is not None:
            prev, _ = s.attrs[last]
            s.attrs[last] = (f"{prev},{token}" if prev else token, lineno)
        else:
            warnings.append((lineno, f"{s.label}: {clip(token)!r} is not ATTR=VALUE"))


def limit(text: str) -> int | None:
    """A MAUI limit (``8``, or soft and hard ``2,8``): the hard one -- the number MAUI never
    passes, and mysched has one limit only; None for no limit (0 or -1). `ValueError` if it
    is no number."""
    parts = text.split(",")
    if len(parts) > 2 or not all(re.fullmatch(r"-?\d{1,12}", p.strip()) for p in parts):
        raise ValueError(f"expected a number or SOFT,HARD, got {clip(text)!r}")
    hard = int(parts[-1])
    return hard if hard > 0 else None


def percent(text: str) -> tuple[float, str]:
    """An FSTARGET: the percentage and its mark ('+' a floor, '-' a cap, '' a target)."""
    m = re.fullmatch(r"(\d{1,9}(?:\.\d*)?)([+\-^%]?)", text.strip())
    if not m or float(m.group(1)) > 100:
        raise ValueError(f"expected a percentage from 0 to 100 (with + for a floor, - for a cap), got {clip(text)!r}")
    return float(m.group(1)), m.group(2)


def items(text: str) -> list[str]:
    """A comma (or blank) separated MAUI list."""
    return [t for t in re.split(r"[,\s]+", text) if t]
