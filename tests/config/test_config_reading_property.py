"""Property: whatever bytes a configuration file holds -- random bytes, libconfig-like token
soup, huge lines, deep nesting, @includes of special files -- reading it gives a `Config` or a
`ConfigError` whose every line names the file, in words and short; never another exception,
never a hang."""

from __future__ import annotations

import os
import re
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.config import load_config
from mysched.errors import ConfigError

SETTINGS = settings(max_examples=int(os.environ.get("MYSCHED_FUZZ_EXAMPLES", 120)), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
PYTHON_WORDS = re.compile(r"Traceback|Error\b|invalid literal|codec|Errno|Unexpected token|Expected end|"
                          r"Couldn't load|\(':'|row \d+, column|object at 0x|<class |"
                          r"syntax error: .*\bexpected\b|',\)|\bunexpected\b")
"""Python's and libconf's wording (``expected: ('}',)``), and the parser's (a syntax error is
said in words: ``a '}' is missing before the end of the file``)."""

_token = st.sampled_from(["{", "}", "(", ")", "[", "]", "=", ":", ";", ",", "\n", " ", '"s"', '"\\x4"', '"\\xzz"',
                          "12", "-3", "0x1F", "7L", "1e999", "1.5", "true", "False", "vos", "atlas", "share",
                          "slots", "groups", "scheduler", "interval", "server", "url", "history", "database",
                          "@include \"x.cfg\"\n", "\n@include \"/dev/zero\"\n", "\n@include \"fifo\"\n",
                          "\n@include \".\"\n", "\n@include \"main.cfg\"\n", "# c\n", "// c\n", "/* c */", "/*",
                          '"', "\\", "\x00", "\xe9", "\u2028", "$", "9" * 5000, "x" * 3000])
_soup = st.lists(_token, max_size=60).map("".join)
_huge = st.tuples(st.sampled_from(['a = "{}";\n', "{}\n", 'vos = {{ {} = {{ share = 1; }}; }};\n', "# {}\n",
                                   'server = {{ url = "sim://?nodes={}"; }};\n']),
                  st.sampled_from(["x", "1", " ", "{", "é"]), st.integers(1, 400_000)
                  ).map(lambda t: t[0].format(t[1] * t[2]))
_deep = st.tuples(st.sampled_from([("a = {", "};"), ("(", ")"), ("[", "]"), ("b = (", ")")]),
                  st.integers(1, 20_000)).map(lambda t: "x = " + t[0][0] * t[1] + "1" + t[0][1] * t[1] + ";\n")


def _read(path: str) -> list[str]:
    """The problems of reading `path` ([] when it is a configuration), in a thread that must end."""
    out: list[object] = []

    def go() -> None:
        try:
            load_config(path)
            out.append([])
        except ConfigError as exc:
            out.append(exc.problems)
        except BaseException as exc:  # noqa: BLE001 - reported below as the failure it is
            out.append(exc)
    t = threading.Thread(target=go, daemon=True)
    t.start()
    t.join(120)
    assert out, "reading the configuration did not end"
    assert isinstance(out[0], list), f"{type(out[0]).__name__}: {out[0]}"
    return out[0]


def _check(problems: list[str], tmp: str) -> None:
    for p in problems:
        assert re.match(r"/[^:]+(:\d+)?: ", p) and (p.startswith(tmp) or not p.startswith("/tmp")), p[:300]
        assert not PYTHON_WORDS.search(p), p[:500]
        assert len(p) <= 2100 and not re.search(r"(.)\1{210}", p), p[:300]


@pytest.fixture(scope="module")
def place(tmp_path_factory):
    d = tmp_path_factory.mktemp("cfg")
    os.mkfifo(d / "fifo")
    (d / "x.cfg").write_text('vos = { atlas = { groups = ["atlas"]; share = 50; }; };\n')
    return d


@SETTINGS
@given(st.one_of(st.binary(max_size=3000), _soup.map(str.encode), _huge.map(str.encode), _deep.map(str.encode),
                 st.tuples(_soup, _huge).map(lambda t: (t[0] + t[1]).encode("utf-8", "surrogatepass"))))
def test_any_file_is_a_configuration_or_located_problems_in_words(place, data):
    (place / "main.cfg").write_bytes(data)
    _check(_read(str(place / "main.cfg")), str(place))


@SETTINGS
@given(st.sampled_from(["/dev/zero", "/dev/null", "/dev/urandom", "/proc/self/mem", "/proc/self/environ",
                        "/proc/self/fd", "fifo", ".", "main.cfg", "missing.cfg", "x.cfg", "/etc/passwd"]),
       st.integers(0, 3))
def test_an_include_of_any_file_is_read_or_refused_at_its_line(place, target, before):
    (place / "main.cfg").write_text("# a comment\n" * before + f'@include "{target}"\n')
    problems = _read(str(place / "main.cfg"))
    _check(problems, str(place))
    if target in ("/dev/zero", "/dev/urandom", "fifo", ".", "main.cfg", "missing.cfg", "/proc/self/fd"):
        assert problems and problems[0].startswith(f"{place}/main.cfg:{before + 1}: @include \"{target}\": ")
