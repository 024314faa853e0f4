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

from mysched.errors import MAX_SHOWN, ConfigError, clip
from mysched.files import Unsuitable, read_capped

Path = tuple[str | int, ...]
Where = tuple[str, int]
"""(file, line) of a setting."""


def dotted(path: Path) -> str:
    """``("vos", "atlas", "share")`` -> ``vos.atlas.share``; list items as ``[i]``; a name of
    more than `MAX_SHOWN` characters cut to that."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + clip(part)
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


_CLOSER = {"{": "}", "(": ")", "[": "]"}
_WHAT = {"{": "group", "(": "list", "[": "array"}


class _LocatingParser(libconf.Parser):
    """libconf's grammar, remembering each setting's line and saying a syntax error in an
    admin's words (``a '}' is missing before the end of the file``) where libconf says
    ``expected: ('}',)``; a group, list or array keeps its opening bracket while its contents
    are read, so that a missing closer names the line of its opener."""

    def __init__(self, tokenstream: libconf.TokenStream, filename: str) -> None:
        super().__init__(tokenstream)
        self.filename = filename
        self.stack: list[str | int] = []
        self.lines: dict[Path, Where] = {}
        self.duplicates: list[tuple[Path, Where, Where]] = []

    def _line(self, t: Any) -> str:
        """Where token `t` stands: ``on line N`` in the main file, else ``at FILE:N``."""
        return f"on line {t.row}" if t.filename == self.filename else f"at {t.filename}:{t.row}"

    def _refuse(self, message: str) -> None:
        """A syntax error at the next token (none: at the end of the file)."""
        t = self.tokens.peek()
        raise _Refused("" if t is None else f"{t.filename}:{t.row}", message)

    def configuration(self):  # noqa: D401 - libconf's grammar hook
        result = self.setting_list_or_empty()
        t = self.tokens.peek()
        if t is not None:
            if t.type in "})]":
                self._refuse(f"'{t.text}' closes nothing (one too many, or its opening one is missing above)")
            if t.type in "=:":
                self._refuse(f"'{t.text}' with no name before it (a setting is name = value;)")
            self._refuse(f"{_shown(t)} where a setting should start (a setting is name = value;)")
        return result

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
        shown = f"'{clip(name.text)}'"
        if self.tokens.accept(":", "=") is None:
            t = self.tokens.peek()
            if t is None:
                self._refuse(f"the file ends after the name {shown} (a setting is name = value;)")
            example = f" ({clip(name.text)} = {{ ... }};)" if t.type == "{" else ""
            self._refuse(f"{shown} must be followed by '='{example}, not by {_shown(t)}")
        self.stack.append(name.text)
        # Record the line before descending so nested errors can point at it.
        self.lines.setdefault(tuple(self.stack), (name.filename, name.row))
        try:
            value = self.value()
        finally:
            self.stack.pop()
        if value is None:
            t = self.tokens.peek()
            if t is None:
                self._refuse(f"the file ends before the value of {shown}")
            if t.type == "name":
                self._refuse(f"{clip(name.text)} = {clip(t.text)}: strings take double quotes (\"{clip(t.text)}\")")
            self._refuse(f"{shown} has no value before {_shown(t)} (a setting is name = value;)")
        self.tokens.accept(";", ",")
        return (name.text, value)

    def _enclosed_block(self, start, nonterminal, end):
        opener = self.tokens.accept(start)
        if opener is None:
            return None
        result = nonterminal()
        if self.tokens.accept(end) is None:
            self._unclosed(opener, result)
        return result

    def _unclosed(self, opener: Any, inside: Any) -> None:
        """Why the group, list or array `opener` began did not end where it should."""
        end, what = _CLOSER[opener.type], _WHAT[opener.type]
        of = f" of '{clip(self.stack[-1])}'" if self.stack and isinstance(self.stack[-1], str) else ""
        there = f"the '{opener.type}'{of} {self._line(opener)}"
        t = self.tokens.peek()
        if t is None:
            self._refuse(f"a '{end}' is missing before the end of the file ({there} is never closed)")
        if t.type in "})]":
            self._refuse(f"a '{end}' is missing before '{t.text}' ({there} is not closed)")
        if what == "group":
            if t.type in "=:":
                self._refuse(f"'{t.text}' with no name before it, inside {there} (a setting is name = value;)")
            self._refuse(f"{_shown(t)} where a setting should start, inside {there} (a setting is name = value;)")
        if t.type == "name":
            self._refuse(f"{clip(t.text)} inside {there}: strings take double quotes (\"{clip(t.text)}\")")
        if what == "array" and t.type in "{(":
            self._refuse(f"'{t.text}' inside {there}: an array [ ] holds single values (numbers, strings, true or "
                         "false); a list of groups or lists is written ( ... )")
        sep = "a ',' between two items or " if inside else ""
        self._refuse(f"{sep}a '{end}' is missing before {_shown(t)} ({there})")

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


MAX_CONFIG_BYTES = 1 << 20
"""The largest configuration file, and the most the file and every file it @includes may hold
together (one small file included many times counts each time): a site's whole file, node
lists of 10,000 hosts included, is a few hundred kB, and libconf reads about 100 kB a second
on a loaded batch server, so reading stops there."""
MAX_CONFIG_TOTAL = MAX_CONFIG_BYTES
MAX_INCLUDE_DEPTH = 10
"""@includes within @includes (libconfig's own limit)."""
MAX_NESTING = 64
"""Groups, lists and arrays within each other; a configuration needs five."""

_INCLUDE = re.compile(r'@include "(.*)"$')


_CLIPPED = re.compile(r".{%d}\.\.\. \(\d+ characters\)" % MAX_SHOWN, re.S)
"""What `clip` makes of a longer text."""


def clip_long(message: str) -> str:
    """A message with every quoted text or run without a blank of more than `MAX_SHOWN`
    characters (a value or a key it repeats) cut to that, and at most ten times that in all: a
    message says where and what, it does not copy the file."""
    long_ = MAX_SHOWN + 1

    def cut(m: re.Match) -> str:
        if m.group(1) and _CLIPPED.fullmatch(m.group(2)):
            return m.group(0)  # `clip` cut it already
        return m.group(1) + clip(m.group(2)) + m.group(1) if m.group(1) else clip(m.group(0))

    out = re.sub(r"(['\"])([^'\"\n]{%d,})\1|\S{%d,}" % (long_, long_ + 3), cut, message)
    return clip(out, 10 * MAX_SHOWN)


class _Refused(Exception):
    """A located problem while reading or parsing: (FILE[:LINE], message)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where, self.message = where, message


class _Unreadable(_Refused):
    """A file that cannot be read as a configuration (not a syntax error)."""


def read_text(path: str, limit: int = MAX_CONFIG_BYTES) -> str:
    """The UTF-8 text of a regular file of at most `limit` bytes; `ValueError` saying why not,
    in words. A FIFO, device, socket or directory is refused before a byte is read, without
    blocking (`files.read_capped`)."""
    try:
        data = read_capped(path, limit, "configuration file")
    except Unsuitable as exc:
        if exc.kind is not None:
            raise ValueError(f"is {exc.kind}, not a configuration file") from None
        raise ValueError(f"is {exc.size} bytes: a configuration file is at most {limit} bytes") from None
    except FileNotFoundError:
        raise ValueError("no such file") from None
    except PermissionError:
        raise ValueError("permission denied") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise ValueError(f"cannot read it ({_os_words(exc)})") from None
    try:
        return data.decode("utf-8-sig")  # a byte order mark some editors write is no setting
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise NotText(line, f"line {line} is not UTF-8 text (byte 0x{data[exc.start]:02x}); "
                         "save the file as UTF-8") from None


class NotText(ValueError):
    """A file's bytes that are no UTF-8 text, from `line` on."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line


def _os_words(exc: BaseException) -> str:
    """An OS error's reason without Python's ``[Errno N]`` and repeated file name."""
    return (getattr(exc, "strerror", None) or "unreadable").lower()


class _Tokens(libconf.TokenStream):
    """libconf's token stream; its own errors (``expected: ('}',)``) are never reached, as
    `_LocatingParser` says each in words first -- this one says so should that change."""

    def error(self, msg):
        t = self.peek()
        raise _Refused("" if t is None else f"{t.filename}:{t.row}",
                       f"{'the file ends here' if t is None else _shown(t) + ' cannot stand here'} "
                       "(a setting is name = value;)")


def _shown(t: Any) -> str:
    """A token as an admin would name it."""
    if t.type == "string":
        return f"the string {clip(t.text)}"
    if t.type == "name":
        return f"the name '{clip(t.text)}'"
    if t.type in "{}()[],;=:":
        return f"'{t.text}'"
    return f"the value {clip(t.text)}"


class _Reader:
    """Reads a file and, in its place, every file it @includes, into one token list as libconf
    does (an ``@include "x"`` line stands alone; a relative name is looked up in `includedir`),
    each read bounded (`read_text`), at most `MAX_INCLUDE_DEPTH` deep, never a file that
    includes itself, `MAX_CONFIG_TOTAL` bytes in all."""

    def __init__(self, includedir: str) -> None:
        self.includedir = includedir
        self.left = MAX_CONFIG_TOTAL

    def tokens(self, text: str, filename: str, chain: tuple[str, ...] = ()) -> list[Any]:
        self.left -= len(text)
        if self.left < 0:
            raise _Unreadable(filename, f"the configuration and the files it @includes are more than "
                                     f"{MAX_CONFIG_TOTAL} bytes together")
        tokenizer = libconf.Tokenizer(filename=filename)
        tokens: list[Any] = []
        lines: list[str] = []
        for lineno, line in enumerate(io.StringIO(text), 1):
            m = _INCLUDE.match(line.strip())
            if not m:
                lines.append(line)
                continue
            tokens += self._tokenize(tokenizer, "".join(lines), filename, text)
            lines = [re.sub(r"\S", " ", line)]
            here = f"{filename}:{lineno}"
            try:
                name = libconf.decode_escapes(m.group(1))
            except (UnicodeDecodeError, ValueError):
                raise _Refused(here, f"@include \"{clip(m.group(1))}\": a bad escape (\\x takes two hex digits)") from None
            shown = f'@include "{clip(name)}"'
            path = os.path.join(self.includedir, name)
            if len(chain) >= MAX_INCLUDE_DEPTH:
                raise _Unreadable(here, f"{shown}: @includes nested more than {MAX_INCLUDE_DEPTH} deep")
            real = os.path.realpath(path) if "\0" not in path else path
            if real in chain or real == os.path.realpath(filename):
                raise _Unreadable(here, f"{shown}: the file @includes itself (a circle of @includes)")
            try:
                inner = read_text(path)
            except ValueError as exc:
                if "no such file" in str(exc):
                    exc = ValueError(f"cannot open: no such file (relative to {clip(self.includedir)})")
                raise _Unreadable(here, f"{shown}: {exc}") from None
            tokens += self.tokens(inner, path, chain + (os.path.realpath(filename),))
        tokens += self._tokenize(tokenizer, "".join(lines), filename, text)
        return tokens

    @staticmethod
    def _tokenize(tokenizer: Any, chunk: str, filename: str, text: str) -> list[Any]:
        out: list[Any] = []
        try:
            for t in tokenizer.tokenize(chunk):
                out.append(t)
        except libconf.ConfigParseError:
            row, col = tokenizer.row, tokenizer.column
            line = text.split("\n")[row - 1] if row <= text.count("\n") + 1 else ""
            ch = line[col - 1:col] or "?"
            raise _Refused(f"{filename}:{row}", _stray(ch, line[col - 1:col + 1] == "/*")) from None
        except UnicodeDecodeError:
            raise _Refused(f"{filename}:{tokenizer.row}", "a string with a bad escape (\\x takes two hex "
                                                         "digits)") from None
        except (ValueError, OverflowError):  # an integer of thousands of digits
            raise _Refused(f"{filename}:{tokenizer.row}", "a number too long to be a setting") from None
        return out


def _stray(ch: str, comment: bool) -> str:
    """Why character `ch` starts no token, in words."""
    if ch == "'":
        return "strings take double quotes, not single ones"
    if ch == '"':
        return "a string is never closed (its closing '\"' is missing)"
    if comment:
        return "a /* comment is never closed (its '*/' is missing)"
    if ch == "@":
        return "only @include \"FILE\", alone on its line, starts with '@'"
    if ch.isalnum():  # é, a non-ASCII letter
        return f"'{ch}' cannot stand in a name (names are of A-Z, a-z, 0-9, '-', '_' and '*'; other text goes in a \"string\")"
    what = f"'{ch}'" if ch.isprintable() and not ch.isspace() else f"character U+{ord(ch):04X}"
    return f"{what} cannot stand here (a setting is name = value; strings take double quotes)"


def _check_nesting(tokens: list[Any]) -> None:
    depth = 0
    for t in tokens:
        if t.type in "{([":
            depth += 1
            if depth > MAX_NESTING:
                raise _Refused(f"{t.filename}:{t.row}", f"settings nested more than {MAX_NESTING} deep: "
                                                       "not a configuration")
        elif t.type in "})]":
            depth -= 1


def parse_text(text: str, filename: str = "<config>", includedir: str | None = None) -> ParsedConfig:
    """Parse libconfig text; a syntax error, or an @include that cannot be read, becomes a
    `ConfigError` naming the file and line, in words.

    `includedir` is where relative ``@include`` paths are looked up (default: the directory of
    `filename`)."""
    if includedir is None:
        includedir = os.path.dirname(os.path.abspath(filename)) if not filename.startswith("<") else os.getcwd()
    try:
        if len(text) > MAX_CONFIG_BYTES:
            raise _Unreadable(filename, f"more than {MAX_CONFIG_BYTES} characters: not a configuration file")
        tokens = _Reader(includedir).tokens(text, filename)
        _check_nesting(tokens)
        parser = _LocatingParser(_Tokens(tokens), filename)
        data = parser.parse()
    except _Refused as exc:
        where, msg = exc.where, exc.message
        if not where:  # the file ends inside a setting: at its last line
            where = f"{filename}:{text.count(chr(10)) + (not text.endswith(chr(10)))}"
        kind = "" if isinstance(exc, _Unreadable) else "syntax error: "
        raise ConfigError(clip_long(f"{where}: {kind}{msg}")) from None
    except RecursionError:
        raise ConfigError(f"{filename}: settings nested too deeply to be a configuration") from None
    return ParsedConfig(_plain(data), filename, parser.lines, parser.duplicates)


def parse_file(path: str) -> ParsedConfig:
    """Read and parse a configuration file (its ``@include``s relative to its directory);
    never more than `MAX_CONFIG_BYTES`, never a FIFO or device."""
    try:
        text = read_text(path)
    except NotText as exc:
        raise ConfigError(f"{path}:{exc.line}: not UTF-8 text: save the file as UTF-8") from None
    except ValueError as exc:
        raise ConfigError(clip_long(f"{path}: {exc}")) from None
    return parse_text(text, path)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
