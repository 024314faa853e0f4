"""Bad input to the history commands (issue 34, items 4 and 5): accounting logs that are no
logs (random bytes, a gzip expanding to GiBs of comment lines or of NULs, a FIFO), forged
records in an account string, and history databases where none can be (a directory under
/proc). Each is refused with an error naming its file (exit status not 0), or accepted with
a located warning that is counted -- never an internal error, never a hang, never silence.
Same `Case` and `run_case` as `test_bad_input`."""

from __future__ import annotations

import gzip
import os
import random
from pathlib import Path

import pytest

from tests.cli.test_bad_input import REFUSED, WARNED, Case, run_case

GOOD = ("11/22/2026 10:00:00;S;1.s;user=u group=g queue=q start=1795300000 owner=u@ui exec_host=wn01/0\n"
        "11/22/2026 10:10:00;E;1.s;user=u group=g jobname=j queue=q start=1795300000 owner=u@ui exec_host=wn01/0 "
        "end=1795300600 Exit_status=0\n")
FORGED = "11/22/2026 10:05:00;E;9.s;user=alice group=atlas jobname=x queue=q start=1795290000 end=1795300000 " \
         "total_execution_slots=16 Exit_status=0"
PBS_E = ("11/22/2026 10:10:00;{t};3.pbs;user=u group=g project=\"p q\" jobname=j queue=q start=1795300000 "
         "exec_host=cn01/0*2+cn02/0*2 exec_vnode=(cn01:ncpus=2)+(cn02:ncpus=2) Resource_List.select=2:ncpus=2 "
         "session=9 end=1795300600 Exit_status=0 resources_used.walltime=00:10:00 run_count=1\n")
"""An OpenPBS end (E) or requeue (R) record, with the S record before it."""
PBS_S = "11/22/2026 10:00:00;S;3.pbs;user=u group=g start=1795300000 exec_host=cn01/0*2+cn02/0*2\n"
CARRIER = ("11/22/2026 10:01:00;S;2.s;user=carol group=lhcb account=x\n" + FORGED + "\n"
           "jobname=c queue=q start=1795300060 owner=carol@ui exec_host=wn01/1\n")


def _noise(n: int, seed: int = 34) -> bytes:
    return random.Random(seed).randbytes(n)


def _gzip_of(chunk: bytes, times: int) -> bytes:
    """A gzip of `chunk` repeated `times` times, made a block at a time (never held whole)."""
    import io

    out = io.BytesIO()
    with gzip.GzipFile(fileobj=out, mode="wb", compresslevel=9) as gz:
        block = chunk * max(1, (1 << 20) // len(chunk))
        for _ in range(max(1, times * len(chunk) // len(block))):
            gz.write(block)
    return out.getvalue()


def _imp(name: str, content: str | bytes, where: str, expect: str = WARNED, *extra: str) -> Case:
    return Case(name, "accounting", expect, lambda d: ["history", "import", "--db", f"sqlite:///{d}/h.db",
                                                        "--progress", "never", *extra, str(d / "20261122")],
                {"20261122": content}, where)


def _fifo(d: Path) -> list[str]:
    os.mkfifo(d / "20261122")
    return ["history", "import", "--db", f"sqlite:///{d}/h.db", str(d / "20261122")]


def _cli(name: str, argv: list[str], where: str) -> Case:
    return Case(name, "cli", REFUSED, lambda d: [a.replace("{d}", str(d)) for a in argv], {}, where)


CASES = [
    _imp("random bytes", _noise(64 << 10), "{d}/20261122", REFUSED),
    _imp("random bytes, no newline", _noise(4096).replace(b"\n", b"."), "{d}/20261122", REFUSED),
    _imp("only blank lines", "\n" * 50, "{d}/20261122", REFUSED),
    _imp("random bytes in a log", GOOD + _noise(2048).replace(b"\n", b".").decode("latin-1") + "\n" + GOOD,
         "20261122:3"),
    _imp("a 3 MiB line in a log", GOOD + "x" * (3 << 20) + "\n" + GOOD, "20261122:3"),
    _imp("a gzip of comment lines", _gzip_of(b"# nothing to see here\n", 1_000_000), "{d}/20261122", REFUSED),
    _imp("a gzip of NULs", _gzip_of(b"\x00" * 4096, 40_000), "20261122:1", REFUSED),
    _imp("a gzip of comment lines after a record", gzip.compress(GOOD.encode() + b"#\n" * 2_000_000),
         "20261122:10003"),
    _imp("a forged record in an account string", CARRIER + GOOD, "20261122:2"),
    _imp("a forged record, trusted", CARRIER + GOOD, "20261122:2", WARNED, "--trust-all"),
    _imp("an E record without its start", GOOD.splitlines(keepends=True)[1], "20261122:1"),
    _imp("an OpenPBS R record without its start", PBS_S + PBS_E.format(t="R").replace(" start=1795300000", ""),
         "20261122:2: R record without a valid start="),
    _imp("an OpenPBS E record cut inside exec_vnode, the next server's record after it",
         PBS_S + PBS_E.format(t="E").split("(cn02")[0] + PBS_E.format(t="E"), "20261122:2: a record cut short"),
    Case("a FIFO as a log", "accounting", REFUSED, _fifo, {}, "{d}/20261122: not a file or directory"),
    _cli("import into /proc", ["history", "import", "--db", "sqlite:////proc/nodir/h.db", "{d}"], "/proc/nodir"),
    _cli("run with its database under /proc", ["run", "--once", "--server", "sim://", "--state-dir", "{d}/st",
                                               "--db", "sqlite:////proc/nodir/h.db"], "/proc/nodir"),
    _cli("usage of /proc", ["usage", "--db", "sqlite:////proc/nodir/h.db"], "/proc/nodir/h.db"),
    _cli("suspects of a missing database", ["history", "suspects", "--db", "sqlite:///{d}/none.db"], "{d}/none.db"),
    _cli("import of a missing path", ["history", "import", "--db", "sqlite:///{d}/h.db", "{d}/20261122"],
         "{d}/20261122: no such accounting file or directory"),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c.kind}: {c.name}" for c in CASES])
def test_bad_history_input_is_refused_or_warned_with_its_location(case, tmp_path):
    outcome, rc, out, err = run_case(case, tmp_path)
    assert outcome == case.expect, (outcome, rc, out[-500:], err[-500:])
    said = err if outcome == REFUSED else "\n".join(ln for ln in err.splitlines() if "warning" in ln)
    assert case.where.replace("{d}", str(tmp_path)) in said, said[-500:]
    assert all(len(line) < 2000 for line in err.splitlines())  # no line quotes a whole junk line
    if case.kind == "accounting" and outcome == WARNED:  # counted in the summary
        assert ("malformed line(s) skipped" in out and " 0 malformed" not in out) or \
            ("suspicious record(s) not charged" in out and " 0 suspicious" not in out)
