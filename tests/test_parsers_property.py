"""Property tests for everything that reads outside input: a config file, an SWF line, an
accounting record and a duration either give a located error or a valid value -- never an
internal error, and nothing disappears without being counted."""

from __future__ import annotations

import math
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.config import config_from_text
from mysched.core.model.durations import parse_duration
from mysched.errors import ConfigError
from mysched.history.accounting import LineProblem, NotRun, Spliced, parse_line, to_finished_job
from mysched.history.logread import iter_file
from mysched.sim.workloads.swf import read_swf

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

_name = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_scalar = st.one_of(st.integers(-10**12, 10**12), st.floats(allow_nan=True, allow_infinity=False, width=32),
                    st.booleans(), st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters='"\\\n'),
                                           max_size=12).map(lambda t: f'"{t}"'))
_value = st.recursive(_scalar.map(str), lambda inner: st.one_of(
    st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
    st.dictionaries(_name, inner, max_size=3).map(lambda d: "{ " + " ".join(f"{k} = {v};" for k, v in d.items()) + " }")),
    max_leaves=8)
_known = st.sampled_from(["scheduler", "history", "fairshare", "server", "daemon", "default_vo", "vos", "groups",
                          "queues", "hot", "node_types", "packing", "farm"])


@SETTINGS
@given(st.dictionaries(st.one_of(_known, _name), _value, max_size=5))
def test_any_config_is_valid_or_every_problem_is_located(settings_):
    text = "\n".join(f"{k} = {v};" for k, v in settings_.items())
    try:
        config_from_text(text, "site.cfg")
    except ConfigError as exc:
        assert exc.problems and all(p.startswith("site.cfg") for p in exc.problems), exc.problems


@SETTINGS
@given(st.one_of(st.text(max_size=12), st.integers(-10, 10**9), st.floats(allow_nan=True)))
def test_a_duration_is_a_non_negative_number_or_a_value_error(value):
    try:
        d = parse_duration(value)
    except ValueError as exc:
        assert str(exc)
    else:
        assert d >= 0 and not math.isnan(d)


_field = st.one_of(st.integers(-3, 10**6).map(str), st.sampled_from(["-1", "nan", "inf", "1e30", "x", "3.5", "-7.2"]))


@SETTINGS
@given(st.lists(st.lists(_field, min_size=16, max_size=20), min_size=1, max_size=25))
def test_every_swf_line_is_replayed_or_accounted_for(tmp_path_factory, rows):
    path = tmp_path_factory.mktemp("swf") / "t.swf"
    path.write_text("".join(" ".join(r) + "\n" for r in rows))
    try:
        tr = read_swf(path)
    except Exception as exc:  # only the located "not a trace" error is allowed
        assert type(exc).__name__ == "InputError" and str(path) in str(exc)
        return
    # every line is a job, or counted under a reason (malformed, cancelled, no_submit, ...)
    assert len(tr.jobs) + sum(tr.skipped.values()) == len(rows)
    assert len({tj.job.id for tj in tr.jobs}) == len(tr.jobs)  # ids stay unique
    assert all(tj.job.cores >= 1 and tj.runtime >= 0 and math.isfinite(tj.job.submit_time) for tj in tr.jobs)
    assert tr.reported >= sum(v for k, v in tr.skipped.items() if k != "cancelled")


_attr = st.tuples(st.sampled_from(["user", "group", "queue", "owner", "start", "end", "exec_host",
                                   "resources_used.cput", "Exit_status", "total_execution_slots",
                                   "Resource_List.nodes", "exec_vnode", "resources_used.ncpus", "Resource_List.ncpus",
                                   "Resource_List.select", "resources_used.walltime"]),
                  st.one_of(st.integers(-10, 10**11).map(str), st.text("abc:/-+0123456789=@()*[]\"' ", max_size=10)))


@SETTINGS
@given(st.lists(_attr, max_size=8), st.sampled_from("ER"), st.sampled_from(["7.srv", "7[].srv", "7[3].srv"]))
def test_an_accounting_record_is_a_sane_job_or_a_located_problem(attrs, rtype, job_id):
    line = f"11/22/2026 10:00:00;{rtype};{job_id};" + " ".join(f"{k}={v}" for k, v in attrs)
    dropped: list[str] = []
    try:
        fj = to_finished_job(parse_line(line), dropped)
    except NotRun:
        return
    except ValueError as exc:
        assert str(exc)
        return
    assert fj.user and fj.group and fj.cores >= 1
    assert 0 < fj.start <= fj.end and fj.end - fj.start <= 366 * 86400
    assert fj.cput is None or fj.cput >= 0
    # a refining field given but not kept is said (the ingestion reports the line)
    given = dict(attrs)
    if given.get("resources_used.cput") and fj.cput is None:
        assert any(d.startswith("resources_used.cput=") for d in dropped)
    if given.get("Exit_status") and fj.exit_status is None:
        assert any(d.startswith("Exit_status=") for d in dropped)


# -- accounting lines as crashes and old tools leave them ------------------------------------

_word = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FFF, blacklist_categories=("Cs", "Zs", "Zl", "Zp"),
                              blacklist_characters=";=\x85"), min_size=1, max_size=12)
_e_record = st.fixed_dictionaries({
    "id": st.from_regex(r"[0-9]{1,8}(\[[0-9]{1,4}\])?\.[a-z]{1,8}", fullmatch=True), "user": _word, "group": _word,
    "queue": _word, "start": st.integers(1_000_000_000, 1_900_000_000), "run": st.integers(0, 365 * 86400),
    "cores": st.integers(1, 4096), "name": _word})


def _e_line(r: dict) -> str:
    end = r["start"] + r["run"]
    stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(end))
    return (f"{stamp};E;{r['id']};user={r['user']} group={r['group']} jobname={r['name']} queue={r['queue']} "
            f"start={r['start']} exec_host=wn01/0 total_execution_slots={r['cores']} end={end} Exit_status=0 "
            f"resources_used.walltime=00:00:01")


@SETTINGS
@given(_e_record)
def test_an_e_record_gives_back_what_it_says(r):
    fj = to_finished_job(parse_line(_e_line(r) + "\n"))
    assert (fj.id, fj.user, fj.group, fj.queue, fj.cores) == (r["id"], r["user"], r["group"], r["queue"], r["cores"])
    assert (fj.start, fj.end) == (r["start"], r["start"] + r["run"])


_vnode = st.from_regex(r"[a-z][a-z0-9\-]{0,6}(\[[0-9]{1,2}\])?", fullmatch=True)
_chunk = st.lists(st.tuples(_vnode, st.integers(0, 64)), min_size=1, max_size=3)


@SETTINGS
@given(_e_record, st.lists(_chunk, min_size=1, max_size=4), st.sampled_from("ER"), st.booleans(), st.booleans(),
       st.lists(_word, max_size=3))
def test_an_openpbs_record_gives_back_its_cores_and_vnodes(r, chunks, rtype, host, vnode, project):
    """OpenPBS's E (or R) record: cores from exec_host's host/N*ncpus, else exec_vnode, else
    Resource_List.ncpus; nodes are the vnodes; a quoted project with blanks changes nothing."""
    end = r["start"] + r["run"]
    stamp = time.strftime("%m/%d/%Y %H:%M:%S", time.localtime(end))
    ncpus = [sum(n for _, n in c) for c in chunks]
    exec_vnode = "+".join("(" + "+".join(f"{v}:ncpus={n}:mem=1gb" for v, n in c) + ")" for c in chunks)
    exec_host = "+".join(f"h{k}/0*{n}" if n != 1 else f"h{k}/0" for k, n in enumerate(ncpus))
    proj = " ".join(project)
    line = (f"{stamp};{rtype};{r['id']};user={r['user']} group={r['group']} project=" +
            (f'"{proj}"' if " " in proj else proj or "_pbs_project_default") + f" jobname={r['name']} "
            f"queue={r['queue']} ctime=1 qtime=1 etime=1 start={r['start']} " + (f"exec_host={exec_host} " if host else "")
            + (f"exec_vnode={exec_vnode} " if vnode else "") + f"Resource_List.ncpus={sum(ncpus)} Resource_List.select="
            + "+".join(f"1:ncpus={n}" for n in ncpus) + f" session=1 end={end} Exit_status=0 "
            "resources_used.walltime=00:00:01 run_count=1")
    fj = to_finished_job(parse_line(line))
    assert (fj.id, fj.user, fj.group, fj.queue) == (r["id"], r["user"], r["group"], r["queue"])
    assert (fj.start, fj.end, fj.cores) == (r["start"], end, max(1, sum(ncpus)))
    assert fj.nodes == (tuple(dict.fromkeys(v for c in chunks for v, _ in c)) if vnode else
                        tuple(f"h{k}" for k in range(len(chunks))) if host else ())


@SETTINGS
@given(_e_record, _e_record, st.integers(1, 10**4), st.integers(0, 8))
def test_a_record_cut_anywhere_never_charges_the_next_one_wrongly(cut, whole, at, nuls):
    """pbs_server killed mid-line, restarted, appending: the cut record is said and skipped,
    the whole one after it read as it is -- whatever the cut, even inside its time stamp."""
    first = _e_line(cut)
    line = first[:at % len(first)] + "\x00" * nuls + _e_line(whole)
    if at % len(first) == 0 and not nuls:
        return  # nothing was cut: a sound line
    with pytest.raises(Spliced) as exc:
        parse_line(line)
    assert to_finished_job(exc.value.record) == to_finished_job(parse_line(_e_line(whole)))


@SETTINGS
@given(st.lists(st.binary(max_size=200), min_size=1, max_size=20))
def test_any_bytes_give_one_item_a_line_and_nothing_else(tmp_path_factory, chunks):
    path = tmp_path_factory.mktemp("acct") / "20261122"
    data = b"\n".join(chunks) + b"\n"
    path.write_bytes(data)
    items = list(iter_file(str(path)))
    assert len(items) == data.count(b"\n") and items[-1][1] == len(data)
    for item, _ in items:
        if isinstance(item, LineProblem):
            assert item.message and "mysched bug" not in item.message
            item = item.record
        if item is not None:
            try:
                to_finished_job(item)
            except ValueError:
                pass
