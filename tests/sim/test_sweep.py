"""The sweep's parts: the grid read from --set/--seeds, cells and their keys, a cell's figures
equal to `mysched simulate --json`, the results store reused, and the table's Pareto front."""

from __future__ import annotations

import json
import os

import pytest

from mysched.cli.common import default_config_text
from mysched.cli.main import main
from mysched.errors import MyschedError, UsageError
from mysched.sim import sweep, sweepgrid, sweeptable
from mysched.sim.sweep import Cell, ResultStore, SerialExecutor

SHORT = ("--duration", "2", "--nodes", "10", "--slots-per-node", "4")
MCORE = ("--duration", "6", "--nodes", "20", "--slots-per-node", "8", "--mcore-fraction", "0.5")
"""Short, but long enough for multi-core jobs to start."""
TIMING = ("wall_s", "cycle_s")
"""The figures that measure this machine, not the schedule: they differ between any two runs."""


@pytest.fixture(scope="module")
def base() -> dict:
    return sweepgrid.base_document(default_config_text(), "<embedded mysched.cfg>")


def test_set_values_are_read_as_the_configuration_file_reads_them():
    assert sweepgrid.parse_set("drain.rate=0,6,12") == ("drain.rate", [0, 6, 12])
    assert sweepgrid.parse_set("drain.backfill=requested,\"expected\"") == ("drain.backfill", ["requested", "expected"])
    assert sweepgrid.parse_set("x.y=true,false,1.5") == ("x.y", [True, False, 1.5])
    assert sweepgrid.parse_set('a.b="x,y",z') == ("a.b", ["x,y", "z"])
    assert sweepgrid.parse_set("a=1,1,2") == ("a", [1, 2])  # a repeat runs once


@pytest.mark.parametrize("text", ["drain.rate", "=1,2", "drain.rate=1,,2", "drain..rate=1", "a=x y"])
def test_set_refuses_what_is_no_key_and_values(text):
    with pytest.raises(UsageError) as exc:
        sweepgrid.parse_set(text)
    assert "\n" not in str(exc.value) and str(exc.value).startswith("--set")


def test_seeds_as_lists_and_ranges():
    assert sweepgrid.parse_seeds("1,2,3") == [1, 2, 3]
    assert sweepgrid.parse_seeds("1-8") == list(range(1, 9))
    assert sweepgrid.parse_seeds("3-4,1,4") == [3, 4, 1]
    for bad in ("x", "4-1", "1,", "-3"):
        with pytest.raises(UsageError, match="--seeds"):
            sweepgrid.parse_seeds(bad)


def test_an_unknown_key_is_refused_naming_it(base):
    with pytest.raises(UsageError) as exc:
        sweep.make_cells(base, [("scheduler.bogus", [1, 2])], [1], ["mysched"], SHORT)
    assert str(exc.value) == "--set scheduler.bogus=1: scheduler.bogus: unknown setting"


def test_a_refused_value_is_named_with_the_readers_words(base):
    with pytest.raises(UsageError) as exc:
        sweep.make_cells(base, [("drain.rate", [0, -3])], [1], ["mysched"], SHORT)
    assert str(exc.value).startswith("--set drain.rate=-3: drain.rate:") and "\n" not in str(exc.value)


def test_a_refused_combination_is_named_and_the_rest_kept(base):
    grid = sweep.make_cells(base, [("scheduler.interval", [30, 60]), ("scheduler.min_interval", [5, 45])], [1, 2],
                            ["mysched", "fifo"], SHORT)
    # (each value runs in some cell: only a min_interval longer than the interval is refused)
    assert [s for s, _ in grid.refused] == ["scheduler.interval=30 scheduler.min_interval=45"]
    assert [why for _, why in grid.refused] == ["scheduler.min_interval: cannot be longer than scheduler.interval"]
    assert len(grid.cells) == 3 * 2 * 2
    assert len({c.key for c in grid.cells}) == 12


def test_a_cells_key_follows_what_decides_its_figures(base):
    grid = sweep.make_cells(base, [("drain.rate", [12]), ("drain.max_draining", [3])], [1], ["mysched"], SHORT)
    c = grid.cells[0]
    same = Cell(c.settings, c.seed, c.policy, c.config_text, c.sim_args)
    assert same.key == c.key
    for other in (Cell(c.settings, 2, c.policy, c.config_text, c.sim_args),
                  Cell(c.settings, c.seed, "fifo", c.config_text, c.sim_args),
                  Cell(c.settings, c.seed, c.policy, c.config_text + "\n", c.sim_args),
                  Cell(c.settings, c.seed, c.policy, c.config_text, c.sim_args + ("--event-driven",)),
                  Cell(c.settings, c.seed, c.policy, c.config_text, c.sim_args, "trace\0 1\0 2")):
        assert other.key != c.key


def test_a_cell_gives_the_figures_of_mysched_simulate_json(base, tmp_path, capsys):
    grid = sweep.make_cells(base, [("drain.rate", [12]), ("drain.max_draining", [3])], [2], ["mysched"], MCORE)
    got = sweep.run_cell(grid.cells[0])
    cfg = tmp_path / "drain.cfg"
    cfg.write_text(default_config_text() + "\ndrain = { rate = 12; max_draining = 3; };\n")
    out = tmp_path / "sim.json"
    assert main(["simulate", "-c", str(cfg), *MCORE, "--seed", "2",
                 "--json", str(out), "--progress", "never"]) == 0
    want = json.loads(out.read_text())
    assert {k: v for k, v in got.items() if k not in TIMING} == {k: v for k, v in want.items() if k not in TIMING}
    assert got["by_size"]["2-8"]["jobs"] > 0  # the multi-core jobs are there to compare


def test_a_cell_the_simulator_refuses_raises_its_one_line(base):
    cell = Cell((), 1, "mysched", default_config_text(), ("--duration", "2", "--first", "3"))
    with pytest.raises(MyschedError) as exc:
        sweep.run_cell(cell)
    assert "--first and --from apply to --trace" in str(exc.value) and "\n" not in str(exc.value)


def test_a_rerun_reuses_the_stored_cells(base, tmp_path):
    grid = sweep.make_cells(base, [("drain.rate", [12]), ("drain.max_draining", [2, 3])], [1], ["mysched"], SHORT)
    calls: list[Cell] = []

    def fake(cell: Cell) -> dict:
        calls.append(cell)
        return {"occupancy": 0.5, "seed": cell.seed, "max": cell.settings[1][1]}

    store = ResultStore(str(tmp_path / "res"))
    results, failed = sweep.run_sweep(grid.cells, SerialExecutor(), store, fn=fake)
    assert len(calls) == 2 and not failed
    assert sorted(os.listdir(tmp_path / "res")) == sorted(f"{c.key}.json" for c in grid.cells)

    def refuse(cell: Cell) -> dict:
        raise AssertionError("a stored cell ran again")

    again, failed = sweep.run_sweep(grid.cells, SerialExecutor(), ResultStore(str(tmp_path / "res")), fn=refuse)
    assert again == results and not failed


def test_a_damaged_stored_cell_runs_again(base, tmp_path):
    grid = sweep.make_cells(base, [], [1], ["mysched"], SHORT)
    store = ResultStore(str(tmp_path))
    (tmp_path / f"{grid.cells[0].key}.json").write_text('{"result": {"occ')
    results, _ = sweep.run_sweep(grid.cells, SerialExecutor(), store, fn=lambda c: {"occupancy": 0.25})
    assert results[grid.cells[0].key] == {"occupancy": 0.25}
    assert store.get(grid.cells[0]) == {"occupancy": 0.25}


def test_a_failed_cell_is_named_and_the_others_stored(base, tmp_path):
    grid = sweep.make_cells(base, [], [1, 2], ["mysched"], SHORT)

    def half(cell: Cell) -> dict:
        if cell.seed == 1:
            raise MyschedError("seed 1: no")
        return {"occupancy": 0.5}

    store = ResultStore(str(tmp_path))
    results, failed = sweep.run_sweep(grid.cells, SerialExecutor(), store, fn=half)
    assert [(c.seed, str(exc)) for c, exc in failed] == [(1, "seed 1: no")]
    assert list(results) == [grid.cells[1].key] and os.listdir(tmp_path) == [f"{grid.cells[1].key}.json"]


def test_a_results_dir_that_cannot_be_made_is_refused_in_one_line(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(UsageError) as exc:
        ResultStore(str(tmp_path / "file" / "res"))
    assert str(exc.value).startswith(f"--results {tmp_path / 'file' / 'res'}: cannot create it")


def _doc(occ: float, wait1: float, wait8: float | None, viol: int) -> dict:
    by = {"1": {"jobs": 10, "wait_mean": wait1, "wait_p95": 2 * wait1, "wait_max": 3 * wait1,
                "bounded_slowdown": 1.0}}
    if wait8 is not None:
        by["2-8"] = {"jobs": 5, "wait_mean": wait8, "wait_p95": 2 * wait8, "wait_max": 3 * wait8,
                     "bounded_slowdown": 2.0}
    return {"occupancy": occ, "by_size": by, "bounded_slowdown": 1.5, "share_violations": viol, "drain_waste": 0.1}


def _cells(names: list[str], seeds: list[int]) -> list[Cell]:
    return [Cell((("drain.rate", n),), s, "mysched", n) for n in names for s in seeds]


def test_table_rows_over_seeds_and_the_pareto_front():
    cells = _cells(["a", "b", "c", "d"], [1, 2, 3])
    figures = {"a": [(0.9, 60, 3600, 0), (0.8, 60, 7200, 0), (0.7, 60, 3600, 0)],   # best occupancy
               "b": [(0.6, 60, 600, 0), (0.6, 60, 600, 0), (0.6, 60, 600, 0)],      # shortest multi-core wait
               "c": [(0.6, 60, 1200, 0), (0.5, 60, 1200, 0), (0.6, 60, 1200, 0)],   # beaten by b on all three
               "d": [(0.6, 60, 600, 1), (0.6, 60, 600, 0), (0.6, 60, 600, 0)]}      # b, with a violation
    results = {}
    for c in cells:
        occ, w1, w8, v = figures[c.settings[0][1]][c.seed - 1]
        results[c.key] = _doc(occ, w1, w8, v)
    rows = {r["settings"]["drain.rate"]: r for r in sweeptable.summarise(cells, results)}
    a = rows["a"]
    assert (a["occupancy_median"], a["occupancy_worst"], a["cells"]) == (0.8, 0.7, 3)
    assert a["wait_mean_s[2-8]"] == pytest.approx(4800) and a["multicore_wait_s"] == pytest.approx(4800)
    assert a["wait_p95_s[1]"] == 120 and a["wait_mean_s[>8]"] is None
    assert rows["d"]["share_violations"] == pytest.approx(1 / 3)
    assert {k for k, r in rows.items() if r["pareto"]} == {"a", "b"}
    text = sweeptable.format_table(list(rows.values()))
    marked = [line.split()[1] for line in text.splitlines()[1:-1] if line.startswith("*")]
    assert marked == ['drain.rate="a"', 'drain.rate="b"']


def test_rows_without_multicore_jobs_compare_on_occupancy_and_violations():
    cells = _cells(["a", "b"], [1])
    results = {cells[0].key: _doc(0.7, 60, None, 0), cells[1].key: _doc(0.6, 30, None, 0)}
    rows = sweeptable.summarise(cells, results)
    assert [r["pareto"] for r in rows] == [True, False]
    assert rows[0]["multicore_wait_s"] is None


def test_csv_has_a_column_per_figure_and_a_row_per_setting():
    cells = _cells(["a", "b"], [1])
    results = {c.key: _doc(0.5, 60, 120, 0) for c in cells}
    text = sweeptable.rows_csv(sweeptable.summarise(cells, results))
    lines = text.splitlines()
    assert lines[0].startswith("setting,policy,seeds") and "pareto" in lines[0] and len(lines) == 3
