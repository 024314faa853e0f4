"""The progress bar long commands share (`simulate`, `history import`)."""

from __future__ import annotations

from mysched.cli.main import main


def test_simulate_draws_the_shared_bar_only_when_asked(capsys):
    assert main(["simulate", "--duration", "1", "--progress", "always"]) == 0
    err = capsys.readouterr().err
    last = err.rstrip("\n").split("\r")[-1]
    assert last.startswith("mysched        [" + "#" * 30 + "] 100.0%") and last.endswith(" s")
    assert main(["simulate", "--duration", "1"]) == 0  # stderr is not a terminal here
    assert capsys.readouterr().err == ""
