"""The simulate report tells the admin how long each job size waited and, when multi-core jobs
waited far longer than single-core ones, why -- naming the setting that would change it."""

from __future__ import annotations

import contextlib
import io
import json
import random

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, Node, TraceJob
from mysched.core.planner import POLICIES
from mysched.core.settings import Config
from mysched.sim.mcorewhy import diagnose
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.report import format_comparison, format_result, hms
from mysched.sim.result import McoreWatch, SimResult

from ..conftest import REPO

BASE = (REPO / "etc" / "mysched.cfg").read_text()
# seed 2, 6 h on 10 x 8: four 8-core jobs among 467 single-core ones, waiting hours for whole nodes
RUN = ["--duration", "6", "--seed", "2", "--nodes", "10", "--slots-per-node", "8", "--progress", "never"]


def _simulate(tmp_path, capsys, drain: str, *extra: str) -> tuple[str, dict]:
    cfg = tmp_path / "drain.cfg"
    cfg.write_text(BASE + drain + "\n")
    out = tmp_path / "out.json"
    assert main(["simulate", "-c", str(cfg), *RUN, "--json", str(out), *extra]) == 0
    return capsys.readouterr().out, json.loads(out.read_text())


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """--compare with the partition off (drain.rate = 0), 8-core jobs in the workload."""
    tmp = tmp_path_factory.mktemp("compare")
    cfg = tmp / "off.cfg"
    cfg.write_text(BASE + "drain = { rate = 0; };\n")
    out = tmp / "out.json"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        assert main(["simulate", "-c", str(cfg), *RUN, "--mcore-fraction", "0.5", "--compare", "--json", str(out)]) == 0
    return text.getvalue(), json.loads(out.read_text())


def _row(text: str, label: str) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith(label + " ")]
    assert len(lines) == 1, (label, text)
    return lines[0][len(label):].split()


def test_compare_shows_each_size_classes_waits_per_policy(compared):
    text, docs = compared
    head = list(POLICIES)
    assert any(line.split() == head for line in text.splitlines())  # the table's columns
    for cls, label in (("1", "1 core"), ("2-8", "2-8 cores")):
        for k in ("mean", "p95", "max"):
            cells = _row(text, f"{label} wait {k}")
            assert cells == [hms(docs[p]["by_size"][cls][f"wait_{k}"]) for p in head]
    assert "> 8 cores" not in text  # no job of more than 8 cores in this workload
    assert docs["mysched"]["by_size"]["2-8"]["wait_mean"] > 4 * docs["mysched"]["by_size"]["1"]["wait_mean"]


def test_compare_says_once_per_policy_why_multicore_jobs_waited_with_the_partition_off(compared):
    text, docs = compared
    why = [line for line in text.splitlines() if line.startswith("why multi-core")]
    assert [line.split("(")[1].split(")")[0] for line in why] == list(POLICIES)
    mine = next(line for line in why if line.startswith("why multi-core (mysched)"))
    assert "drain.rate = 0" in mine and "set drain.rate/max_draining or remove them" in mine
    assert docs["mysched"]["multicore_why"]["cause"] == "partition_off"
    assert docs["mysched"]["multicore_why"]["setting"] == "drain.rate/max_draining"
    assert docs["fifo"]["multicore_why"]["setting"] == "policy"  # no drain setting changes the baseline


def test_a_partition_at_a_tiny_cap_is_named_as_the_cause(tmp_path, capsys):
    text, doc = _simulate(tmp_path, capsys, "drain = { rate = 100; max_draining = 1; };", "--mcore-fraction", "0.5")
    why = doc["multicore_why"]
    assert why["cause"] == "partition_at_cap" and why["setting"] == "drain.max_draining"
    line = next(x for x in text.splitlines() if x.startswith("  why multi-core"))
    assert "drain.max_draining = 1" in line and why["text"] in line
    assert doc["by_size"]["2-8"]["wait_mean"] > 2 * doc["by_size"]["1"]["wait_mean"] + 600


def test_the_automatic_partition_held_at_half_the_nodes_is_named_as_the_cause(tmp_path, capsys):
    # no drain setting: the partition follows the demand, within half the 10 nodes
    text, doc = _simulate(tmp_path, capsys, "", "--mcore-fraction", "0.5")
    why = doc["multicore_why"]
    assert why["cause"] == "partition_at_cap" and why["setting"] == "drain.max_draining"
    assert "at its cap, half the nodes (5," in why["text"] and "drain.max_draining above 5" in why["text"]
    assert "replay the workload with it before adopting it" in why["text"]  # it can cost more than it gains
    assert why["text"] in text


def test_a_baseline_without_drain_settings_is_told_it_runs_no_partition(tmp_path, capsys):
    # the automatic partition is the mysched policy's; easy drains only with explicit settings
    _, doc = _simulate(tmp_path, capsys, "", "--mcore-fraction", "0.5", "--policy", "easy")
    why = doc["multicore_why"]
    assert why["cause"] == "partition_off" and why["setting"] == "drain.rate/max_draining"
    assert "easy baseline runs no automatic partition" in why["text"] and "no draining node" not in why["text"]


def test_drains_held_back_by_their_rate_name_the_rate(tmp_path, capsys):
    _, doc = _simulate(tmp_path, capsys, "drain = { rate = 1; max_draining = 10; };", "--mcore-fraction", "0.5")
    assert doc["multicore_why"]["cause"] == "drains_too_slow" and doc["multicore_why"]["setting"] == "drain.rate"
    assert "drain.rate = 1 per hour" in doc["multicore_why"]["text"]


def test_a_single_core_workload_gets_no_why_line(tmp_path, capsys):
    text, doc = _simulate(tmp_path, capsys, "drain = { rate = 0; };")
    assert set(doc["by_size"]) == {"1"}
    assert "multicore_why" in doc and doc["multicore_why"] is None
    assert "why multi-core" not in text


def _result(policy: str = "mysched", mc_cores: int = 16) -> SimResult:
    r = SimResult(policy=policy, nodes=10, slots=80)
    r.by_size = {"1": [(60.0, 100.0)] * 10, ("2-8" if mc_cores <= 8 else ">8"): [(7200.0, 100.0)] * 2}
    return r


def test_compare_rows_follow_the_classes_present():
    text = format_comparison([_result(), _result("fifo")])
    assert "> 8 cores wait max" in text and "2-8 cores" not in text
    assert _row(text, "> 8 cores wait mean") == ["2h00m", "2h00m"]


def _watch(**kw) -> McoreWatch:
    w = McoreWatch(None, None, 2)
    w.jobs, w.all_jobs = 2, 12
    for k, v in kw.items():
        setattr(w, k, v)
    return w


@pytest.mark.parametrize("kw, cause, setting", [
    ({"too_big": 2}, "nodes_too_small", "farm (node types, slots per node)"),
    ({"unknown_walltime": 2}, "walltimes_unknown", "scheduler.max_walltime / queue resources_default.walltime"),
    ({"to_room_s": [7200.0]}, "drains_too_slow", "drain.rate"),
])
def test_the_cause_comes_from_the_counted_facts(kw, cause, setting):
    config = config_from_text("drain = { rate = 10; max_draining = 5; };")
    got = diagnose(_result(mc_cores=16), config, _watch(**kw))
    assert (got["cause"], got["setting"]) == (cause, setting)
    assert got["text"].startswith("multi-core jobs waited 2h00m on average, single-core ones 1m00s: ")


def test_unknown_walltimes_say_the_mysched_policy_goes_by_estimates_and_a_baseline_cannot_tell():
    config = config_from_text("drain = { rate = 10; max_draining = 5; };")
    mine = diagnose(_result("mysched"), config, _watch(unknown_walltime=2))["text"]
    easy = diagnose(_result("easy"), config, _watch(unknown_walltime=2))["text"]
    assert "run-time estimates" in mine and "cannot tell" not in mine
    assert "cannot tell when nodes free" in easy and "estimates" not in easy


def test_a_rate_below_one_an_hour_that_drains_nothing_is_named():
    got = diagnose(_result(), config_from_text("drain = { rate = 0.5; max_draining = 5; };"), McoreWatch(5, 0.5, 2))
    assert got["setting"] == "drain.rate" and "never held a node" in got["text"]


def test_slow_drains_with_requested_backfill_name_the_backfill():
    config = config_from_text('drain = { rate = 10; max_draining = 5; backfill = "requested"; };')
    got = diagnose(_result(), config, _watch(to_room_s=[7200.0]))
    assert got["setting"] == "drain.backfill" and '"expected"' in got["text"]


def test_no_why_when_the_gap_is_small():
    r = _result()
    r.by_size[">8"] = [(500.0, 100.0)] * 2  # 8 times as long, but not 10 minutes longer
    assert diagnose(r, Config(), _watch()) is None


def test_jobs_larger_than_most_nodes_name_the_farm_not_the_drain():
    """8-core jobs among single-core ones on eight 4-slot nodes and two of 16: they fit only the
    two large nodes, and no drain setting makes room on the small ones."""
    rnd = random.Random(3)
    wl, t = [], 1e9
    for i in range(600):
        t += rnd.expovariate(1 / 30.0)
        wl.append(TraceJob(Job(str(i), "q", f"u{i % 5}", "a", 8 if i % 10 == 0 else 1, submit_time=t, walltime=7200.0),
                           rnd.uniform(600, 3600)))
    nodes = tuple(Node(f"wn{i:02d}", 4) for i in range(8)) + (Node("big1", 16), Node("big2", 16))
    # with the partition off the 8-core jobs wait long; the nodes, not the switch, are named
    r = simulate(wl, config_from_text('vos = { a = { groups = ["a"]; share = 100; }; };\ndrain = { rate = 0; };'),
                 nodes, SimOptions())
    why = r.to_json()["multicore_why"]
    assert why["cause"] == "nodes_too_small" and "60 of the 60 multi-core jobs" in why["text"]
    assert "4 slots or fewer" in why["text"] and "why multi-core   " + why["text"] in format_result(r)


def test_slow_drains_of_the_automatic_partition_name_max_draining():
    got = diagnose(_result(), Config(), _watch(to_room_s=[7200.0]))
    assert got["setting"] == "drain.max_draining" and "automatic partition" in got["text"]
