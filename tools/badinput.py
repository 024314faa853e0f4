#!/usr/bin/env python3
"""Tally the bad-input battery (the CASES of tests/cli/test_bad_input*.py) by kind and outcome.

    .venv/bin/python tools/badinput.py

Prints one line per case (outcome and the first line of what mysched said) and a table:
refused with a located error, accepted with a located and counted warning, or -- a bug --
an internal error.
"""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cli.test_bad_input import run_case  # noqa: E402


def battery() -> list:
    """Every module's CASES: the first battery and those of each reader added since."""
    import importlib

    cases = []
    for path in sorted((Path(__file__).resolve().parent.parent / "tests" / "cli").glob("test_bad_input*.py")):
        cases.extend(getattr(importlib.import_module(f"tests.cli.{path.stem}"), "CASES", []))
    return cases


def main() -> int:
    tally: Counter[tuple[str, str]] = Counter()
    bad = 0
    for case in battery():
        with tempfile.TemporaryDirectory() as d:
            outcome, rc, out, err = run_case(case, Path(d))
        said = next((ln for ln in err.splitlines() if "error" in ln or "warning" in ln), "").replace(d, "DIR")
        ok = outcome == case.expect and case.where.replace("{d}", d) in err
        bad += not ok
        tally[(case.kind, outcome)] += 1
        print(f"{'ok ' if ok else 'BAD'} {case.kind:10s} {case.name:36s} {outcome:14s} {said[:110]}")
    print()
    kinds = sorted({k for k, _ in tally})
    outcomes = ("refused", "warned", "accepted", "internal error")
    print(f"{'kind':12s}" + "".join(f"{o:>16s}" for o in outcomes))
    for k in kinds:
        print(f"{k:12s}" + "".join(f"{tally[(k, o)]:16d}" for o in outcomes))
    print(f"{'all':12s}" + "".join(f"{sum(tally[(k, o)] for k in kinds):16d}" for o in outcomes))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
