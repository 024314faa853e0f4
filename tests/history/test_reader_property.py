"""Property tests of the accounting reader (issue 34, item 5): random bytes, lines longer than
`MAX_LINE`, NULs, and account strings carrying newlines and forged records, in any order,
plain or gzip-compressed -- the reader never fails with an internal error, says every line
it cannot use with its FILE:LINE, and never charges a record nobody ran."""

from __future__ import annotations

import gzip

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mysched.history import logread
from mysched.history.ingest import ingest_accounting
from mysched.history.store import Store

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
SMALL_LINE = 4096
"""`MAX_LINE` while these run, so that an over-long line costs kilobytes, not megabytes."""


def _pair(k: int) -> bytes:
    return (f"11/22/2026 10:00:{k % 60:02d};S;{k}.s;user=u{k % 3} group=g queue=q start={1795300000 + k} "
            f"owner=u@ui exec_host=wn01/0\n"
            f"11/22/2026 10:10:{k % 60:02d};E;{k}.s;user=u{k % 3} group=g jobname=j queue=q start={1795300000 + k} "
            f"owner=u@ui exec_host=wn01/0 end={1795300600 + k} Exit_status=0\n").encode()


def _forged(k: int, tail: bool) -> bytes:
    """A job of carol's whose -A holds a newline and an E record of victim's (job f<k>)."""
    forged = (f"11/22/2026 10:05:00;E;f{k}.s;user=victim group=atlas jobname=x queue=q start=1795290000 "
              f"end=1795300000 total_execution_slots=16 Exit_status=0")
    return (f"11/22/2026 10:01:00;S;c{k}.s;user=carol group=lhcb account=x\n{forged}"
            + ("\n" if tail else "") + f" jobname=c queue=q start={1795300000 + k} owner=carol@ui "
            "exec_host=wn01/1\n").encode()


_chunk = st.one_of(
    st.binary(max_size=300),
    st.integers(SMALL_LINE - 2, 3 * SMALL_LINE).map(lambda n: b"\x00" * n),
    st.integers(SMALL_LINE - 2, 3 * SMALL_LINE).map(lambda n: b"a;b=" * (n // 4)),
    st.integers(0, 999).map(_pair),
    st.tuples(st.integers(0, 99), st.booleans()).map(lambda a: _forged(*a)),
    st.sampled_from([b"", b"\n", b"\r\n", b"account=", b"jobname=", b"11/22/2026 10:00:00;", b"\xff\xfe"]),
)


@SETTINGS
@given(st.lists(_chunk, min_size=1, max_size=30), st.booleans(), st.booleans())
def test_any_bytes_give_located_problems_and_never_a_forged_charge(tmp_path_factory, monkeypatch, chunks,
                                                                     compressed, newline_at_end):
    monkeypatch.setattr(logread, "MAX_LINE", SMALL_LINE)
    d = tmp_path_factory.mktemp("acct")
    data = b"\n".join(chunks) + (b"\n" if newline_at_end else b"")
    f = d / "20261122"
    f.write_bytes(gzip.compress(data) if compressed else data)
    store = Store(f"sqlite:///{d}/h.db")
    said: list[str] = []
    rep = ingest_accounting(store, [str(f)], on_problem=said.append, finished_after=0.0, compressed=True)
    assert all(m.startswith(str(f)) for m in said), said
    assert not any("mysched bug" in m for m in said), said
    charged = store.finished_since(0)
    assert not any(j.user == "victim" or j.id.startswith("f") for j in charged)  # the forged never count
    assert rep.records_added == len(charged) and len(charged) <= data.count(b";E;")
    again = ingest_accounting(store, [str(f)], finished_after=0.0, compressed=True)
    assert again.records_added == 0  # read to its end: nothing counted twice
    store.close()
