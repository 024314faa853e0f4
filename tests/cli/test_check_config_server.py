"""`check-config --server`: what the configuration names that the real farm does not have."""

from __future__ import annotations

from mysched.cli.check_config import farm_warnings
from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import Node, Queue, Snapshot

CFG = ('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
       'node_types = { big = { properties = ["bigmemx"]; }; };\n'
       'queues = { nosuch = { max_running = 3; }; atlas = { nodes = ["wn9*"]; }; cms = { }; };\n')


def test_queues_and_node_types_the_server_lacks_are_named():
    snap = Snapshot(0.0, (), (Node("wn01", 4, properties=frozenset({"bigmem"})), Node("wn02", 4)),
                    (Queue("atlas"), Queue("cms")))
    got = farm_warnings(config_from_text(CFG, "site.cfg"), snap)
    assert got == ["site.cfg: queues.nosuch: pbs_server has no such queue",
                   "site.cfg: node_types.big: matches none of the server's 2 node(s)",
                   "site.cfg: queues.atlas: its nodes/node_types match none of the server's nodes: its jobs can "
                   "never start"]
    ok = CFG.replace("bigmemx", "bigmem").replace("wn9*", "wn0*").replace("nosuch", "cms")
    assert farm_warnings(config_from_text(ok.replace("cms = { }; ", ""), "site.cfg"), snap) == []


def test_check_config_server_prints_them_and_keeps_exit_status_0(tmp_path, capsys):
    cfg = tmp_path / "site.cfg"
    cfg.write_text(CFG)
    assert main(["check-config", "-c", str(cfg), "--server", "sim://?nodes=3"]) == 0
    out = capsys.readouterr().out
    assert f"warning: {cfg}:2: node_types.big: matches none of the server's 3 node(s)" in out  # with its line


def test_downtimes_are_listed_with_their_state_and_one_on_no_node_is_a_warning(tmp_path, capsys):
    # An admin leaves last month's window in the file, or mistypes a host pattern: both
    # would silently close nothing.
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n'
                   'downtimes = { old = { start = "2020-03-01T08:00"; end = "2020-03-01T12:00"; };\n'
                   '  typo = { start = "2099-03-01T08:00"; end = "2099-03-01T12:00"; hosts = ["nw*"]; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "sim://?nodes=3"]) == 0
    out = capsys.readouterr().out
    assert "downtime old (2020-03-01 08:00 to 2020-03-01 12:00 UTC; jobs end 5 min before): over" in out
    assert "downtime typo (2099-03-01 08:00 to 2099-03-01 12:00 UTC; jobs end 5 min before): ahead" in out
    assert f"warning: {cfg}:3: downtimes.typo: matches none of the server's 3 node(s)" in out
    assert "downtimes.old: matches none" not in out


def test_the_split_of_a_vos_slots_among_its_groups_is_printed_when_their_shares_differ(tmp_path, capsys):
    # production 80 and analysis 20 -- and the VO's third group, given no share, weighs 1
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlasprd", "atlasusr", "atlassgm"]; share = 100; }; };\n'
                   'groups = { atlasprd = { share = 80; }; atlasusr = { share = 20; }; };\n')
    assert main(["check-config", "-c", str(cfg)]) == 0
    assert "group shares in VO atlas: atlasprd 79.2%, atlasusr 19.8%, atlassgm 1.0% (a group without a share " \
        "weighs 1)" in capsys.readouterr().out
    cfg.write_text('vos = { atlas = { groups = ["atlasprd", "atlasusr"]; share = 100; }; };\n')
    assert main(["check-config", "-c", str(cfg)]) == 0
    assert "group shares" not in capsys.readouterr().out


def test_a_config_error_does_not_hide_what_the_farm_says_of_the_rest(tmp_path, capsys):
    # a downtime ending before it starts (line 4) stopped check-config there: the node type that
    # matches no node (line 2) and the queue whose nodes the server lacks (line 3) came only once it was fixed
    cfg = tmp_path / "site.cfg"
    cfg.write_text(CFG + 'downtimes = { bad = { start = "2099-03-01T12:00"; end = "2099-03-01T08:00"; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "sim://?nodes=3"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"warning: {cfg}:2: node_types.big: matches none of the server's 3 node(s)"
    assert err[1] == (f"warning: {cfg}:3: queues.atlas: its nodes/node_types match none of the server's nodes: its "
                      "jobs can never start")
    assert err[-1].startswith(f"mysched: error: {cfg}:4: downtimes.bad")
    # and a server that cannot be read does not hide the file's errors either
    assert main(["check-config", "-c", str(cfg), "--server", "sim://?nodes=many"]) == 1
    err = capsys.readouterr().err
    assert f"mysched: error: {cfg}:4: downtimes.bad" in err and "not checked" in err


def test_a_config_error_does_not_hide_an_overcommitted_pool(tmp_path, capsys):
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { a = { groups = ["a"]; share = 50; }; b = { groups = ["b"]; share = 50; max_cores = "x"; }; };\n'
                   'pools = { p = { hosts = ["wn*"]; package = { slots = 8; }; groups = { a = 5; }; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "sim://?nodes=2&slots=8"]) == 1
    err = capsys.readouterr().err
    assert "pools.p: overcommitted: guarantees 5 package(s), its 2 host(s) hold 2" in err
    assert f"{cfg}:1: vos.b.max_cores: expected an integer" in err


class FakeServer:
    """pbs_server as check-config reads it: one snapshot, then closed."""

    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap

    def snapshot(self) -> Snapshot:
        return self.snap

    def close(self) -> None:
        pass


def test_a_vo_running_much_of_the_farm_with_no_guarantee_is_named(tmp_path, capsys, monkeypatch):
    # Group belle is in no VO: its jobs fall into the default VO "others", which has no share,
    # and hold 3 of the farm's 8 slots. check-config said OK and nothing more.
    from mysched.cli import run as runmod
    from mysched.core.model.batch import Job, JobState

    jobs = [Job(f"{i}", "q", "u", "belle", state=JobState.RUNNING) for i in range(3)]
    jobs += [Job("a1", "q", "u", "atlas", state=JobState.RUNNING), Job("q1", "q", "u", "belle")]  # q1 waits
    snap = Snapshot(0.0, tuple(jobs), (Node("wn01", 4), Node("wn02", 4)), (Queue("q"),))
    monkeypatch.setattr(runmod, "make_server", lambda url, cfg: FakeServer(snap))
    cfg = tmp_path / "site.cfg"
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "torque://pbs"]) == 0  # a warning
    out = capsys.readouterr().out
    assert (f"warning: {cfg}: VO others, the default VO (of the groups no VO names) runs 37.5% of pbs_server's "
            "slots now with no guarantee (not declared under vos)") in out
    # a VO declared with a share of 0 % is named as such
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 100; }; b = { groups = ["belle"]; share = 0; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "torque://pbs"]) == 0
    out = capsys.readouterr().out
    assert "VO b runs 37.5% of pbs_server's slots now with no guarantee (share 0 %)" in out
    assert "VO atlas" not in out
    # with a share, nothing to say
    cfg.write_text('vos = { atlas = { groups = ["atlas"]; share = 60; }; b = { groups = ["belle"]; share = 40; }; };\n')
    assert main(["check-config", "-c", str(cfg), "--server", "torque://pbs"]) == 0
    assert "no guarantee" not in capsys.readouterr().out
