"""The JSON of every command that has --json, against the schema docs/json.md documents.

A simulated farm (`mysched run --server sim://... --once`, as a user tries mysched) with
pools, load rules, downtimes and user limits publishes its status; each command's --json is
then checked field by field against the tables of docs/json.md -- read here, so the page and
the code cannot drift apart: no "" anywhere (absent is null), every field documented, of its
documented type, null only where the page allows it, and a field of one name of one type in
every command."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from mysched.cli.main import main
from mysched.cli.statusdoc import classify
from mysched.daemon.metrics import NullMetrics
from mysched.daemon.role import Role
from mysched.history.leader import FileLeadership

DOC = Path(__file__).resolve().parents[2] / "docs" / "json.md"
SCALARS = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)}


# -- the page ---------------------------------------------------------------------------------

def _valid_type(t: str) -> bool:
    return t in SCALARS or t == "object" or any(t.startswith(p) and _valid_type(t[len(p):])
                                               for p in ("list of ", "map of "))


def schema() -> dict[str, dict[str, tuple[str, bool, bool]]]:
    """Per command (the page's `## ` headings), each field's path -> (type, nullable, optional:
    present only with some option, "only with" in its meaning)."""
    out: dict[str, dict[str, tuple[str, bool, bool]]] = {}
    section = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            out[section] = {}
        elif section and line.startswith("| `"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            assert len(cells) == 4, line
            path, typ, null, meaning = cells[0].strip("`"), cells[1], cells[2], cells[3]
            assert _valid_type(typ) and null in ("yes", "no"), line
            assert path not in out[section], f"{section}: {path} listed twice"
            out[section][path] = (typ, null == "yes", "only with" in meaning)
    return out


SCHEMA = schema()


def check(doc: Any, fields: dict[str, tuple[str, bool, bool]], section: str) -> set[str]:
    """Check `doc` against the page's fields of `section`; return the paths seen."""
    seen: set[str] = set()

    def value(v: Any, typ: str, path: str) -> None:
        if v is None:
            return
        if typ in SCALARS:
            assert type(v) in SCALARS[typ], f"{section}: {path} = {v!r} is not {typ}"
            assert v != "", f'{section}: {path} is "" (absent is null)'
        elif typ.startswith("list of "):
            assert type(v) is list, f"{section}: {path} is not a list"
            for x in v:
                item(x, typ[8:], path + "[]")
        elif typ.startswith("map of "):
            assert type(v) is dict, f"{section}: {path} is not a map"
            for k, x in v.items():
                assert k != "", f'{section}: {path} has a key ""'
                item(x, typ[7:], path + ".*")
        else:
            assert type(v) is dict, f"{section}: {path} is not an object"
            prefix = f"{path}." if path else ""
            for k, x in v.items():
                field(x, prefix + k)
            for p, (_, _, optional) in fields.items():  # an object has every field listed for it
                rest = p[len(prefix):] if p.startswith(prefix) else None
                if rest and not re.search(r"[.\[*]", rest) and not optional:
                    assert rest in v, f"{section}: {p} missing"

    def item(v: Any, typ: str, path: str) -> None:
        assert v is not None, f"{section}: {path}: null in a list or map"
        value(v, typ, path)

    def field(v: Any, path: str) -> None:
        assert path in fields, f"{section}: field {path} is not in docs/json.md"
        typ, nullable, _ = fields[path]
        assert v is not None or nullable, f"{section}: {path} is null, docs/json.md says never"
        seen.add(path)
        value(v, typ, path)

    value(doc, "object", "")
    return seen


def test_the_page_names_one_type_for_a_name_that_holds_a_value():
    """A name's type is the same in every command where it holds a value (scalars and lists of
    them; objects are described field by field)."""
    types: dict[str, set[str]] = {}
    for section, fields in SCHEMA.items():
        for path, (typ, _, _) in fields.items():
            if typ in SCALARS or typ.startswith("list of ") and typ[8:] in SCALARS:
                name = re.split(r"[.\[\]*]+", path.rstrip("[]"))[-1]
                types.setdefault(name, set()).add(typ)
    mixed = {k: v for k, v in types.items() if len(v) > 1}
    assert not mixed, f"one name, several types in docs/json.md: {mixed}"
    assert types["nodes"] == {"list of string"}
    assert {"jobs", "why", "when", "nodes", "shares", "free", "pools", "loads", "usage",
            "history suspects"} <= set(SCHEMA)


# -- the farm ---------------------------------------------------------------------------------

def _iso(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M", time.gmtime(t))


def _config(d: Path) -> str:
    now = time.time()
    base = (Path(__file__).resolve().parents[2] / "mysched" / "data" / "mysched.cfg").read_text()
    (d / "probe.txt").write_text("50\n")
    return base + f'''
pools = {{ mcore = {{ hosts = ["wn000*"]; package = {{ slots = 8; }}; vos = {{ atlas = 1; }};
                     loan = {{ queues = ["all"]; max_walltime = "12:00:00"; }}; }}; }};
downtimes = {{ soon = {{ start = "{_iso(now + 7200)}"; end = "{_iso(now + 14400)}"; hosts = ["wn004*"]; }};
              now = {{ start = "{_iso(now - 3600)}"; end = "{_iso(now + 3600)}"; hosts = ["wn0050"]; }}; }};
load_sources = {{ probe = {{ type = "file"; path = "{d}/probe.txt"; }};
                 gone = {{ type = "file"; path = "{d}/none.txt"; }}; }};
load_rules = {{ cms_se = {{ source = "probe"; vos = ["cms"]; low = 10; high = 100; }};
               lhcb_se = {{ source = "gone"; vos = ["lhcb"]; low = 10; high = 100; }}; }};
users = {{ ops001 = {{ max_running = 1; }}; }};
'''


ACCOUNTING = ("11/22/2026 10:00:00;S;1.old;user=alice group=atlas queue=atlas start=1795300000 exec_host=wn0001/0\n"
              "11/22/2026 11:00:00;E;1.old;user=alice group=atlas queue=atlas start=1795300000 end=1795303600 "
              "exec_host=wn0001/0 Exit_status=0 resources_used.cput=00:50:00 resources_used.walltime=01:00:00\n"
              "11/22/2026 12:00:00;E;2.old;user=bob group=cms queue=cms start=1795300000 end=1795307200 "
              "exec_host=wn0002/0 Exit_status=0 resources_used.cput=00:50:00 resources_used.walltime=02:00:00\n")


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> dict[str, list[Any]]:
    """Each command's --json documents, by the page's section names."""
    d = tmp_path_factory.mktemp("farm")
    cfg = str(d / "site.cfg")
    Path(cfg).write_text(_config(d))
    state, db = str(d / "state"), f"sqlite:///{d}/history.db"
    (d / "20261122").write_text(ACCOUNTING)

    def run(*argv: str) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main(list(argv)) == 0, argv
        return out.getvalue()

    run("run", "-c", cfg, "--server", "sim://?nodes=50&slots=8", "--once", "--db", db, "--metrics-address", "off",
        "--state-dir", state)
    run("history", "import", "--db", db, str(d / "20261122"))
    # a standby beside the leader: the note the daemon's Role writes, under another pid
    lock = FileLeadership(os.path.join(state, "leader.lock"), 4.0)
    assert lock.acquire()
    try:
        Role(FileLeadership(os.path.join(state, "leader.lock"), 4.0), NullMetrics(), state).leading()
    finally:
        lock.release()
    note = os.path.join(state, "standby.json")
    sb = json.loads(Path(note).read_text())
    Path(note).write_text(json.dumps({**sb, "pid": sb["pid"] + 1}))
    status = json.loads(Path(state, "status.json").read_text())
    rows = [dict(zip(status["job_columns"], r)) for r in status["jobs"]]
    by_class: dict[str, str] = {}
    for r in rows:
        by_class.setdefault(classify(r), r["id"])
    assert set(by_class) == {"running", "queued", "blocked"}, by_class
    named = [n[0] for n in status["nodes"]][:2] + ["wn0050"]  # nodes NODE...: with the jobs on them
    common = ("--state-dir", state, "--max-age", "1e9", "--json")
    out: dict[str, list[Any]] = {}
    for argv in (["jobs"], ["jobs", "--state", "blocked"], ["nodes"], ["nodes", *named],
                 ["shares", "--groups", "--users"], ["free"], ["pools"], ["loads"], *(["why", j] for j in by_class.values()),
                 *(["when", j] for j in by_class.values())):
        out.setdefault(argv[0], []).append(json.loads(run(*argv, *common)))
    # a farm with idle slots (an hour of backlog), for the rows of `free`
    idle = str(d / "idle")
    run("run", "-c", cfg, "--server", "sim://?nodes=50&slots=8&backlog=1", "--once", "--no-db", "--metrics-address",
        "off", "--state-dir", idle)
    for argv in (["free"], ["jobs"], ["nodes"]):
        out[argv[0]].append(json.loads(run(*argv, "--state-dir", idle, "--max-age", "1e9", "--json")))
    out["usage"] = [json.loads(run("usage", "--db", db, "--json"))]
    out["files"] = [json.loads(Path(state, name).read_text()) for name in ("status.json", "standby.json")]
    out["history suspects"] = [json.loads(run("history", "suspects", "--db", db, "--json"))]
    return out


def _strings(v: Any):
    if isinstance(v, dict):
        for k, x in v.items():
            yield k
            yield from _strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from _strings(x)
    elif isinstance(v, str):
        yield v


CLASSES = {m for f in (Path(__file__).resolve().parents[2] / "mysched").rglob("*.py")
           for m in re.findall(r"^\s*class (\w+)", f.read_text(), re.M)}


def test_no_empty_string_nor_class_name_in_any_json_or_status_file(docs, tmp_path):
    """Not in the commands' JSON, not in the files the daemon publishes (status.json,
    standby.json), not in `simulate --json`: absent is null, and values are interface words."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["simulate", "--nodes", "10", "--duration", "4", "--json", "-"]) == 0
    every = {**docs, "simulate": [json.loads(out.getvalue())]}
    assert len(CLASSES) > 50 and "FileLeadership" in CLASSES
    for section, outs in every.items():
        for doc in outs:
            words = set(_strings(doc))
            assert "" not in words, f'{section}: ""'
            assert not words & CLASSES, f"{section}: class names {sorted(words & CLASSES)}"
            assert not any("<class " in w or " object at 0x" in w for w in words), section


def test_every_field_is_documented_typed_and_never_empty(docs):
    seen: dict[str, set[str]] = {}
    for section, outs in docs.items():
        if section == "files":  # the daemon's own files: their layout is internal
            continue
        for doc in outs:
            seen.setdefault(section, set()).update(check(doc, SCHEMA[section], section))
    # the other way round: what the page lists, the commands print (on this farm, but for a few)
    rare = {"jobs": {"standby.leader.client"},
            "why": {"run_limit", "nodes_out[]", "nodes_out[].name", "nodes_out[].state", "nodes_out[].note"},
            "nodes": {"drains.*.since", "drains.*.ready", "drains.*.want", "reservations.*.start", "reservations.*.nodes",
                      *(p for p in SCHEMA["nodes"] if p.startswith("downtime_clashes["))}}
    # (a first cycle starts no job that runs into a window: test_status_downtime_clash has them)
    for section, fields in SCHEMA.items():
        unseen = {p for p in fields if p not in seen.get(section, set())} - rare.get(section, set())
        assert not unseen, f"{section}: docs/json.md lists fields no command printed: {sorted(unseen)}"


def test_the_user_s_findings_are_gone(docs):
    """What a user measured on a simulated farm: running jobs' reason "", nodes a string in
    jobs and a list in when, "" for a node's type, class and note, "" in why, and the class
    name FileLeadership in the status."""
    jobs = docs["jobs"][0]
    assert jobs["daemon"]["lock"] == "file" and "Leadership" not in json.dumps(docs)
    running = [j for j in jobs["jobs"] if j["class"] == "running"]
    assert running and all(type(j["nodes"]) is list for j in running)
    when = {w["class"]: w for w in docs["when"]}
    assert type(when["running"]["nodes"]) is list
    assert any(n["type"] is None and n["class"] is None and n["note"] is None for n in docs["nodes"][0]["nodes"])
    assert docs["jobs"][0]["standby"]["role"] == "standby"
