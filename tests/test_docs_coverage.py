"""Everything a user can name is documented: every subcommand of the real parser, every setting
of the validator's schema and every metric of a real registry appears in README.md or docs/.
A command, key or series added without a word in the docs fails here."""

from __future__ import annotations

import argparse
import re

from prometheus_client import CollectorRegistry

from mysched.cli.main import build_parser
from mysched.config import schema
from mysched.daemon.metrics import Metrics, sample_cycle

from .conftest import REPO


def docs_text() -> str:
    return "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))])


def subcommands(parser: argparse.ArgumentParser, prefix: str = "mysched") -> list[str]:
    """`mysched NAME` and `mysched NAME ACTION` for every parser under the top one."""
    out = []
    for action in parser._actions:  # argparse keeps its subparsers here and nowhere public
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out.append(f"{prefix} {name}")
                out += subcommands(sub, f"{prefix} {name}")
    return out


def test_every_subcommand_is_documented():
    commands = subcommands(build_parser())
    assert "mysched history prune" in commands and "mysched why" in commands
    text = docs_text()
    missing = [c for c in commands if not re.search(re.escape(c) + r"\b", text)]
    assert not missing, f"not in README.md or docs/: {missing}"


def test_every_setting_is_documented_under_its_section():
    """docs/configuration.md has a heading per section and a row per setting under it."""
    page = (REPO / "docs" / "configuration.md").read_text()
    sections = dict(re.findall(r"(?ms)^## (.+?)\n(.*?)(?=^## |\Z)", page))
    missing = []
    for sec in schema.SECTIONS:
        body = sections.get(sec.path or "Top level", "")
        missing += [f"{sec.path}.{k}" if sec.path else k for k in sec.settings if f"| `{k}` |" not in body]
    assert len(schema.dotted_keys()) > 100
    assert not missing, f"not in docs/configuration.md: {missing}"


def test_every_metric_is_documented():
    m = sample_cycle(Metrics(CollectorRegistry()))
    names = set()
    for family in m.registry.collect():
        names.add(family.name + {"counter": "_total", "info": "_info"}.get(family.type, ""))
    assert "mysched_jobs_started_total" in names and "mysched_pool_packages" in names
    text = docs_text()
    missing = sorted(n for n in names if not re.search(re.escape(n) + r"\b", text))
    assert not missing, f"not in README.md or docs/: {missing}"
