"""The package layout keeps its promises: a pure core, small modules, one home per rule."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

from .conftest import REPO

PKG = REPO / "mysched"
LAYERS = ("core", "config", "backends", "history", "daemon", "sim", "cli")


def modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            out.add(node.module)
    return out


def test_every_module_sits_in_a_layer():
    loose = {p.name for p in PKG.glob("*.py")} - {"__init__.py", "errors.py", "files.py", "gcpause.py"}
    assert not loose, f"modules outside the layers {LAYERS}: {sorted(loose)}"
    assert {p.name for p in PKG.iterdir() if p.is_dir() and p.name != "__pycache__"} == set(LAYERS) | {"data"}


def test_core_uses_the_standard_library_and_itself_only():
    for path in (PKG / "core").glob("*.py"):
        for mod in imports(path):
            top = mod.split(".")[0]
            if top == "mysched":
                assert mod.startswith("mysched.core") or mod == "mysched.errors", f"{path.name} imports {mod}"
            else:
                assert top in sys.stdlib_module_names or top == "__future__", f"{path.name} imports {mod}"


def test_layers_below_the_edges_do_not_reach_up():
    """Adapters may use the core; the core and config never use adapters, daemon or CLI."""
    upper = {"core": LAYERS[1:], "config": ("backends", "history", "daemon", "sim", "cli"),
             "backends": ("history", "daemon", "cli"), "history": ("daemon", "sim", "cli")}
    for layer, forbidden in upper.items():
        for path in (PKG / layer).rglob("*.py"):
            for mod in imports(path):
                assert not any(mod.startswith(f"mysched.{f}") for f in forbidden), f"{path} imports {mod}"


def test_modules_stay_small():
    big = {str(p.relative_to(REPO)): n for p in modules() if (n := len(p.read_text().splitlines())) > 450}
    assert not big, f"modules over 450 lines: {big}"


def test_each_rule_is_defined_once():
    names: dict[str, list[str]] = {}
    for path in modules():
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.setdefault(node.name, []).append(str(path.relative_to(PKG)))
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    if isinstance(t, ast.Name):
                        names.setdefault(t.id, []).append(str(path.relative_to(PKG)))
    for rule in ("parse_duration", "Placement", "REASONS", "BLOCKING", "node_type", "node_key", "admits",
                 "queue_admits", "type_admits", "estimate_start"):
        assert len(names.get(rule, [])) == 1, f"{rule} defined in {names.get(rule)}"


def test_the_command_line_loads_heavy_libraries_only_for_the_commands_that_use_them():
    """Every command module is imported to build the parser: `mysched jobs` on a login node or
    `mysched bench` must not pay for SQLAlchemy, matplotlib, Prometheus or APScheduler."""
    import subprocess

    code = ("import sys, importlib; importlib.import_module('mysched.cli.main').build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'sqlalchemy', 'matplotlib', 'prometheus_client', 'apscheduler', 'psycopg2'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
