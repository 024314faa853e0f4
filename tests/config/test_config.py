"""Configuration: the example file is valid, bad files are reported with file, line and key."""

from __future__ import annotations

import math

import pytest

from mysched.cli.main import main
from mysched.core.model.durations import parse_duration
from mysched.config import config_from_text, load_config
from mysched.errors import ConfigError

from ..conftest import REPO


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as exc:
        config_from_text(text, "site.cfg")
    return exc.value.problems


def test_example_config_is_valid_and_is_the_embedded_default():
    cfg = load_config(str(REPO / "etc" / "mysched.cfg"))
    assert set(cfg.queues) == {"atlas", "cms", "lhcb", "desy", "operations"}
    assert cfg.vo_of("atlasprd") == "atlas"
    assert cfg.vo_of("unknown-group") == "others"
    assert "operations" in cfg.hot.queues
    embedded = (REPO / "mysched" / "data" / "mysched.cfg").read_text()
    assert embedded == (REPO / "etc" / "mysched.cfg").read_text()


def test_unknown_key_names_line_and_suggests():
    out = problems("scheduler = {\n  intervall = 60;\n};\n")
    assert out == ["site.cfg:2: scheduler.intervall: unknown setting (did you mean 'interval'?)"]


def test_wrong_type_is_reported_with_path():
    out = problems('vos = { atlas = { groups = ["atlas"]; share = "thirty"; }; };\n')
    assert len(out) == 1 and out[0].startswith("site.cfg:1: vos.atlas.share: expected a number")


def test_shares_over_100_percent():
    out = problems('vos = {\n a = { groups = ["a"]; share = 70; };\n b = { groups = ["b"]; share = 40; };\n};\n')
    assert any("shares add up to 110 %" in p for p in out)


def test_group_in_two_vos_names_both_places():
    out = problems('vos = {\n a = { groups = ["g"]; };\n b = { groups = ["g"]; };\n};\n')
    assert len(out) == 1
    assert out[0].startswith("site.cfg:3: vos.b.groups: group 'g' is already in VO 'a' (site.cfg:2)")


def test_duplicate_key_is_detected_although_libconf_keeps_the_last():
    out = problems("scheduler = { interval = 60; };\nscheduler = { interval = 30; };\n")
    assert out == ["site.cfg:2: scheduler: duplicate setting (first set on line 1; libconfig would "
                   "silently keep only the last one)"]


def test_unknown_queue_in_hot_list_and_limits():
    out = problems('queues = { atlas = {}; };\nhot = { queues = ["atlass"]; };\n'
                   'packing = { c = { policy = "exclusive"; queues = ["cmz"]; }; };\n')
    assert "site.cfg:2: hot.queues: unknown queue 'atlass' (not declared under queues)" in out
    assert "site.cfg:3: packing.c.queues: unknown queue 'cmz' (not declared under queues)" in out


def test_all_problems_reported_at_once():
    out = problems('scheduler = { interval = -5; max_starts_per_cycle = 0; };\nfoo = 1;\n')
    assert len(out) == 3


def test_a_negative_reservation_wait_factor_is_named():
    out = problems('scheduler = {\n  reservation_wait_factor = -1;\n};\n')
    assert out == ["site.cfg:2: scheduler.reservation_wait_factor: must be between 0 and 1000, got -1"]


def test_syntax_error_names_line():
    out = problems("scheduler = {\n  interval = ;\n};\n")
    assert out[0].startswith("site.cfg:2: syntax error")


def test_durations():
    assert parse_duration("2d") == 172800
    assert parse_duration("90m") == 5400
    assert parse_duration(30) == 30
    assert math.isinf(parse_duration("inf"))
    with pytest.raises(ValueError):
        parse_duration("soon")


def test_share_as_absolute_slots():
    cfg = config_from_text('vos = { a = { groups = ["a"]; slots = 100; }; };')
    assert cfg.vos["a"].guarantee(400) == 100
    assert cfg.vos["a"].share_fraction(400) == 0.25


def test_check_config_cli(tmp_path, capsys):
    bad = tmp_path / "bad.cfg"
    bad.write_text('vos = { a = { groups = ["g"]; share = 101; }; };\n')
    assert main(["check-config", "-c", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:1: vos.a.share: must be between 0 and 100, got 101" in err
    assert "Traceback" not in err
    assert main(["check-config", "-c", str(REPO / "etc" / "mysched.cfg")]) == 0
    assert main(["check-config", "-c", str(tmp_path / "missing.cfg")]) == 1
    assert "missing.cfg: no such file" in capsys.readouterr().err


def test_include_is_read_beside_the_including_file_and_errors_name_it(tmp_path, monkeypatch):
    site = tmp_path / "etc"
    site.mkdir()
    (site / "vos.cfg").write_text('vos = {\n  atlas = { groups = ["atlas"]; share = 60; };\n};\n')
    (site / "main.cfg").write_text('@include "vos.cfg"\ndefault_vo = "atlas";\n')
    monkeypatch.chdir(tmp_path)  # not the config's directory
    cfg = load_config(str(site / "main.cfg"))
    assert cfg.vo_of("atlas") == "atlas"
    # a bad key inside the included file is reported at its own file and line
    (site / "vos.cfg").write_text('vos = {\n  atlas = { groups = ["atlas"]; shar = 60; };\n};\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(site / "main.cfg"))
    assert exc.value.problems[0].startswith(f"{site / 'vos.cfg'}:2: vos.atlas.shar: unknown setting")
    # and a syntax error there too
    (site / "vos.cfg").write_text('vos = {\n  atlas = { groups = ["atlas"]; share = = 60; };\n};\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(site / "main.cfg"))
    assert str(exc.value).startswith(f"{site / 'vos.cfg'}:2: syntax error")
    (site / "main.cfg").write_text('@include "missing.cfg"\n')
    with pytest.raises(ConfigError) as exc:
        load_config(str(site / "main.cfg"))
    assert "missing.cfg" in str(exc.value) and str(site) in str(exc.value)


def test_a_vo_without_groups_is_reported():
    out = problems('vos = {\n a = { groups = ["a"]; share = 50; };\n b = { share = 50; };\n};\n')
    assert out == ["site.cfg:3: vos.b: no unix group belongs to VO 'b': list its groups (groups = [\"...\"]) or set "
                   "groups.GROUP.vo; without any, its jobs count as the default VO 'others'"]
    # groups may also name their VO; the default VO needs no groups
    config_from_text('vos = { b = { share = 50; }; others = { share = 5; }; };\ngroups = { g = { vo = "b"; }; };')


def test_default_vo_need_not_be_declared_either_way(tmp_path, capsys):
    for text in ('vos = { a = { groups = ["a"]; }; };\n',
                 'vos = { a = { groups = ["a"]; }; };\ndefault_vo = "others";\n'):
        path = tmp_path / "site.cfg"
        path.write_text(text)
        assert main(["check-config", "-c", str(path)]) == 0
        out = capsys.readouterr().out
        assert "default VO 'others' (not declared under vos: no share, no limits)" in out
        assert load_config(str(path)).vo_of("nobody") == "others"


def test_values_the_daemon_would_trip_over_later_are_refused_now():
    out = problems('farm = { name_format = "wn{idx:04d}"; nodes = 1000000000; };\n'
                   'server = { url = "bogus://x"; timeout = "2d"; };\n'
                   'daemon = { metrics_address = "not an address"; event_address = "off"; leader_timeout = 0.5; };\n'
                   'history = { database = "not a url"; window = "10w"; };\n'
                   'scheduler = { interval = 1000000000000; };\n')
    keys = sorted(p.split(": ")[1] for p in out)
    assert keys == sorted(["farm.name_format", "farm.nodes", "history.database", "scheduler.interval",
                           "server.timeout", "server.url", "daemon.metrics_address", "daemon.leader_timeout"])
    assert all(p.startswith("site.cfg:") for p in out)
    # the good forms pass
    config_from_text('farm = { name_format = "node{index:03d}"; };\nserver = { url = "torque://batch01"; };\n'
                     'daemon = { metrics_address = "[::1]:9720"; leader_timeout = 10; };\n'
                     'history = { database = "postgresql+psycopg2://u:p%40x@db/mysched"; };')


def test_a_file_that_is_no_configuration_at_all_is_located(tmp_path):
    path = tmp_path / "passwd"
    path.write_text("root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin:/usr/sbin/nologin\n")
    with pytest.raises(ConfigError) as exc:
        load_config(str(path))
    msg = str(exc.value)
    assert msg.startswith(f"{path}:1: syntax error") and "row" not in msg


def test_the_disabled_examples_of_the_example_file_are_valid_when_enabled():
    """The commented-out examples (packing, external load) are what an admin copies: they parse."""
    text = (REPO / "etc" / "mysched.cfg").read_text()
    blocks, cur = [], []
    for line in text.splitlines():
        if line.startswith("# ") and (cur or line[2:3].isalpha() and " = {" in line):
            cur.append(line[2:])
            if line.startswith("# }") or (line.rstrip().endswith("};") and len(cur) == 1):
                blocks.append("\n".join(cur))
                cur = []
        else:
            cur = []
    assert any("load_sources" in b for b in blocks) and any("node_load" in b for b in blocks)
    cfg = config_from_text(text + "\n" + "\n".join(blocks) + "\n")
    assert set(cfg.load_sources) == {"se_atlas", "site_probe", "nfs"} and cfg.load_rules
    assert cfg.node_load.min_free_mem == 2 << 30 and cfg.packing
    assert cfg.user_limits("alice")[1].max_cores == 2000 and cfg.user_limits("prdatlas")[1].max_running is None
