"""Syntax and encoding errors name the file (and line) an admin must open."""

from __future__ import annotations

import pytest

from mysched.config import load_config
from mysched.errors import ConfigError

VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; };\n'


def test_an_included_file_that_is_not_utf8_is_the_one_named(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "latin.cfg").write_bytes(b'default_vo = "caf\xe9";\n')
    (tmp_path / "main.cfg").write_text(VOS + '@include "sub/latin.cfg"\n')
    with pytest.raises(ConfigError, match=r"main\.cfg:2: @include \"sub/latin\.cfg\": line 1 is not UTF-8 text"):
        load_config(str(tmp_path / "main.cfg"))


def test_a_byte_order_mark_is_no_setting(tmp_path):
    (tmp_path / "bom.cfg").write_bytes(b"\xef\xbb\xbf" + VOS.encode())
    assert "atlas" in load_config(str(tmp_path / "bom.cfg")).vos


def test_a_brace_left_open_names_the_last_line(tmp_path):
    (tmp_path / "open.cfg").write_text('scheduler = { interval = 60;\n\n' + VOS)
    with pytest.raises(ConfigError, match=r"open\.cfg:3: syntax error: a '}' is missing before the end of the file "
                                          r"\(the '\{' of 'scheduler' on line 1 is never closed\)"):
        load_config(str(tmp_path / "open.cfg"))


def test_a_brace_left_open_in_an_included_file_points_there_too(tmp_path):
    (tmp_path / "b.cfg").write_text("vos = {\n")
    (tmp_path / "a.cfg").write_text('scheduler = { interval = 60; };\n@include "b.cfg"\n')
    with pytest.raises(ConfigError, match=r"a\.cfg:2: syntax error: a '}' is missing before the end of the file "
                                          r"\(the '\{' of 'vos' at .*/b\.cfg:1 is never closed\)"):
        load_config(str(tmp_path / "a.cfg"))


@pytest.mark.parametrize("text, said", [
    # issue 32, item 6: libconf said "expected: ('}',)" and "Couldn't load config: \"'cms']; share = 30; \""
    ("vos = { atlas = { groups = ['cms']; share = 30; }; };\n", "1: syntax error: strings take double quotes, not single ones"),
    ("scheduler = {\n  interval = 60;\n", "2: syntax error: a '}' is missing before the end of the file (the '{' of "
                                          "'scheduler' on line 1 is never closed)"),
    ("x = (1, 2;\n", "1: syntax error: a ',' between two items or a ')' is missing before ';' (the '(' of 'x' on line 1)"),
    ("x = (1 2);\n", "1: syntax error: a ',' between two items or a ')' is missing before the value 2"),
    ("x = [1, 2);\n", "1: syntax error: a ']' is missing before ')' (the '[' of 'x' on line 1 is not closed)"),
    ("x = [{ a = 1; }];\n", "1: syntax error: '{' inside the '[' of 'x' on line 1: an array [ ] holds single values"),
    ("a = 1;\nb = ;\n", "2: syntax error: 'b' has no value before ';' (a setting is name = value;)"),
    ("default_vo = atlas;\n", "1: syntax error: default_vo = atlas: strings take double quotes (\"atlas\")"),
    ("x = (atlas);\n", "1: syntax error: atlas inside the '(' of 'x' on line 1: strings take double quotes"),
    ("scheduler { interval = 60; };\n", "1: syntax error: 'scheduler' must be followed by '=' (scheduler = { ... };), "
                                       "not by '{'"),
    ("\n\nscheduler = { \"interval\" = 60; };\n", "3: syntax error: the string \"interval\" where a setting should start, "
                                                  "inside the '{' of 'scheduler' on line 3"),
    ('"a" = 1;\n', "1: syntax error: the string \"a\" where a setting should start (a setting is name = value;)"),
    ("= 1;\n", "1: syntax error: '=' with no name before it"),
    ("a = 1;\n}\n", "2: syntax error: '}' closes nothing"),
    ("a = 1;\n/* to do\n", "2: syntax error: a /* comment is never closed (its '*/' is missing)"),
    ("a = @x;\n", "1: syntax error: only @include \"FILE\", alone on its line, starts with '@'"),
    ("interval", "1: syntax error: the file ends after the name 'interval'"),
    ("a =\n", "1: syntax error: the file ends before the value of 'a'"),
])
def test_a_syntax_error_reads_as_english_at_its_line(tmp_path, text, said):
    (tmp_path / "x.cfg").write_text(text)
    with pytest.raises(ConfigError) as exc:
        load_config(str(tmp_path / "x.cfg"))
    assert str(exc.value).startswith(f"{tmp_path}/x.cfg:{said}")
    assert "expected" not in str(exc.value) and "',)" not in str(exc.value)  # libconf's "expected: ('}',)"
