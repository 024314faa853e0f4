"""Reading a configuration is bounded and never blocks: a FIFO, a device or a directory is
refused, named with the file and line of the @include that names it; a file too large, an
@include circle or one nested too deep is refused in words -- never libconf's or Python's."""

from __future__ import annotations

import os
import re
import threading

import pytest

from mysched.config import load_config
from mysched.config.parse import MAX_CONFIG_BYTES, MAX_INCLUDE_DEPTH, parse_file
from mysched.errors import ConfigError

VOS = 'vos = { atlas = { groups = ["atlas"]; share = 50; }; };\n'
PARSER_WORDS = re.compile(r"Unexpected token|Expected end|Couldn't load|\(':'|codec|invalid literal|Errno|"
                          r"Error\b|row \d|column \d")


def refusal(path) -> str:
    """The one message a file is refused with, checked for parser or Python wording."""
    done: list[str] = []

    def read() -> None:
        try:
            load_config(str(path))
        except ConfigError as exc:
            done.append(str(exc))
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(30)
    assert done, "the configuration was not refused (or its reading blocked)"
    assert not PARSER_WORDS.search(done[0]), done[0]
    return done[0]


@pytest.mark.parametrize("target, what", [("/dev/zero", "a character device"), ("{d}", "a directory"),
                                          ("{d}/fifo", "a named pipe (FIFO)")])
def test_an_include_of_a_special_file_is_refused_naming_the_including_line(tmp_path, target, what):
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "site.cfg").write_text(VOS + f'@include "{target.format(d=tmp_path)}"\n')
    msg = refusal(tmp_path / "site.cfg")
    assert msg.startswith(f"{tmp_path}/site.cfg:2: @include ") and f"is {what}, not a configuration file" in msg


@pytest.mark.parametrize("target", ["/dev/zero", "fifo", "."])
def test_a_special_file_given_as_the_configuration_is_refused(tmp_path, target):
    os.mkfifo(tmp_path / "fifo")
    msg = refusal(tmp_path / target if target != "/dev/zero" else target)
    assert "not a configuration file" in msg


def test_a_file_too_large_is_refused_without_reading_it_all(tmp_path):
    (tmp_path / "big.cfg").write_text(VOS + "# " + "x" * MAX_CONFIG_BYTES + "\n")
    (tmp_path / "site.cfg").write_text(VOS + '@include "big.cfg"\n')
    assert f"at most {MAX_CONFIG_BYTES} bytes" in refusal(tmp_path / "big.cfg")
    assert refusal(tmp_path / "site.cfg").startswith(f"{tmp_path}/site.cfg:2: @include \"big.cfg\": is ")


def test_one_file_included_many_times_counts_towards_one_bound(tmp_path):
    (tmp_path / "part.cfg").write_text("# " + "x" * (MAX_CONFIG_BYTES // 2) + "\n")
    (tmp_path / "site.cfg").write_text(VOS + '@include "part.cfg"\n' * 20)
    assert "more than" in refusal(tmp_path / "site.cfg") and "together" in refusal(tmp_path / "site.cfg")


def test_an_include_circle_and_includes_nested_too_deep_are_refused(tmp_path):
    (tmp_path / "a.cfg").write_text('@include "b.cfg"\n')
    (tmp_path / "b.cfg").write_text('\n@include "a.cfg"\n')
    assert refusal(tmp_path / "a.cfg") == f'{tmp_path}/b.cfg:2: @include "a.cfg": the file @includes itself ' \
                                          "(a circle of @includes)"
    for i in range(MAX_INCLUDE_DEPTH + 2):
        (tmp_path / f"n{i}.cfg").write_text(f'@include "n{i + 1}.cfg"\n')
    (tmp_path / f"n{MAX_INCLUDE_DEPTH + 2}.cfg").write_text(VOS)
    assert f"nested more than {MAX_INCLUDE_DEPTH} deep" in refusal(tmp_path / "n0.cfg")


@pytest.mark.parametrize("text, said", [
    ('a 3;\n', "site.cfg:1: syntax error: 'a' must be followed by '=', not by the value 3"),
    ('\na = 1; }\n', "site.cfg:2: syntax error: '}' closes nothing (one too many, or its opening one is missing above)"),
    ('a = $;\n', "site.cfg:1: syntax error: '$' cannot stand here"),
    ('a = "\\xzz";\n', "site.cfg:1: syntax error: a string with a bad escape"),
    ("a = " + "9" * 5000 + ";\n", "site.cfg:1: syntax error: a number too long to be a setting"),
    ("a = " + "[" * 5000 + "]" * 5000 + ";\n", "site.cfg:1: syntax error: settings nested more than 64 deep"),
    (VOS + "a = \"" + "x" * 3000 + "\n", "site.cfg:2: syntax error: a string is never closed (its closing '\"' is missing)"),
    ('x\xe9 = 1;\n', "site.cfg:1: syntax error: '\xe9' cannot stand in a name"),
])
def test_a_syntax_error_is_said_in_words_at_its_line(tmp_path, text, said):
    (tmp_path / "site.cfg").write_text(text)
    msg = refusal(tmp_path / "site.cfg")
    assert msg.startswith(f"{tmp_path}/{said}"), msg
    assert len(msg) < 600


def test_a_long_key_or_value_is_cut_to_200_characters_in_the_message(tmp_path):
    (tmp_path / "site.cfg").write_text(f'scheduler = {{ interval = "{"y" * 5000}"; }};\n'
                                       f'vos = {{ {"x" * 5000} = {{ share = 200; }}; }};\n')
    try:
        load_config(str(tmp_path / "site.cfg"))
    except ConfigError as exc:
        problems = exc.problems
    assert len(problems) >= 2
    for p in problems:
        assert "x" * 201 not in p and "y" * 201 not in p and "(5000 characters)" in p, p[:300]


def test_a_file_that_is_not_utf8_names_its_line(tmp_path):
    (tmp_path / "site.cfg").write_bytes(VOS.encode() + b'default_vo = "caf\xe9";\n')
    assert refusal(tmp_path / "site.cfg") == f"{tmp_path}/site.cfg:2: not UTF-8 text: save the file as UTF-8"


def test_a_sound_include_still_reads(tmp_path):
    (tmp_path / "vos.cfg").write_text(VOS)
    (tmp_path / "site.cfg").write_text('scheduler = { interval = 30; };\n@include "vos.cfg"\n')
    parsed = parse_file(str(tmp_path / "site.cfg"))
    assert parsed.lines[("vos", "atlas")] == (f"{tmp_path}/vos.cfg", 1)
    assert load_config(str(tmp_path / "site.cfg")).interval == 30
