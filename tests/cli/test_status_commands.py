"""Status commands against a status file built from a known snapshot and plan."""

from __future__ import annotations

import json
import time

import pytest

from mysched.cli.main import main
from mysched.config import config_from_text
from mysched.core.model.batch import JobState, Node, NodeState
from mysched.core.planner import plan
from mysched.daemon.statusfile import FORMAT, build_status, write_status
from mysched.core.share.usage import Usage

from ..conftest import queued, running, snap

CFG = config_from_text('''
vos = { atlas = { groups = ["atlas", "atlassgm"]; share = 60; max_running = 5; };
        cms = { groups = ["cms"]; share = 40; }; };
groups = { atlassgm = { max_per_node = 1; }; atlas = { share = 3; }; };
node_types = { sw = { nodes = ["wn03"]; groups = ["atlassgm"]; }; };
''')
NOW = 1_000_000.0


def make_status(tmp_path, published=None):
    jobs = [running("r1", "alice", "atlas", "wn01", start=NOW - 600), running("r2", "bob", "cms", "wn01", start=NOW - 60),
            running("r3", "bob", "cms", "wn02", start=NOW - 120)]
    jobs += [queued("q1", "carol", "cms", submit=NOW - 300), queued("q2", "dave", "atlas", submit=NOW - 200),
             queued("h1", "erin", "cms", state=JobState.HELD, submit=NOW - 100)]
    jobs += [queued(f"w{i}", "frank", "cms", submit=NOW - 50 + i) for i in range(4)]
    jobs = [j._replace(walltime=3600.0) for j in jobs]
    nodes = [Node("wn01", 2), Node("wn02", 2), Node("wn03", 2), Node("wn04", 2, NodeState.DOWN)]
    s = snap(jobs, nodes)
    s = s.__class__(NOW, s.jobs, s.nodes, s.queues)
    p = plan(s, CFG, Usage(vo={"cms": 7200.0}, group={"cms": 7200.0}, user={"bob": 7200.0}), NOW)
    write_status(str(tmp_path), build_status(s, p, CFG, published=published or time.time(),
                                             usage=Usage(group={"cms": 7200.0}, user={"bob": 7200.0})))
    return s, p


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_jobs_lists_states_reasons_and_summary(tmp_path, capsys):
    s, p = make_status(tmp_path)
    doc = run_json(capsys, "jobs", "--state-dir", str(tmp_path))
    assert doc["counts"]["running"] == 3 + len(p.starts)
    assert doc["counts"]["blocked"] == 1  # the held job
    assert doc["counts"]["queued"] == len(s.jobs) - 3 - len(p.starts) - 1
    by_id = {j["id"]: j for j in doc["jobs"]}
    assert by_id["h1"]["class"] == "blocked" and by_id["h1"]["reason"] == "held"
    for w in p.waits.values():
        assert by_id[w.job_id]["reason"] == w.reason
    # A blocked job has no place in the order and puts no one behind it (as showq's eligible
    # list): the others still waiting are numbered 1..N in the plan's order, the held job
    # (first in the plan's order here) and the jobs the cycle started without a position.
    assert p.waits["h1"].rank == 1 and by_id["h1"]["rank"] is None
    assert p.starts and all(by_id[st.job_id]["rank"] is None for st in p.starts)
    ordered = sorted(w.rank for w in p.waits.values() if w.reason != "held")
    ranks = {jid: by_id[jid]["rank"] for jid in by_id if by_id[jid]["rank"] is not None}
    assert sorted(ranks.values()) == list(range(1, len(ordered) + 1))
    for w in p.waits.values():
        if w.reason != "held":
            assert ranks[w.job_id] == ordered.index(w.rank) + 1
    assert doc["farm"]["total_slots"] == 6 and doc["farm"]["used_slots"] == 3 + len(p.starts)
    # filters
    doc = run_json(capsys, "jobs", "--state-dir", str(tmp_path), "-u", "frank", "--state", "queued")
    assert {j["user"] for j in doc["jobs"]} == {"frank"} and all(j["class"] == "queued" for j in doc["jobs"])
    # plain table, piped: no colour codes, header unless --noheader
    assert main(["jobs", "--state-dir", str(tmp_path), "--noheader"]) == 0
    out = capsys.readouterr().out
    assert "\033[" not in out and not out.startswith("JOBID")


def test_nodes_shows_diversity_and_types(tmp_path, capsys):
    s, p = make_status(tmp_path)
    doc = run_json(capsys, "nodes", "--state-dir", str(tmp_path))
    nodes = {n["name"]: n for n in doc["nodes"]}
    started_on = {}
    for st in p.starts:
        started_on.setdefault(st.placement[0][0], []).append(st)
    n1 = nodes["wn01"]
    users = {"alice", "bob"} | {st.user for st in started_on.get("wn01", [])}
    assert n1["jobs"] == 2 + len(started_on.get("wn01", []))
    assert n1["diversity"] == pytest.approx(len(users) / n1["jobs"], abs=1e-3)
    assert nodes["wn03"]["type"] == "sw" and nodes["wn04"]["state"] == "down"
    assert doc["summary"]["by_state"]["down"] == 1


def test_shares_match_the_plan(tmp_path, capsys):
    s, p = make_status(tmp_path)
    doc = run_json(capsys, "shares", "--state-dir", str(tmp_path), "--users")
    for name, v in p.vos.items():
        d = doc["vos"][name]
        started = [st for st in p.starts if st.vo == name]  # the cycle's starts count, as in `jobs`
        assert (d["guarantee"], d["running_slots"], d["queued_jobs"]) == (
            v.guarantee, v.running_slots + sum(st.cores for st in started), v.queued_jobs - len(started))
    assert doc["users"]["bob"]["usage_h"] == 2.0
    groups = run_json(capsys, "shares", "--state-dir", str(tmp_path), "--groups")["groups"]
    assert groups["atlas"]["share"] == 3 and groups["cms"]["share"] == 1.0  # weights within the VO
    assert main(["shares", "--state-dir", str(tmp_path), "--groups", "--max-age", "99999999999"]) == 0
    head = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("GROUP"))
    assert head.split()[:3] == ["GROUP", "VO", "SHARE"]


def test_why_explains_a_waiting_job(tmp_path, capsys):
    s, p = make_status(tmp_path)
    jid, w = next((k, w) for k, w in p.waits.items() if w.reason not in ("held",))
    doc = run_json(capsys, "why", "--state-dir", str(tmp_path), jid)
    ordered = sorted(x.rank for x in p.waits.values() if x.reason != "held")  # started jobs run now: not ahead
    assert doc["class"] == "queued" and f"position {ordered.index(w.rank) + 1} " in doc["explanation"]
    assert "6 waiting, 1 of them blocked" in doc["explanation"]  # the held job has no position
    assert doc["limits"]["vo"]["name"] == s.jobs[[j.id for j in s.jobs].index(jid)].group.replace("sgm", "")
    if w.nodes_rejected:
        assert doc["nodes_rejected"] == dict(w.nodes_rejected)
    doc = run_json(capsys, "why", "--state-dir", str(tmp_path), "h1")
    assert doc["class"] == "blocked" and doc["explanation"].startswith("blocked: ")
    assert main(["why", "--state-dir", str(tmp_path), "h1"]) == 0
    assert "held" in capsys.readouterr().out


def test_when_from_walltimes(tmp_path, capsys):
    s, p = make_status(tmp_path)
    waiting = sorted((w for w in p.waits.values() if w.reason != "held"), key=lambda w: w.rank)
    doc = run_json(capsys, "when", "--state-dir", str(tmp_path), waiting[0].job_id)
    # the earliest slot frees when r1 (started 600 s ago, 1 h walltime) ends
    assert doc["start"] == pytest.approx(NOW - 600 + 3600) and doc["exact"]
    doc = run_json(capsys, "when", "--state-dir", str(tmp_path), "h1")
    assert doc["start"] is None and "held" in doc["why"]
    # a running job: its start, and no negative "in"
    doc = run_json(capsys, "when", "--state-dir", str(tmp_path), "r1")
    assert doc["class"] == "running" and doc["start"] == NOW - 600 and doc["in_s"] == 0 and doc["clock"] == "wall"
    assert main(["when", "--state-dir", str(tmp_path), waiting[0].job_id]) == 0
    out = capsys.readouterr().out
    assert time.strftime("%Z") in out and "simulated" not in out  # times carry their zone


def test_json_says_null_for_what_is_absent_and_lists_a_job_s_hosts(tmp_path, capsys):
    # (a user on a simulated farm) a job running from before the cycle had reason "" and its
    # nodes as "wn01:1" in `jobs`, but a list in `when`; `why` gave "" for cycle, request and
    # reason_text, `nodes` "" for a node's type, class and note
    make_status(tmp_path)
    by_id = {j["id"]: j for j in run_json(capsys, "jobs", "--state-dir", str(tmp_path))["jobs"]}
    assert by_id["r1"]["reason"] is None and by_id["r1"]["detail"] is None and by_id["r1"]["nodes"] == ["wn01"]
    assert by_id["q1"]["nodes"] is None or type(by_id["q1"]["nodes"]) is list
    why = run_json(capsys, "why", "--state-dir", str(tmp_path), "r1")
    assert (why["job"]["cycle"], why["job"]["request"], why["reason_text"], why["job"]["nodes"]) == (
        None, None, None, ["wn01"])
    assert run_json(capsys, "when", "--state-dir", str(tmp_path), "r1")["nodes"] == ["wn01"]
    nodes = {n["name"]: n for n in run_json(capsys, "nodes", "--state-dir", str(tmp_path))["nodes"]}
    assert (nodes["wn01"]["type"], nodes["wn01"]["class"], nodes["wn01"]["note"]) == (None, None, None)
    free = run_json(capsys, "free", "--state-dir", str(tmp_path))
    assert all(type(r["nodes"]) is list and len(r["nodes"]) <= 3 for r in free["rows"])


def test_free_and_missing_or_stale_status(tmp_path, capsys):
    s, p = make_status(tmp_path)
    doc = run_json(capsys, "free", "--state-dir", str(tmp_path))
    # 3 usable nodes x 2 slots, 3 running, and what the cycle started
    assert doc["total_free"] == 6 - 3 - sum(st.cores for st in p.starts)
    rows = {r["type"]: r for r in doc["rows"]}
    assert sum(r["free_slots"] for r in doc["rows"]) == doc["total_free"]
    # the software node is for atlassgm only; untyped nodes are open to all (null, not a text sentinel)
    assert rows.get("sw", {"groups": ["atlassgm"], "vos": []})["groups"] == ["atlassgm"]
    assert all(r["vos"] is None and r["groups"] is None and r["queue"] is None for t, r in rows.items() if t is None)
    assert main(["jobs", "--state-dir", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err
    assert "no status file" in err and "Traceback" not in err
    make_status(tmp_path, published=time.time() - 4000)
    assert main(["nodes", "--state-dir", str(tmp_path)]) == 1
    assert "stale" in capsys.readouterr().err
    assert main(["why", "--state-dir", str(tmp_path), "--max-age", "99999", "nosuch"]) == 1
    assert "not in the status" in capsys.readouterr().err


def test_usage_from_the_history_store(tmp_path, capsys):
    from mysched.core.model.batch import FinishedJob
    from mysched.history.store import Store
    url = f"sqlite:///{tmp_path}/h.db"
    Store(url).add_finished([FinishedJob("1", "alice", "atlas", "q", 0.0, 7200.0, 2, cput=7200.0)])
    doc = run_json(capsys, "usage", "--db", url, "--by", "user")
    assert doc["rows"] == [{"key": "alice", "jobs": 1, "wall_hours": 4.0, "cpu_hours": 2.0}]
    assert main(["usage", "--db", f"sqlite:///{tmp_path}/missing.db"]) == 1
    assert "no history database" in capsys.readouterr().err


def test_jobs_table_keeps_reasons_and_nodes_in_their_own_columns(tmp_path, capsys):
    s, p = make_status(tmp_path)
    assert main(["jobs", "--state-dir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = lines[0].split()
    assert header[-2:] == ["REASON", "NODES"]
    rows = {ln.split()[0]: ln.split() for ln in lines[1:] if ln.strip() and not ln[0].isspace()}
    assert rows["r1"][-2:] == ["-", "wn01:1"]  # running: no reason, its node
    w = next(w for w in p.waits.values() if w.reason != "held")
    assert rows[w.job_id][-2:] == [w.reason, "-"]
    assert all(len(r) == len(header) for r in rows.values() if r[0] in {"r1", w.job_id})
    assert time.strftime("%Z") in lines[-1]  # the status time carries its zone


def test_usage_reads_the_history_beside_the_status_file_and_says_so(tmp_path, capsys, monkeypatch):
    from mysched.core.model.batch import FinishedJob
    from mysched.history.store import Store
    Store(f"sqlite:///{tmp_path}/history.db").add_finished(
        [FinishedJob("1", "alice", "atlas", "q", 0.0, 3600.0, 1, cput=1800.0)])
    monkeypatch.setenv("MYSCHED_STATE_DIR", str(tmp_path))
    doc = run_json(capsys, "usage", "--by", "user")
    assert doc["rows"] == [{"key": "alice", "jobs": 1, "wall_hours": 1.0, "cpu_hours": 0.5}]
    assert doc["database"] == f"sqlite:///{tmp_path}/history.db"
    # not a silent read of /var/lib/mysched: stderr names the database and why
    assert main(["usage", "--state-dir", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"{tmp_path}/history.db" in err and "state directory" in err


# -- damaged status files: one located line, never a traceback -----------------------------------

STATUS_COMMANDS = (["jobs"], ["why", "r1"], ["when", "r1"], ["nodes"], ["shares"], ["free"], ["pools"], ["loads"])


def _damage(tmp_path, change):
    """The status file of `make_status`, changed in place by `change(doc)`."""
    make_status(tmp_path)
    path = tmp_path / "status.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return doc


def _refused(capsys, argv, where):
    """`argv` fails with one line naming `where` and no internal error."""
    assert main(argv) == 1, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert where in err, (where, err)
    return err


def _set(key, value):
    return lambda d: d.__setitem__(key, value)


def _cell(kind, row, col, value):
    return lambda d: d[kind][row].__setitem__(d[f"{kind[:-1]}_columns"].index(col), value)


DAMAGED = [  # (what a hand edit, a truncated copy or another program left, the key the error names)
    (lambda d: [d.clear(), d.update(format=FORMAT, published=time.time())], "snapshot_time: missing"),
    # another format: one line saying which side to upgrade (format 2 files number blocked jobs
    # and lack the node note; a reader of 2 would call a blocked job "waiting, position -")
    (_set("format", 2), "status file of format 2, written by an older mysched daemon; this mysched reads "
                        f"format {FORMAT}: restart the daemon"),
    (_set("format", FORMAT + 1), f"status file of format {FORMAT + 1}, written by a newer mysched daemon"),
    (lambda d: d.pop("format"), "not a mysched status file (no format number"),
    (lambda d: d.pop("job_columns"), "job_columns: missing"),
    (lambda d: d.pop("node_columns"), "node_columns: missing"),
    (lambda d: d.pop("vos"), "vos: missing"),
    (_set("interval", "x"), 'interval: expected seconds'),
    (_set("stale", "x"), 'stale: expected an object, got "x"'),
    (_set("published", None), "published: expected a Unix time, got null"),
    (_set("snapshot_time", 1e300), "snapshot_time: expected a Unix time, got 1e+300"),
    (_set("snapshot_time", float("nan")), "snapshot_time: expected a Unix time, got NaN"),
    (_cell("jobs", 0, "state", "X"), 'jobs[0].state: expected a job state (Q, R, H, W, E, C, T, S), got "X"'),
    (lambda d: d["jobs"].__setitem__(1, d["jobs"][1][:5]), "jobs[1]: expected a row of 19 values"),
    (_cell("jobs", 0, "nodes", "wn01:x"), "jobs[0].nodes: expected NODE:CORES"),
    (_cell("jobs", 3, "rejected", 7), "jobs[3].rejected: no rejected[7]"),
    (_cell("nodes", 0, "slots", "2"), 'nodes[0].slots: expected a whole number of at least 0, got "2"'),
    (_cell("nodes", 0, "state", "weird"), 'nodes[0].state: expected a node state'),
    (lambda d: d["vos"]["cms"].pop("share"), "vos.cms.share: missing"),
    (lambda d: d["job_columns"].remove("state"), "job_columns: lacks state"),
]


@pytest.mark.parametrize("change, where", DAMAGED, ids=[(w.split(":") + [""])[0] + ":" + (w.split(":") + [""])[1][:20]
                                                        for _, w in DAMAGED])
def test_a_damaged_status_file_is_refused_naming_its_key_in_every_command(tmp_path, capsys, change, where):
    _damage(tmp_path, change)
    for argv in STATUS_COMMANDS:
        _refused(capsys, [*argv, "--state-dir", str(tmp_path)], f"{tmp_path / 'status.json'}: {where}")


def test_nulls_the_daemon_may_write_are_shown_not_crashed_on(tmp_path, capsys):
    # a waiting job the cycle did not order (no rank, no priority); a busy node without a diversity
    doc = _damage(tmp_path, lambda d: [_cell("jobs", 3, "priority", None)(d), _cell("nodes", 0, "diversity", None)(d)])
    jid = doc["jobs"][3][0]
    assert main(["why", "--state-dir", str(tmp_path), jid]) == 0
    assert "VO priority -" in capsys.readouterr().out
    assert main(["nodes", "--state-dir", str(tmp_path)]) == 0
    assert "mean diversity" in capsys.readouterr().out


def test_large_values_a_healthy_farm_may_publish_are_shown_not_refused(tmp_path, capsys):
    # a storage metric in bytes past a petabyte, a user's walltime of 11,000 years, an
    # unlimited history window: the daemon writes them as its inputs hold them
    def big(d):
        _cell("jobs", 3, "walltime", 3.6e11)(d)
        d["throttles"] = [{"rule": "se", "source": "dcache", "level": "partial", "factor": 0.5, "low": 1e15,
                           "high": 4e15, "value": 2e15, "vos": ["atlas"], "groups": [], "queues": [],
                           "detail": "dcache 2e15 between 1e15 and 4e15"}]
        d.setdefault("usage", {})["window_s"] = float("inf")
    doc = _damage(tmp_path, big)
    for argv in STATUS_COMMANDS:
        assert main([*argv, "--state-dir", str(tmp_path)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["why", "--state-dir", str(tmp_path), doc["jobs"][3][0]]) == 0
    assert "Traceback" not in capsys.readouterr().err


def _standby(tmp_path, **doc):
    (tmp_path / "standby.json").write_text(json.dumps({"role": "standby", "host": "b", "pid": 4242,
                                                       "since": time.time(), "checked": time.time(), **doc}))


@pytest.mark.parametrize("bad, where", [({"checked": "abc"}, 'checked: expected a Unix time, got "abc"'),
                                        ({"leader": "x"}, 'leader: expected an object, got "x"'),
                                        ({"since": [1]}, "since: expected a Unix time, got [1]")])
def test_a_damaged_standby_note_is_refused_naming_its_key(tmp_path, capsys, bad, where):
    make_status(tmp_path)
    _standby(tmp_path, **bad)
    _refused(capsys, ["jobs", "--state-dir", str(tmp_path)], f"{tmp_path / 'standby.json'}: {where}")
    (tmp_path / "status.json").unlink()  # the standby's host: no status of its own
    _refused(capsys, ["jobs", "--state-dir", str(tmp_path)], f"{tmp_path / 'standby.json'}: {where}")


def test_a_short_job_id_of_two_jobs_is_ambiguous(tmp_path, capsys):
    def rename(d):
        d["jobs"][3][0], d["jobs"][4][0] = "1.sim", "1.other"
    _damage(tmp_path, rename)
    for cmd in ("why", "when"):
        err = _refused(capsys, [cmd, "--state-dir", str(tmp_path), "1"], "job 1: ambiguous: 1.sim, 1.other")
        assert "not in the status" not in err
    assert run_json(capsys, "why", "--state-dir", str(tmp_path), "1.other")["job"]["id"] == "1.other"


def test_nodes_state_filter_offers_the_states_nodes_shows(tmp_path, capsys):
    make_status(tmp_path)
    with pytest.raises(SystemExit) as exc:
        main(["nodes", "--state-dir", str(tmp_path), "--state", "weird"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'weird'" in err and all(s in err for s in ("free", "partial", "full", "down", "offline"))
    assert [n["name"] for n in run_json(capsys, "nodes", "--state-dir", str(tmp_path), "--state", "down")["nodes"]] \
        == ["wn04"]
