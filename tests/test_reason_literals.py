"""A reason is spelled once, as a `Reason` member (`mysched/core/model/reasons.py`): a bare
"no_free_slot" elsewhere is a second spelling a typo can split from the first without any
test noticing. Field names that happen to be spelled like a reason -- a status file's
"node_load" or "share", a config section `hot` -- are not reasons and stay strings."""

from __future__ import annotations

import ast
from pathlib import Path

from mysched.core.model.reasons import Reason

from .conftest import REPO

SPELLINGS = frozenset(r.value for r in Reason)

PENDING_REWRITE: frozenset[str] = frozenset()

NOT_REASONS = {
    "mysched/config/validate.py": {"hot", "fairshare", "packing", "share", "node_load"},  # config sections and keys
    "mysched/config/loads.py": {"node_load"},  # the node_load section
    "mysched/config/schema.py": {"hot", "fairshare", "packing", "node_load"},  # config sections
    "mysched/sim/poolstats.py": {"held"},  # a pool gate's kind (core.hold.pools.HELD), not a job's wait
    "mysched/core/hold/pools.py": {"held"},  # the same kind, defined
    "mysched/core/place/nodeusage.py": {"reserved"},  # an attribute's name
    # policy names (mysched, fifo, least-loaded, easy), not the start reasons spelled alike
    "mysched/core/planner.py": {"fifo", "easy"},
    "mysched/core/place/score.py": {"fifo", "easy"},
    "mysched/core/hold/drains.py": {"fifo"},
    "mysched/core/hold/reservations.py": {"fifo"},
    "mysched/sim/mcorewhy.py": {"fifo"},  # the baseline drains no node (core.hold.drains)
}
"""Strings spelled like a reason that name something else, by file."""


def bare_reasons(source: str, allowed: frozenset[str] | set[str] = frozenset()) -> list[tuple[int, str]]:
    """(line, spelling) of each string constant spelled like a reason, except docstrings and
    other bare string statements, subscripts (`doc["share"]`), `.get("node_load")`, headings
    formatted into an f-string (`f"{'share':>6}"`), and the
    keys of a dict display that has a key no reason is spelled like (a record's fields, not a
    table keyed by reason)."""
    tree = ast.parse(source)
    field_names: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            field_names.add(id(node.value))
        elif isinstance(node, ast.Subscript):
            field_names.add(id(node.slice))
        elif isinstance(node, ast.FormattedValue):  # f"{'share':>6}": a column heading
            field_names.add(id(node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args:
            field_names.add(id(node.args[0]))
        elif isinstance(node, ast.Dict):
            keys = [k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)]
            if any(k not in SPELLINGS for k in keys):
                field_names.update(id(k) for k in node.keys if k is not None)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in SPELLINGS
                  and n.value not in allowed and id(n) not in field_names)


def checked() -> list[tuple[str, Path]]:
    out = []
    for p in sorted((REPO / "mysched").rglob("*.py")):
        rel = p.relative_to(REPO).as_posix()
        if rel != "mysched/core/model/reasons.py" and rel not in PENDING_REWRITE:
            out.append((rel, p))
    return out


def test_no_reason_is_spelled_as_a_bare_string_outside_reasons_py():
    found = {rel: hits for rel, p in checked() if (hits := bare_reasons(p.read_text(), NOT_REASONS.get(rel, set())))}
    assert not found, f"use Reason.X from mysched.core.model.reasons instead of: {found}"


def test_the_exemptions_name_files_that_exist():
    for rel in PENDING_REWRITE | set(NOT_REASONS):
        assert (REPO / rel).is_file(), f"{rel} is gone: drop it from the list"


def test_the_check_tells_a_reason_from_a_field_name():
    src = '''
"""no_free_slot in a docstring is prose."""
LIMITS = {"vo_limit": 1, "group_limit": 2}
ROW = {"share": 0.5, "guarantee": 3}

def f(doc, w):
    """held"""
    if w.reason == "external_load":
        return doc["node_load"], doc.get("share"), ROW, f"{'share':>6}"
    return "no_free_slot"
'''
    assert bare_reasons(src) == [(3, "group_limit"), (3, "vo_limit"), (8, "external_load"), (10, "no_free_slot")]
    assert bare_reasons(src, {"vo_limit", "group_limit", "external_load", "no_free_slot"}) == []
