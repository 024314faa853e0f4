"""`mysched simulate` outputs: refused before the run when they cannot be written, and
reported under the name they really get."""

from __future__ import annotations

import pytest

from mysched.cli.main import main

SMALL = ["simulate", "--duration", "1", "--nodes", "2", "--slots-per-node", "4", "--progress", "never"]


@pytest.mark.parametrize("option, name", [("--json", "."), ("--plot", "."), ("--json", "no/such/x.json"),
                                          ("--plot", "no/such/p.png"), ("--plot", "p.xyz")])
def test_an_output_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys, option, name):
    pytest.importorskip("matplotlib")
    target = tmp_path / name
    assert main(SMALL + [option, str(target)]) == 2
    out, err = capsys.readouterr()
    assert f"{option} {target}" in err and "simulating" not in out
    assert not tmp_path.with_suffix(".png").exists()  # --plot DIR wrote DIR.png


def test_a_plot_without_extension_is_reported_where_it_is_written(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(SMALL + ["--plot", str(tmp_path / "plotnoext")]) == 0
    assert f"plot written to {tmp_path / 'plotnoext.png'}\n" in capsys.readouterr().out
    assert (tmp_path / "plotnoext.png").exists()


def test_a_movie_without_extension_is_a_gif_and_a_foreign_one_is_refused_first(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    frames = tmp_path / "frames"
    assert main(SMALL + ["--farm-frames", str(frames), "--frame-every", "20", "--farm-movie",
                         str(tmp_path / "noext")]) == 0
    assert f"movie {tmp_path / 'noext.gif'}" in capsys.readouterr().out and (tmp_path / "noext.gif").exists()
    assert main(SMALL + ["--farm-frames", str(frames), "--farm-movie", str(tmp_path / "m.mp4")]) == 2
    out, err = capsys.readouterr()
    assert "--farm-movie" in err and "cannot write a movie as .mp4" in err and "simulating" not in out
    (tmp_path / "file").write_text("")
    assert main(SMALL + ["--farm-frames", str(tmp_path / "file")]) == 2
    assert "--farm-frames" in capsys.readouterr().err


def test_the_compare_plots_legend_stays_inside_the_figure():
    # With four policies the slots-in-use legend had four columns of long labels and ran
    # off the right edge: "easy: occupancy while jobs queued" was cut.
    pytest.importorskip("matplotlib")
    from mysched.backends.sim.farm import make_nodes
    from mysched.config import config_from_text
    from mysched.core.model.batch import Job, TraceJob
    from mysched.core.planner import POLICIES
    from mysched.sim.plot import result_figure
    from mysched.sim.replay import SimOptions, simulate

    cfg = config_from_text('vos = { a = { groups = ["a"]; share = 50; }; };')
    wl = [TraceJob(Job(str(i), "q", "u", "a", submit_time=1e9 + 30 * i), 600.0) for i in range(20)]
    runs = []
    for policy in POLICIES:
        r = simulate(wl, cfg, make_nodes(2, 2), SimOptions(policy=policy))
        r.policy = policy
        runs.append(r)
    fig = result_figure(runs)
    fig.canvas.draw()
    legend = fig.axes[-1].get_legend().get_window_extent()
    assert legend.x0 >= 0 and legend.x1 <= fig.bbox.x1, (legend, fig.bbox)
