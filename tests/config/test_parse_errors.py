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
    with pytest.raises(ConfigError, match=r"open\.cfg:3: syntax error: .*left open"):
        load_config(str(tmp_path / "open.cfg"))


def test_a_brace_left_open_in_an_included_file_points_there_too(tmp_path):
    (tmp_path / "b.cfg").write_text("vos = {\n")
    (tmp_path / "a.cfg").write_text('scheduler = { interval = 60; };\n@include "b.cfg"\n')
    with pytest.raises(ConfigError, match=r"a\.cfg:2: syntax error: .*left open above, or in a file it @includes"):
        load_config(str(tmp_path / "a.cfg"))
