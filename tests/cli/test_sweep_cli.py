"""`mysched sweep` on the command line: bad input in one line before anything runs, a sweep's
table and files, a re-run from --results, Ctrl-C keeping what finished."""

from __future__ import annotations

import json
import os

import pytest

from mysched.cli import sweep as cli_sweep
from mysched.cli.main import main
from mysched.sim import sweep
from mysched.sim.sweep import SerialExecutor

SHORT = ["--duration", "2", "--nodes", "10", "--slots-per-node", "4"]
INTERVALS = ["--set", "scheduler.interval=30,60", "--set", "scheduler.min_interval=5,45"]
"""Four combinations, one refused (min_interval 45 > interval 30)."""


@pytest.fixture
def serial(monkeypatch):
    """Cells in this process, one after another (no Dask, no process pool in tests)."""
    monkeypatch.setattr(cli_sweep, "make_executor", lambda args: SerialExecutor())


def _one_line_error(err: str, *words: str) -> None:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for w in words:
        assert w in lines[0], lines[0]


@pytest.mark.parametrize("grid, words", [
    (["--set", "scheduler.bogus=1,2"], ("scheduler.bogus: unknown setting",)),
    (["--set", "drain.rate=-1,5"], ("--set drain.rate=-1", "drain.rate")),
    (["--set", "drain.rate"], ("--set drain.rate", "KEY=V1,V2")),
    (["--seeds", "8-1"], ("--seeds 8-1",)),
])
def test_bad_grid_is_one_line_and_nothing_is_written(tmp_path, capsys, serial, grid, words):
    res, out = tmp_path / "res", tmp_path / "rows.json"
    assert main(["sweep", *SHORT, *grid, "--results", str(res), "--json", str(out)]) == 2
    _one_line_error(capsys.readouterr().err, *words)
    assert not res.exists() and not out.exists()


def test_a_results_dir_that_is_not_writable_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    ran = []
    monkeypatch.setattr(cli_sweep, "make_executor", lambda args: ran.append(1) or SerialExecutor())
    (tmp_path / "file").write_text("")
    assert main(["sweep", *SHORT, "--results", str(tmp_path / "file" / "res")]) == 2
    _one_line_error(capsys.readouterr().err, "--results", "cannot create it")
    assert not ran


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_a_read_only_results_dir_is_refused(tmp_path, capsys, serial):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o500)
    assert main(["sweep", *SHORT, "--results", str(ro)]) == 2
    _one_line_error(capsys.readouterr().err, "not writable")


def test_seeds_do_not_apply_to_a_trace(tmp_path, capsys, serial):
    trace = tmp_path / "t.swf"
    trace.write_text("1 0 0 100 1 -1 -1 1 200 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["sweep", "--trace", str(trace), "--seeds", "1,2"]) == 2
    _one_line_error(capsys.readouterr().err, "--seeds applies to the synthetic workload")


def test_a_sweep_names_refused_combinations_and_writes_its_rows(tmp_path, capsys, serial):
    res, js, cs = tmp_path / "res", tmp_path / "rows.json", tmp_path / "rows.csv"
    assert main(["sweep", *SHORT, *INTERVALS, "--seeds", "1-2", "--policy", "fifo", "--results", str(res),
                 "--json", str(js), "--csv", str(cs), "--progress", "never"]) == 0
    out, err = capsys.readouterr()
    assert ("scheduler.interval=30 scheduler.min_interval=45: refused by the configuration, not run: "
            "scheduler.min_interval: cannot be longer than scheduler.interval") in err
    assert "scheduler.interval=60 scheduler.min_interval=45: refused" not in err
    doc = json.loads(js.read_text())
    run = ("scheduler.interval=30 scheduler.min_interval=5", "scheduler.interval=60 scheduler.min_interval=5",
           "scheduler.interval=60 scheduler.min_interval=45")
    assert [(r["setting"], r["policy"], r["seeds"]) for r in doc["rows"]] == [
        (setting, policy, [1, 2]) for setting in run for policy in ("mysched", "fifo")]
    assert len(doc["refused"]) == 1 and not doc["failed"]
    assert len(os.listdir(res)) == 12
    assert len(cs.read_text().splitlines()) == 7
    # 30-s cycles start jobs sooner: higher occupancy, on the front (marked *), the 60-s rows not
    front = [line.split()[1:3] for line in out.splitlines() if line.startswith("*  scheduler.")]
    assert front == [["scheduler.interval=30", "scheduler.min_interval=5"]] * 2, out
    assert "on the Pareto front" in out


def test_a_rerun_takes_every_cell_from_results(tmp_path, capsys, serial, monkeypatch):
    res, first, second = tmp_path / "res", tmp_path / "a.json", tmp_path / "b.json"
    argv = ["sweep", *SHORT, "--set", "drain.max_draining=3", "--set", "drain.rate=6,12", "--seeds", "1,2",
            "--results", str(res), "--progress", "never"]
    assert main([*argv, "--json", str(first)]) == 0

    def refuse(cell):
        raise AssertionError("a stored cell ran again")

    monkeypatch.setattr(sweep, "run_cell", refuse)
    assert main([*argv, "--json", str(second)]) == 0
    assert "4 cell(s) reused" in capsys.readouterr().out
    assert json.loads(first.read_text()) == json.loads(second.read_text())


def test_ctrl_c_stops_cleanly_and_keeps_the_finished_cells(tmp_path, capsys, monkeypatch):
    class Interrupted(SerialExecutor):
        def run(self, fn, items):
            yield items[0], fn(items[0])
            raise KeyboardInterrupt

    monkeypatch.setattr(cli_sweep, "make_executor", lambda args: Interrupted())
    res = tmp_path / "res"
    assert main(["sweep", *SHORT, "--seeds", "1-3", "--results", str(res), "--json", str(tmp_path / "x.json"),
                 "--progress", "never"]) == 130
    err = capsys.readouterr().err
    assert "interrupted: 1 of 3 cells finished" in err and "Traceback" not in err
    assert len(os.listdir(res)) == 1 and not (tmp_path / "x.json").exists()


def test_a_failing_cell_is_named_and_the_others_reported(tmp_path, capsys, serial, monkeypatch):
    real = sweep.run_cell

    def flaky(cell):
        if cell.seed == 2:
            raise sweep.MyschedError(f"{cell.name}: broken")
        return real(cell)

    monkeypatch.setattr(sweep, "run_cell", flaky)
    assert main(["sweep", *SHORT, "--seeds", "1,2", "--json", str(tmp_path / "x.json"), "--progress", "never"]) == 1
    err = capsys.readouterr().err
    assert "seed=2: broken" in err and "1 of 2 cells failed" in err
    assert json.loads((tmp_path / "x.json").read_text())["rows"][0]["seeds"] == [1]


def test_workload_options_simulate_refuses_are_bad_input(tmp_path, capsys, serial):
    assert main(["sweep", *SHORT, "--first", "3", "--seeds", "1,2", "--progress", "never"]) == 2
    _one_line_error(capsys.readouterr().err, "every cell failed", "--first and --from apply to --trace")


SWF = "".join(f"{i} {i * 30} 0 {600 + 60 * i} {1 + i % 3} -1 -1 {1 + i % 3} 1200 -1 1 1 {1 + i % 2} -1 1 -1 -1 -1\n"
              for i in range(1, 40))


def test_a_trace_cell_gives_the_figures_of_simulate_on_the_trace(tmp_path, capsys, serial):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    farm = ["--nodes", "4", "--slots-per-node", "4"]
    assert main(["sweep", "--trace", str(trace), *farm, "--results", str(tmp_path / "res"), "--progress", "never"]) == 0
    (stored,) = (tmp_path / "res").iterdir()
    got = json.loads(stored.read_text())["result"]
    assert main(["simulate", "--trace", str(trace), *farm, "--json", str(tmp_path / "s.json"),
                 "--progress", "never"]) == 0
    want = json.loads((tmp_path / "s.json").read_text())
    assert got["jobs"] == 39
    assert {k: v for k, v in got.items() if k not in ("wall_s", "cycle_s")} == \
        {k: v for k, v in want.items() if k not in ("wall_s", "cycle_s")}


def test_a_changed_trace_is_a_new_cell(tmp_path, capsys, serial):
    trace = tmp_path / "t.swf"
    trace.write_text(SWF)
    argv = ["sweep", "--trace", str(trace), "--nodes", "4", "--slots-per-node", "4", "--results",
            str(tmp_path / "res"), "--progress", "never"]
    assert main(argv) == 0
    trace.write_text(SWF + SWF.splitlines(keepends=True)[0].replace("1 30 ", "99 3000 ", 1))
    assert main(argv) == 0
    assert "reused" not in capsys.readouterr().out
    assert len(list((tmp_path / "res").iterdir())) == 2


def test_ctrl_c_inside_a_cell_stops_the_sweep_not_only_the_cell(tmp_path, capsys, monkeypatch):
    """The simulation catches Ctrl-C itself (exit 130): the sweep must not go on to the next cell."""
    monkeypatch.setattr(cli_sweep, "make_executor", lambda args: SerialExecutor())
    import mysched.sim.replay as replay

    calls = []

    def interrupted(*a, **kw):
        calls.append(1)
        raise KeyboardInterrupt

    monkeypatch.setattr(replay, "simulate", interrupted)
    monkeypatch.setattr("mysched.cli.simulate.simulate", interrupted)
    assert main(["sweep", *SHORT, "--seeds", "1-3", "--results", str(tmp_path / "res"), "--progress", "never"]) == 130
    assert calls == [1] and "interrupted: 0 of 3 cells finished" in capsys.readouterr().err
    assert os.listdir(tmp_path / "res") == []


def test_plot_draws_occupancy_against_wait(tmp_path, capsys, serial):
    assert main(["sweep", *SHORT, "--seeds", "1,2", "--set", "drain.max_draining=3", "--set", "drain.rate=6,12",
                 "--plot", str(tmp_path / "sweep"), "--progress", "never"]) == 0
    assert (tmp_path / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"plot written to {tmp_path / 'sweep.png'}" in capsys.readouterr().out
