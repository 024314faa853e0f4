"""`mysched bench`: figures for a small farm, and refused nonsense sizes."""

from __future__ import annotations

import json

import pytest

from mysched.cli.main import main


def test_bench_reports_plan_build_and_memory(capsys):
    assert main(["bench", "--nodes", "20", "--running", "100", "--queued", "300", "--repeat", "2",
                 "--json", "-"]) == 0
    out = capsys.readouterr().out
    doc = json.loads(out[out.index("{"):])
    assert doc["nodes"] == 20 and doc["running"] == 100 and doc["queued"] == 300
    assert doc["free_slots"] == 20 * 8 - 100 and 0 < doc["starts"] <= doc["free_slots"]
    assert doc["plan_s"]["p50"] > 0 and doc["peak_rss_mb"] > 0


@pytest.mark.parametrize("argv", [["--queued", "-5"], ["--running", "-1"], ["--nodes", "0"]])
def test_bench_refuses_negative_sizes(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["bench", *argv])
    assert exc.value.code == 2
    assert "must be" in capsys.readouterr().err


def test_simulate_refuses_a_farm_that_would_exhaust_memory(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--nodes", "1000000000"])
    assert exc.value.code == 2 and "at most 100000" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["no/such/x.json", "."])
def test_bench_refuses_a_json_file_it_cannot_write_before_measuring(tmp_path, capsys, name):
    assert main(["bench", "--nodes", "20", "--running", "10", "--queued", "10", "--repeat", "1",
                 "--json", str(tmp_path / name)]) == 2
    out, err = capsys.readouterr()
    assert f"--json {tmp_path / name}" in err and "farm" not in out


@pytest.mark.parametrize("argv, message", [
    (["--nodes", "100000000"], "--nodes: must be at most 100000"),
    (["--queued", "1000000000"], "--queued: must be at most 1000000"),
    (["--nodes", "100000", "--slots-per-node", "4096"], "--nodes 100000 x --slots-per-node 4096"),
])
def test_bench_refuses_a_farm_or_queue_that_would_exhaust_memory(argv, message, capsys):
    try:
        rc = main(["bench", "--running", "0", "--queued", "0", "--repeat", "1", *argv])
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    assert message in capsys.readouterr().err
