"""`mysched simulate --plot` as an admin reads it: legends beside the data, never over it;
downtimes and closed nodes shaded and named; the axis up to the last submission unless the
tail is asked for; compared policies whose lines coincide drawn apart and named."""

from __future__ import annotations

import calendar
import time

import pytest

from mysched.backends.sim.farm import make_nodes
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Job, TraceJob
from mysched.sim.replay import SimOptions, simulate

pytest.importorskip("matplotlib")

T0 = float(calendar.timegm(time.strptime("2026-01-05T00:00", "%Y-%m-%dT%H:%M")))
VOS = 'vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; }; };\n'
DOWN = 'downtimes = { rack = { start = "2026-01-05T01:00"; end = "2026-01-05T02:00"; hosts = ["wn0001"]; margin = "0"; }; };\n'


def workload(n: int = 120) -> list[TraceJob]:
    """Jobs every minute for two hours, enough to fill 2 x 4 slots, each running 20 minutes to
    2 hours: the queue drains out well after the last submission."""
    return [TraceJob(Job(f"j{i}", "q", f"u{i % 3}", "ab"[i % 2], submit_time=T0 + 60 * i, walltime=7200.0),
                     1200.0 + 60.0 * (i % 100)) for i in range(n)]


def run(cfg: str = VOS, policy: str = "mysched", wl: list[TraceJob] | None = None):
    r = simulate(wl or workload(), config_from_text(cfg), make_nodes(2, 4), SimOptions(policy=policy))
    r.policy = policy
    return r


def test_every_legend_is_beside_its_panel_and_inside_the_figure():
    # The VO legend sat over the 400-slot peak of the stack, the compare legend over the
    # 100 %-busy stretch of the fraction of slots.
    from mysched.sim.plot import result_figure

    for runs in ([run()], [run(), run(policy="fifo")]):
        fig = result_figure(runs)
        fig.canvas.draw()
        legends = [(ax, ax.get_legend()) for ax in fig.axes if ax.get_legend()]
        assert len(legends) == 3  # the VOs, the queue, the slots in use
        for ax, legend in legends:
            box, panel = legend.get_window_extent(), ax.get_window_extent()
            assert box.x0 >= panel.x1 - 1, (box, panel)  # right of the data area
            assert box.x1 <= fig.bbox.x1 + 1 and box.y0 >= fig.bbox.y0 - 1  # not cut off


def test_a_downtime_and_closed_nodes_are_shaded_with_a_legend_entry():
    from mysched.sim.plot import result_figure

    r = run(VOS + DOWN)
    assert r.downtimes == [(3600.0, 2 * 3600.0, 4)]
    fig = result_figure([r])
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "downtime (slots closed)" in labels
    band = [c for c in fig.axes[-1].collections if c.get_label() == "downtime (slots closed)"]
    ys = band[0].get_paths()[0].vertices[:, 1]
    assert min(ys) == pytest.approx(0.5) and max(ys) == pytest.approx(1.0)  # 1 node of 2: the top half
    # a node no job of the workload may use: its slots shaded all along, named as such
    closed = run(VOS + 'node_types = { sw = { nodes = ["wn0002"]; groups = ["s"]; }; };\n')
    assert closed.closed_slots == 4
    labels = [t.get_text() for ax in result_figure([closed]).axes if ax.get_legend()
              for t in ax.get_legend().get_texts()]
    assert "closed nodes (4 slots admit no job)" in labels


def test_the_axis_ends_at_the_last_submission_unless_the_tail_is_asked_for():
    from mysched.sim.plot import result_figure

    r = run(wl=[TraceJob(t.job._replace(submit_time=t.job.submit_time - T0), t.runtime) for t in workload()])
    assert r.span_s > 1.5 * r.last_submit_s  # the drain-out is most of the replay
    lo, hi = result_figure([r]).axes[-1].get_xlim()  # hours since the start
    assert (lo, hi) == pytest.approx((0.0, r.last_submit_s / 3600.0))
    fig = result_figure([r], tail=True)
    assert fig.axes[-1].get_xlim()[1] == pytest.approx(r.span_s / 3600.0)
    assert "last submission" in [t.get_text() for t in fig.axes[-1].get_legend().get_texts()]


def test_compared_policies_whose_lines_coincide_are_drawn_apart_and_named():
    # On a farm that never fills, fifo and easy start the same jobs at the same times: one
    # line hid the other and nothing said so.
    from mysched.sim.plot import result_figure

    light = workload(20)
    runs = [run(policy=p, wl=light) for p in ("mysched", "fifo", "easy")]
    fig = result_figure(runs)
    used = fig.axes[-1]
    lines = [ln for ln in used.get_lines() if ln.get_label().split(" (")[0] in ("mysched", "fifo", "easy")]
    assert len(lines) == 3
    assert len({(ln.get_linestyle(), ln.get_linewidth()) for ln in lines}) == 3  # each visible under the others
    labels = [ln.get_label() for ln in lines]
    assert "fifo (same as mysched, easy)" in labels and "easy (same as mysched, fifo)" in labels
    note = fig.get_supxlabel()
    assert "slots in use: mysched = fifo = easy identical" in note


def test_plot_tail_is_in_the_help_and_refused_without_a_plot(capsys):
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    assert "--plot-tail" in capsys.readouterr().out
    assert main(["simulate", "--plot-tail", "--duration", "1"]) == 2
    assert "--plot-tail would change nothing: it applies to --plot FILE" in capsys.readouterr().err
