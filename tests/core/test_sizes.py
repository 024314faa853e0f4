"""Sizes as TORQUE writes them, and counts in ASCII digits only: what pbs_server, the
accounting logs and the configuration may say, and what they may not."""

from __future__ import annotations

import pytest

from mysched.core.model.sizes import digits, parse_mem

KB, MB, GB, TB, PB = 1 << 10, 1 << 20, 1 << 30, 1 << 40, 1 << 50


@pytest.mark.parametrize("text, size", [
    ("4GB", 4 * GB), ("16Gb", 16 * GB), ("2mB", 2 * MB),  # any case, as qsub takes it
    ("4g", 4 * GB), ("512k", 512 * KB),                    # the unit's b may be left out
    ("1tb", TB), ("2pb", 2 * PB),
    ("3w", 24), ("2mw", 16 * MB),                          # words of 8 bytes
    ("0", 0), ("0kb", 0),
])
def test_every_unit_and_spelling_torque_writes_is_read(text, size):
    assert parse_mem(text) == size


def test_spaces_around_and_between_number_and_unit_are_allowed():
    assert parse_mem("  2000mb\n") == 2000 * MB
    assert parse_mem("4 gb") == 4 * GB


@pytest.mark.parametrize("text", ["", "gb", "-1gb", "+1gb", "1e3", "4 g b", "4xb", "4gbb", "1,5gb",
                                  "٣gb", "²kb", "4 gigabytes"])
def test_what_is_no_size_is_refused_naming_it(text):
    with pytest.raises(ValueError) as e:
        parse_mem(text)
    assert str(e.value) == f"bad size {text!r}"


@pytest.mark.parametrize("text, ok", [("0", True), ("4096", True), ("007", True), ("", False), ("-1", False),
                                      ("1.0", False), (" 1", False), ("²", False), ("١٢", False), ("12a", False)])
def test_only_ascii_digits_are_a_count(text, ok):
    assert digits(text) is ok
