"""`mysched simulate` on a trace says when the run cannot mean what the admin asked: a
configuration whose VOs own no job of the trace, groups replayed with no share, options of
the synthetic workload given with a trace, a --from after the trace's end."""

from __future__ import annotations

import pytest

from mysched.cli.main import main

SWF = "".join(f"{i} {i * 60} 0 300 1 -1 -1 1 600 -1 1 {i % 3} {g} -1 1 -1 -1 -1\n"
              for i, g in enumerate([2, 6, 2, 3] * 10, 1))
RUN = ["--nodes", "2", "--slots-per-node", "2", "--progress", "never"]


@pytest.fixture
def trace(tmp_path):
    f = tmp_path / "t.swf"
    f.write_text("; UnixStartTime: 1100000000\n" + SWF)
    return f


def cfg(tmp_path, text: str):
    f = tmp_path / "site.cfg"
    f.write_text(text)
    return str(f)


SITE = 'vos = { atlas = { groups = ["atlas"]; share = 60; }; cms = { groups = ["cms"]; share = 30; }; };'


def test_a_config_whose_vos_own_no_job_of_the_trace_says_so(tmp_path, trace, capsys):
    site = cfg(tmp_path, SITE)
    assert main(["simulate", "--trace", str(trace), "-c", site] + RUN) == 0
    out, err = capsys.readouterr()
    assert f"no job of the trace belongs to a VO of {site}" in err and "--vo-map" in err
    assert "3 VO(s) of the trace are not in" in err and "3.3% share each" in err
    assert "default_vo 'others'" in err
    assert "no jobs in the workload" in out  # atlas and cms rows
    assert main(["simulate", "--trace", str(trace), "-c", site, "--vo-map", "g2=atlas,g6=cms,g3=cms"] + RUN) == 0
    out, err = capsys.readouterr()
    assert "warning" not in err


def test_groups_the_config_leaves_no_share_are_named(tmp_path, trace, capsys):
    full = cfg(tmp_path, SITE.replace("share = 30", "share = 40"))
    assert main(["simulate", "--trace", str(trace), "-c", full, "--vo-map", "g2=atlas"] + RUN) == 0
    err = capsys.readouterr().err
    assert "2 VO(s) of the trace are not in" in err and "with no share" in err and "add up to 100 %" in err
    assert "g3, g6" in err and "no job of the trace belongs" not in err


@pytest.mark.parametrize("option", [["--mcore-fraction", "0.5"], ["--seed", "3"], ["--duration", "6"],
                                    ["--bursts", "2"], ["--burst-every", "6"]])
def test_synthetic_options_are_refused_with_a_trace(trace, capsys, option):
    assert main(["simulate", "--trace", str(trace)] + option + RUN) == 2
    out, err = capsys.readouterr()
    assert f"{option[0]} applies to the synthetic workload, not to --trace" in err and "simulating" not in out


def test_from_after_the_trace_ends_names_its_last_submission(trace, capsys):
    assert main(["simulate", "--trace", str(trace), "--from", "2010-01-01"] + RUN) == 1
    err = capsys.readouterr().err
    assert "--from 2010-01-01 00:00 UTC is after its last submission, 2004-11-09 12:13 UTC" in err


@pytest.mark.parametrize("run", [["--duration", "2", "--nodes", "2", "--pack", "atlas"],
                                 ["--duration", "24", "--nodes", "20", "--pack", "atlasprd", "--pack-ttl", "1h",
                                  "--mcore-fraction", "0.5"]])  # exclusive 58.44 %, relaxed 55.14 %: a gain
def test_compare_packing_states_the_fill_factor_difference_in_percentage_points(capsys, run):
    assert main(["simulate", "--compare-packing", "--progress", "never"] + run) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "exclusive against relaxed" in x)
    assert "-0.00" not in line and "% of the slots" not in line and "-" not in line.split(",")[-1]
    exclusive, relaxed = (float(x.rstrip("%,")) for x in line.split(": ")[1].split()[0:3:2])
    assert ("a gain of" if exclusive > relaxed else "a loss of" if exclusive < relaxed else "no difference") in line


def test_a_vo_map_that_changes_nothing_or_bypasses_the_config_is_named(tmp_path, trace, capsys):
    site = cfg(tmp_path, SITE.replace('["atlas"]', '["atlas", "g2"]'))
    assert main(["simulate", "--trace", str(trace), "-c", site, "--vo-map", "G6=cms,g3=cms"] + RUN) == 0
    err = capsys.readouterr().err
    assert "--vo-map: no job replayed has group G6" in err and "that mapping changes nothing" in err
    # g2 is atlas's in the config; mapped to an undeclared VO its jobs had no share, unsaid
    assert main(["simulate", "--trace", str(trace), "-c", site, "--vo-map", "g2=atlass,g3=cms,g6=cms"] + RUN) == 0
    err = capsys.readouterr().err
    assert "--vo-map names VO(s) atlass that" in err and "no share and no limits" in err


def test_settings_no_job_of_the_trace_brings_into_play_are_named(tmp_path, trace, capsys):
    # "What if I drain for 8-core pilots / pack cms / guarantee atlas a pool" on a trace of
    # single-core jobs of other groups printed the same figures as without, unsaid.
    site = cfg(tmp_path, SITE + '\ndrain = { rate = 12; max_draining = 1; min_cores = 8; };\n'
               'packing = { mc = { policy = "exclusive"; groups = ["atlas"]; }; };\n'
               'pools = { p = { hosts = ["wn*"]; package = { slots = 2; }; groups = { atlas = 1; }; }; };')
    assert main(["simulate", "--trace", str(trace), "-c", site, "--vo-map", "g2=atlas,g3=cms,g6=cms"] + RUN) == 0
    err = capsys.readouterr().err
    assert "drain is on, but no job asks for drain.min_cores = 8 cores or more (the widest asks for 1)" in err
    assert "packing class mc (exclusive) takes no job of the workload" in err
    assert "pool p: no job of the workload belongs to its consumer group atlas" in err


def test_the_default_partition_is_not_named_idle_on_a_single_core_trace(tmp_path, trace, capsys):
    # The partition that follows the demand is on by default: every replay of single-core
    # jobs warned that "drain is on" though no drain was written. One override is a setting.
    run = ["simulate", "--trace", str(trace), "--vo-map", "g2=atlas,g3=cms,g6=cms"] + RUN
    assert main(run + ["-c", cfg(tmp_path, SITE)]) == 0
    assert "drain" not in capsys.readouterr().err
    assert main(run + ["-c", cfg(tmp_path, SITE + '\ndrain = { max_draining = 3; };')]) == 0
    assert "drain is on, but no job asks for drain.min_cores = 2 cores or more" in capsys.readouterr().err


def test_json_to_stdout_is_json_alone(trace, capsys):
    # The report was printed to stdout before the JSON, so 'simulate --json - | jq' failed.
    import json

    assert main(["simulate", "--trace", str(trace), "--compare", "--json", "-"] + RUN) == 0
    out, err = capsys.readouterr()
    assert set(json.loads(out)) == {"mysched", "fifo", "least-loaded", "easy"}
    assert "simulating trace" in err and "occupancy" in err
