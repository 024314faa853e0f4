"""Value converters and checks for configuration settings: each turns a raw libconfig value
into a typed one or raises `ValueError` with a message an admin can act on."""

from __future__ import annotations

import ipaddress
import math
import re
from string import Formatter
from typing import Any, Callable

from mysched.errors import clip
from mysched.core.model.sizes import MAX_NODE_SLOTS, parse_mem  # noqa: F401 - MAX_NODE_SLOTS: the config's bound


def kind(v: Any) -> str:
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, int):
        return "an integer"
    if isinstance(v, float):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, dict):
        return "a group"
    if isinstance(v, list):
        return "a list"
    return type(v).__name__


def close_key(key: str, allowed: dict[str, Any]) -> str | None:
    import difflib

    m = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.75)
    return m[0] if m else None


def int_(minimum: int = 0, maximum: int | None = None) -> Callable[[Any], int]:
    def conv(v: Any) -> int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ValueError(f"expected an integer, got {kind(v)} {v!r}")
        if v < minimum:
            raise ValueError(f"must be at least {minimum}, got {v}")
        if maximum is not None and v > maximum:
            raise ValueError(f"must be at most {maximum}, got {v}")
        return v
    conv.kind = (f"integer, {minimum} to {maximum}" if maximum is not None  # type: ignore[attr-defined]
                 else f"integer, at least {minimum}")  # what docs/configuration.md calls it
    return conv


DAY = 86400.0
MAX_FARM_NODES = 100_000
"""A simulated farm larger than any site (it would take gigabytes before printing anything)."""
MAX_FARM_SLOTS = 1_000_000
"""The largest simulated farm, nodes x slots (`sim://` and `mysched simulate`): each dimension
has its own cap, but their product could still take gigabytes before the first cycle."""
MAX_WORKLOAD_HOURS = 24 * 366
"""The longest synthetic workload `sim://` and `mysched simulate` draw: a year."""


def parse_address(text: str) -> tuple[str, int] | None:
    """``HOST:PORT`` or ``[::1]:PORT`` -> (host, port); "", "off" or "none" -> None (disabled);
    ValueError otherwise."""
    if text.strip().lower() in ("", "off", "none"):
        return None
    host, sep, port = text.rpartition(":")
    bracketed = host.startswith("[") or host.endswith("]")
    if (not sep or not (port.isascii() and port.isdigit()) or not 0 <= int(port) <= 65535 or (host and " " in host)
            or (bracketed and not (host.startswith("[") and host.endswith("]")))):
        raise ValueError(f"expected HOST:PORT such as 127.0.0.1:9720 (or \"off\"), got {text!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


MAX_NAME_WIDTH = 64
"""The widest field a node-name pattern may ask for (a host name label has at most 63 characters)."""


def check_name_format(fmt: str, count: int = 2) -> None:
    """A node-name pattern must take ``{index}`` and give each of the `count` nodes the farm
    builds its own name. The fields are read before anything is formatted, so that a width of
    99999999999 is refused here instead of exhausting memory; then every name is built once
    (a set of at most `MAX_FARM_NODES` short strings), because a precision (``{index!s:.1}``)
    or an exponent format (``{index:.0e}``) only repeats names from the tenth node on."""
    example = f"expected a pattern such as \"wn{{index:04d}}\" (the only field is index), got {fmt!r}"
    try:
        fields = [(name, spec or "") for _, name, spec, _ in Formatter().parse(fmt) if name is not None]
    except ValueError:
        raise ValueError(f"{example}: a brace without its pair (write {{{{ or }}}} for a brace in the name)") from None
    for name, spec in fields:
        if name != "index":
            raise ValueError(f"{example}: field {{{name}}}")
        if "{" in spec:
            raise ValueError(f"{example}: a field inside the format of index")
        if any(len(d) > 3 or int(d) > MAX_NAME_WIDTH for d in re.findall(r"\d+", spec)):
            raise ValueError(f"{example}: a width or precision of more than {MAX_NAME_WIDTH}")
    if not fields:
        raise ValueError(f"must contain {{index}} so that nodes get different names, got {fmt!r}")
    seen: dict[str, int] = {}
    for i in range(1, max(2, count) + 1):
        try:
            name = fmt.format(index=i)
        except (KeyError, IndexError, ValueError, AttributeError, TypeError):
            raise ValueError(f"{example}: its format after index does not suit a whole number "
                             "(such as :04d or :d)") from None
        first = seen.setdefault(name, i)
        if first != i:
            raise ValueError(f"gives nodes {first} and {i} the same name {name!r}"
                             + (f" (of {count} nodes)" if count > 2 else "") + f", got {fmt!r}")


def number(minimum: float = 0.0, maximum: float = math.inf) -> Callable[[Any], float]:
    def conv(v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ValueError(f"expected a number, got {kind(v)} {v!r}")
        if not math.isfinite(v):  # libconfig reads 1e309 as infinity: no limit or weight means that
            raise ValueError(f"expected a finite number, got {v}")
        if not (minimum <= v <= maximum):
            raise ValueError(f"must be between {minimum:g} and {maximum:g}, got {v}")
        return float(v)
    conv.kind = ("number" if minimum == -math.inf  # type: ignore[attr-defined]
                 else f"number, at least {minimum:g}" if maximum == math.inf else f"number, {minimum:g} to {maximum:g}")
    return conv


def string(v: Any) -> str:
    if not isinstance(v, str):
        raise ValueError(f"expected a string, got {kind(v)} {v!r}")
    return v


def one_of(*choices: str) -> Callable[[Any], str]:
    """A string that must be one of `choices` (a policy or mode name)."""
    def conv(v: Any) -> str:
        if string(v) not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}, got '{v}'")
        return v
    conv.kind = ", ".join(f'"{c}"' for c in choices[:-1]) + f' or "{choices[-1]}"'  # type: ignore[attr-defined]
    return conv


def boolean(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError(f"expected true or false, got {kind(v)} {v!r}")
    return v


def strings(v: Any) -> tuple[str, ...]:
    if isinstance(v, str):
        return (v,)
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError(f"expected a list of strings such as [\"a\", \"b\"], got {kind(v)}")
    return tuple(v)


_NAME_BAD = re.compile(r"[\s\x00-\x1f\x7f]")
MAX_NAME = 256
"""The longest user, group, VO, queue, node type or property name a list may hold (TORQUE's
own names are far shorter); longer ones are typing accidents, shown clipped."""


def name(v: Any) -> str:
    """A user, group, VO, queue, node type or property name: what TORQUE could ever report,
    so never empty, without blanks or control characters -- such a name could match no job or
    node, and the setting would be silently meaningless."""
    text = string(v)
    shown = clip(text)
    if not text:
        raise ValueError("an empty name matches nothing")
    if _NAME_BAD.search(text):
        raise ValueError(f"a name holds no blanks or control characters, got {shown!r}")
    if len(text) > MAX_NAME:
        raise ValueError(f"a name of at most {MAX_NAME} characters, got {shown!r}")
    return text


def names(v: Any) -> tuple[str, ...]:
    """A list of names (`name`); a single string is a list of one."""
    return tuple(name(x) for x in strings(v))


def patterns(v: Any) -> tuple[str, ...]:
    """A list of node-name patterns (shell globs): each a `name` whose brackets pair up --
    fnmatch reads an unpaired "[" as itself, which no host name holds, so such a pattern
    would match no node, silently."""
    out = names(v)
    for pat in out:
        if re.sub(r"\[!?\]?[^\]]*\]", "", pat).count("[") or "]" in re.sub(r"\[!?\]?[^\]]*\]", "", pat):
            raise ValueError(f"a node-name pattern with an unpaired bracket would match no node, got {clip(pat)!r}")
    return out


def size(v: Any) -> int:
    """A memory size: bytes (int) or TORQUE's notation ("2gb")."""
    if isinstance(v, bool):
        raise ValueError(f"expected a size such as \"2gb\", got {kind(v)}")
    if isinstance(v, int):
        if v < 0:
            raise ValueError(f"must not be negative, got {v}")
        return v
    if isinstance(v, str):
        return parse_mem(v)
    raise ValueError(f"expected a size such as \"2gb\" or bytes, got {kind(v)}")


def keep_problems(keep_cycles: float, keep_jobs: float, window: float) -> list[tuple[str, str]]:
    """(setting, what is wrong) for history.keep_cycles / keep_jobs (the configuration and
    `mysched history prune` check them alike)."""
    out = []
    if keep_cycles < 3600:
        out.append(("keep_cycles", "must be at least an hour (\"inf\" keeps the cycle log for ever)"))
    if keep_jobs < window:
        out.append(("keep_jobs", f"must be at least history.window ({window / 86400:g} d): fair share reads the "
                    "finished jobs of that window (\"inf\" keeps them for ever)"))
    return out


_HOST_NAME = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                        r"(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?$")


def host_or_network(text: str) -> str | ipaddress.IPv4Network | ipaddress.IPv6Network:
    """One entry of an address allow-list (daemon.event_allow): an IP network (``10.0.0.0/8``),
    an address (a network of one), or a host name, returned as it is for resolving at start-up;
    ValueError otherwise."""
    entry = text.strip()
    try:
        return ipaddress.ip_network(entry, strict=False)
    except ValueError:
        pass
    if "/" in entry or ":" in entry or not _HOST_NAME.match(entry) or entry.replace(".", "").isdigit():
        raise ValueError(f"expected a host name, an IP address or a network such as 10.0.0.0/8, got '{clip(entry)}'")
    return entry


def host_list(v: Any) -> tuple[str, ...]:
    """A list of host names, addresses and networks (`host_or_network`), kept as written."""
    entries = strings(v)
    for e in entries:
        host_or_network(e)
    return tuple(e.strip() for e in entries)


def boolean_or_auto(v: Any) -> bool | None:
    """true, false, or "auto" (None: decided at start-up from what is found)."""
    if isinstance(v, str) and v.strip().lower() == "auto":
        return None
    if not isinstance(v, bool):
        raise ValueError(f"expected true, false or \"auto\", got {kind(v)} {str(v)[:200]!r}")
    return v
