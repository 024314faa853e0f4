"""End-to-end simulation: the README command, trace replay, baselines, bad input."""

from __future__ import annotations

import gzip
import json

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.backends.sim.farm import make_nodes
from mysched.sim.replay import SimOptions, simulate
from mysched.sim.workloads.swf import read_swf
from mysched.sim.workloads.vomap import parse_vo_map
from mysched.sim.workloads.synthetic import DESY_VOS, SyntheticSpec, generate

from ..conftest import REPO, nodes, queued


def test_synthetic_groups_match_the_example_config():
    from mysched.config import load_config
    cfg = load_config(str(REPO / "etc" / "mysched.cfg"))
    for vo, groups in DESY_VOS.items():
        for g in groups:
            assert cfg.vo_of(g) == vo, g


def test_synthetic_is_deterministic_and_respects_queue_limits():
    a = generate(SyntheticSpec(duration=6 * 3600, slots=100, seed=3))
    b = generate(SyntheticSpec(duration=6 * 3600, slots=100, seed=3))
    c = generate(SyntheticSpec(duration=6 * 3600, slots=100, seed=4))
    assert [(t.job.id, t.job.submit_time, t.runtime) for t in a] == [(t.job.id, t.job.submit_time, t.runtime) for t in b]
    assert [t.runtime for t in a] != [t.runtime for t in c]
    assert all(t.runtime <= (3600 if t.job.queue == "operations" else 90 * 3600) for t in a)
    assert all(t.job.walltime >= t.runtime for t in a)


def test_default_simulation_via_cli(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["simulate", "--duration", "6", "--nodes", "10", "--json", str(out)]) == 0
    doc = json.loads(out.read_text())
    for key in ("jobs", "finished", "occupancy", "vo", "share_violations", "diversity", "wait_s", "cycle_s"):
        assert key in doc
    assert set(doc["wait_s"]) == {"mean", "p50", "p95", "max"} and set(doc["cycle_s"]) == {"p50", "p99", "max"}
    assert doc["share_violations"] == 0
    assert {"share", "used", "below_guarantee_s"} <= set(doc["vo"]["atlas"])
    assert 0.5 < doc["occupancy"] <= 1.0
    assert "occupancy" in capsys.readouterr().out


def two_vo_workload(n=3000):
    import random
    rnd = random.Random(5)
    wl, t = [], 1e9
    for i in range(n):
        t += rnd.expovariate(1 / 4.0)
        g = "a" if rnd.random() < 0.8 else "b"
        wl.append(TraceJob(Job(str(i), "q", f"{g}{rnd.randrange(6)}", g, submit_time=t), rnd.expovariate(1 / 300)))
    return wl


def test_mysched_keeps_guarantees_where_fifo_does_not():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };')
    nodes = make_nodes(8, 8)
    ms = simulate(two_vo_workload(), cfg, nodes, SimOptions(policy="mysched"))
    ff = simulate(two_vo_workload(), cfg, nodes, SimOptions(policy="fifo"))
    assert ms.share_violations == 0 < ff.share_violations
    assert ms.vo["b"]["below_guarantee_s"] < ff.vo["b"]["below_guarantee_s"]
    assert ms.diversity > ff.diversity
    assert abs(ms.occupancy - ff.occupancy) < 0.01
    assert ms.started == ff.started == 3000


def test_event_driven_cycles_raise_occupancy_for_short_jobs():
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };')
    wl = [TraceJob(t.job, 20.0) for t in two_vo_workload(2000)]
    fixed = simulate(wl, cfg, make_nodes(2, 4), SimOptions())
    events = simulate(wl, cfg, make_nodes(2, 4), SimOptions(event_driven=True, min_interval=5))
    assert events.occupancy > fixed.occupancy + 0.1


def test_swf_malformed_lines_are_reported_and_skipped(tmp_path):
    f = tmp_path / "t.swf.gz"
    good = "1 0 5 100 1 -1 -1 1 200 -1 1 3 2 -1 1 -1 -1 -1\n"
    with gzip.open(f, "wt") as fh:
        fh.write("; UnixStartTime: 1000000000\n" + good + "2 10 x 100 1\n" + good.replace("1 0 5", "3 20 5")
                 + "4 30 5 -1 0 -1 -1 1 -1 -1 5 -1 -1 -1 1 -1 -1 -1\n")
    problems = []
    tr = read_swf(str(f), on_problem=problems.append)
    assert [t.job.id for t in tr.jobs] == ["1", "3"]
    assert problems == [f"{f}:3: expected 18 columns, found 5"]
    assert tr.skipped == {"malformed": 1, "cancelled": 1}
    assert tr.jobs[0].job.submit_time == 1000000000 and tr.jobs[0].job.group == "g2"


def test_lpc_egee_trace_loads_with_queue_names(traces):
    tr = read_swf(str(traces / "LPC-EGEE-2004-1.2-cln.swf.gz"), first=1000)
    assert len(tr.jobs) == 1000
    assert {t.job.queue for t in tr.jobs} <= {"test", "short", "long", "day", "infinite", "batch"}
    assert tr.max_nodes == 70 and tr.max_procs == 140


def test_wagap_queue_names_come_from_column_20(traces):
    tr = read_swf(str(traces / "wagap-2013.swf"), first=2000)
    assert "q_1d" in {t.job.queue for t in tr.jobs}
    assert min(t.job.submit_time for t in tr.jobs) > 1.3e9  # absolute times


def test_vo_map_parsing(tmp_path):
    assert parse_vo_map("g2=atlas,g6=cms") == {"g2": "atlas", "g6": "cms"}
    f = tmp_path / "map"
    f.write_text("# comment\ng2 atlas\ng6=cms\n")
    assert parse_vo_map(str(f)) == {"g2": "atlas", "g6": "cms"}
    from mysched.errors import InputError
    with pytest.raises(InputError, match="item 2"):
        parse_vo_map("g2=atlas,bogus")


@pytest.mark.parametrize("argv, status, message", [
    (["simulate", "--trace", "/nonexistent.swf"], 1, "/nonexistent.swf: no such file"),  # bad input
    (["simulate", "--first", "10"], 2, "--first and --from apply to --trace"),  # bad arguments
    (["simulate", "--farm-movie", "x.gif"], 2, "--farm-movie needs --farm-frames"),
    (["simulate", "--pack", "nosuchvo", "--duration", "1"], 2, "--pack nosuchvo: no such VO or group"),
])
def test_bad_arguments_give_one_line_errors(argv, status, message, capsys):
    assert main(argv) == status
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_garbage_trace_is_a_clear_error(tmp_path, capsys):
    f = tmp_path / "junk.swf"
    f.write_bytes(b"\x00\x01 binary junk\nmore junk here\n")
    assert main(["simulate", "--trace", str(f)]) == 1
    err = capsys.readouterr().err
    assert "not an SWF trace" in err and "Traceback" not in err


def test_argparse_rejects_bad_numbers(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--nodes", "zero"])
    assert exc.value.code == 2
    assert "expected a whole number" in capsys.readouterr().err


def test_compare_plot_shows_every_policy_on_dates_with_the_reports_occupancy(tmp_path):
    pytest.importorskip("matplotlib")
    from mysched.sim.plot import result_figure

    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };')
    start = 1_100_000_000.0  # 2004-11-09: a trace with real dates
    wl = [TraceJob(queued(f"{i}", f"u{i % 3}", "a" if i % 2 else "b", submit=start + 60 * i), 1800.0)
          for i in range(60)]
    runs = []
    for policy in ("mysched", "fifo"):
        r = simulate(wl, cfg, tuple(nodes(4, 2)), SimOptions(policy=policy))
        runs.append(r)
    fig = result_figure(runs)
    titles = [ax.get_title() for ax in fig.axes]
    assert any("mysched" in t for t in titles) and any("fifo" in t for t in titles)
    labels = [text.get_text() for ax in fig.axes if ax.get_legend() for text in ax.get_legend().get_texts()]
    for r in runs:
        # the mark carries the report's own figure over the span drawn, labelled as such
        assert f"{r.policy}: occupancy until the last submission (report): {r.occupancy_submitting:.1%}" in labels
        assert any(label.split(" (")[0] == r.policy for label in labels)  # its line in the slots in use
    assert fig.axes[-1].get_xlabel().startswith("simulated time (UTC); up to the last submission")
    assert fig.axes[-1].lines[0].get_xdata()[0].year == 2004  # drawn on dates
    # a synthetic run without real dates is drawn in hours
    syn = simulate([TraceJob(t.job._replace(submit_time=t.job.submit_time - start), t.runtime) for t in wl],
                   cfg, tuple(nodes(4, 2)))
    assert result_figure([syn]).axes[-1].get_xlabel().startswith("simulated time (hours since the start);")


def test_plots_without_matplotlib_fail_before_simulating(monkeypatch, capsys):
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "matplotlib" else real(name, *a))
    assert main(["simulate", "--plot", "x.png"]) == 2
    err = capsys.readouterr().err
    assert "--plot needs matplotlib" in err and "mysched[plot]" in err


def test_occupancy_until_the_last_submission_leaves_out_the_drain_out():
    # wn0001 is for group s only. While work still arrives both nodes are busy; after the last
    # submission only group a is left in the queue and wn0001 stands idle beside it: the
    # whole-run occupancy counts that drain-out, the figure until the last submission does not.
    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; s = { groups = ["s"]; share = 50; }; };\n'
                           'node_types = { special = { nodes = ["wn0001"]; groups = ["s"]; }; };')
    t0 = 1e9
    wl = [TraceJob(Job("s0", "q", "s1", "s", submit_time=t0, walltime=2000.0), 1000.0),
          TraceJob(Job("a0", "q", "a1", "a", submit_time=t0, walltime=2000.0), 1000.0)]
    wl += [TraceJob(Job(f"a{i}", "q", "a1", "a", submit_time=t0 + 100 * i, walltime=2000.0), 300.0) for i in (1, 2, 3)]
    r = simulate(wl, cfg, make_nodes(2, 1), SimOptions())
    assert r.started == 5
    assert r.occupancy_submitting == 1.0
    assert r.occupancy < 0.85
    assert r.to_json()["occupancy_submitting"] == 1.0


def test_a_directory_of_accounting_logs_is_read_without_format(tmp_path, capsys):
    logs = tmp_path / "accounting"
    logs.mkdir()
    (logs / "20261122").write_text("11/22/2026 10:00:00;E;1.s;user=u group=g queue=q qtime=1795299900 "
                                   "start=1795300000 end=1795300600\n")
    assert main(["simulate", "--trace", str(logs), "--nodes", "2", "--progress", "never"]) == 0
    assert f"simulating trace {logs}: 1 jobs" in capsys.readouterr().out
    swf_dir = tmp_path / "swf"  # a directory of SWF traces: no accounting log in it
    swf_dir.mkdir()
    (swf_dir / "KTH.swf").write_text("1 0 0 60 1 -1 -1 1 3600 -1 1 1 1 -1 1 -1 -1 -1\n")
    assert main(["simulate", "--trace", str(swf_dir), "--nodes", "2", "--progress", "never"]) == 1
    assert "a directory with no accounting log in it" in capsys.readouterr().err


def test_a_garbled_qtime_falls_back_to_ctime(tmp_path):
    from mysched.sim.workloads.acctrace import read_accounting_trace

    log = tmp_path / "20261122"
    log.write_text("11/22/2026 10:00:00;E;1.s;user=u group=g queue=q qtime=abc ctime=1795299000 "
                   "start=1795300000 end=1795300600\n")
    jobs, _ = read_accounting_trace(str(log))
    assert [t.job.submit_time for t in jobs] == [1795299000.0]  # waited 1000 s, by ctime
