"""libconfig parsing that remembers where each setting stands.

libconf returns plain dicts and silently keeps the last of two equal keys. Admins need the
file and line of a bad key -- also inside an ``@include``d file -- and must hear about a
duplicate, so this parser subclasses libconf's and records ``key path -> (file, line)`` while
it parses. ``@include "x.cfg"`` with a relative path is read from the directory of the file
that is being loaded (not from wherever the daemon happens to run).
"""

from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field
from typing import Any

import libconf

from mysched.errors import ConfigError

Path = tuple[str | int, ...]
Where = tuple[str, int]
"""(file, line) of a setting."""


def dotted(path: Path) -> str:
    """``("vos", "atlas", "share")`` -> ``vos.atlas.share``; list items as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + part
    return out or "(top level)"


@dataclass
class ParsedConfig:
    """The raw settings tree plus where each key was written."""

    data: dict[str, Any]
    filename: str
    lines: dict[Path, Where] = field(default_factory=dict)
    duplicates: list[tuple[Path, Where, Where]] = field(default_factory=list)

    def where(self, path: Path) -> str:
        """``FILE:LINE`` of the nearest enclosing setting that has a known line."""
        p = tuple(path)
        while p:
            if p in self.lines:
                return at(self.lines[p])
            p = p[:-1]
        return self.filename


def in_file_order(problems: list[str], parsed: ParsedConfig) -> list[str]:
    """``FILE:LINE: ...`` lines sorted by line: the main file's first, then each file it
    @includes, in the order they were read; a line naming no line number goes first in its
    file, and lines of the same setting keep their order."""
    files = [parsed.filename] + [w[0] for w in parsed.lines.values()]
    rank = {f: i for i, f in reversed(list(enumerate(files)))}
    ordered = sorted(rank, key=len, reverse=True)  # "a.cfg.orig" before "a.cfg"

    def key(line: str) -> tuple[int, int]:
        for f in ordered:
            if line.startswith(f + ":"):
                m = re.match(r":(\d+):", line[len(f):])
                return rank[f], int(m.group(1)) if m else 0
        return len(files), 0
    return sorted(problems, key=key)


def at(where: Where) -> str:
    """``FILE:LINE``."""
    return f"{where[0]}:{where[1]}"


class _LocatingParser(libconf.Parser):
    def __init__(self, tokenstream: libconf.TokenStream) -> None:
        super().__init__(tokenstream)
        self.stack: list[str | int] = []
        self.lines: dict[Path, Where] = {}
        self.duplicates: list[tuple[Path, Where, Where]] = []

    def setting_list_or_empty(self):  # noqa: D401 - libconf's grammar hook
        result = libconf.AttrDict()
        while True:
            start = self.tokens.peek()
            s = self.setting()
            if s is None:
                return result
            name, value = s
            path = tuple(self.stack) + (name,)
            if name in result:
                self.duplicates.append((path, self.lines.get(path, (start.filename, 0)),
                                        (start.filename, start.row)))
            self.lines[path] = (start.filename, start.row)
            result[name] = value

    def setting(self):
        name = self.tokens.accept("name")
        if name is None:
            return None
        self.tokens.expect(":", "=")
        self.stack.append(name.text)
        # Record the line before descending so nested errors can point at it.
        self.lines.setdefault(tuple(self.stack), (name.filename, name.row))
        try:
            value = self.value()
        finally:
            self.stack.pop()
        if value is None:
            self.tokens.error("expected a value")
        self.tokens.accept(";", ",")
        return (name.text, value)

    def _comma_separated_list_or_empty(self, nonterminal):
        values = []
        while True:
            self.stack.append(len(values))
            start = self.tokens.peek()
            try:
                v = nonterminal()
            finally:
                self.stack.pop()
            if v is None:
                return values
            if start is not None:
                self.lines.setdefault(tuple(self.stack) + (len(values),), (start.filename, start.row))
            values.append(v)
            if not self.tokens.accept(","):
                return values


def parse_text(text: str, filename: str = "<config>", includedir: str | None = None) -> ParsedConfig:
    """Parse libconfig text; syntax errors become `ConfigError` naming file and line.

    `includedir` is where relative ``@include`` paths are looked up (default: the directory of
    `filename`)."""
    if includedir is None:
        includedir = os.path.dirname(os.path.abspath(filename)) if not filename.startswith("<") else os.getcwd()
    try:
        stream = libconf.TokenStream.from_file(io.StringIO(text), filename=filename, includedir=includedir)
        parser = _LocatingParser(stream)
        data = parser.parse()
    except libconf.ConfigParseError as exc:
        msg = str(exc)
        m = re.search(r" in '([^']*)',? row (\d+)", msg)
        if m:
            where = f"{m.group(1)}:{m.group(2)}"
        elif "include" in msg:
            where = filename
            msg = msg.replace("Could not open include file", f"@include: cannot open (relative to {includedir})")
        elif "end of input" in msg:  # an unclosed brace or list: the file ends inside it
            where = f"{filename}:{text.count(chr(10)) + (not text.endswith(chr(10)))}"
            msg += " (a '{', '(' or '[' left open above" + (", or in a file it @includes)" if "@include" in text
                                                             else ")")
        else:
            where = filename
        msg = re.sub(r" in '[^']*',? row \d+, column \d+", "", msg)
        raise ConfigError(f"{where}: syntax error: {msg}") from None
    except RecursionError:
        raise ConfigError(f"{filename}: settings nested too deeply to be a configuration") from None
    except UnicodeDecodeError as exc:  # raised reading an @include: name the included file
        raise ConfigError(f"{_undecodable(text, includedir) or filename}: cannot read: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{filename}: cannot read: {exc}") from None
    return ParsedConfig(_plain(data), filename, parser.lines, parser.duplicates)


def _undecodable(text: str, includedir: str, depth: int = 0) -> str | None:
    """The first file @included from `text` (at any depth) that is not UTF-8."""
    for name in re.findall(r'^\s*@include\s+"([^"]*)"', text, re.M):
        path = os.path.join(includedir, name)
        try:
            with open(path, "rb") as f:
                inner = f.read().decode("utf-8")
        except UnicodeDecodeError:
            return path
        except OSError:
            continue
        got = _undecodable(inner, os.path.dirname(path), depth + 1) if depth < 10 else None
        if got:
            return got
    return None


def parse_file(path: str) -> ParsedConfig:
    """Read and parse a configuration file (its ``@include``s relative to its directory)."""
    try:
        with open(path, encoding="utf-8-sig") as f:  # a byte order mark some editors write is no setting
            text = f.read()
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"{path}: is a directory, not a configuration file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read: {exc}") from None
    return parse_text(text, path)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
