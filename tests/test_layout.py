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
    for path in (PKG / "core").rglob("*.py"):
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


CORE_LAYERS = ("model", "settings", "rules", "share", "place", "cycle", "hold", "estimate", "planner")
"""The core's parts, each using only those before it: data, the site's settings, rules, the
share order, placement, the plan's context, what holds room back, and the two entry points."""


def _core_part(mod: str) -> str:
    return mod.split(".")[2]


def test_core_parts_use_only_the_parts_below_them():
    for path in (PKG / "core").rglob("*.py"):
        rel = path.relative_to(PKG / "core")
        if rel.name == "__init__.py" and len(rel.parts) == 1:
            continue
        part = rel.parts[0].removesuffix(".py")
        assert part in CORE_LAYERS, f"core/{rel} is in no part of the core {CORE_LAYERS}"
        mine = CORE_LAYERS.index(part)
        for mod in imports(path):
            if mod.startswith("mysched.core.") :
                other = _core_part(mod)
                assert CORE_LAYERS.index(other) <= mine, f"core/{rel} ({part}) imports {mod} ({other}), a part above it"


def _graph() -> dict[str, set[str]]:
    names = {".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p for p in modules()}
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        deps = set()
        for mod in imports(path):  # TYPE_CHECKING imports too: a loop is a loop
            while mod and mod not in names:
                mod = mod.rpartition(".")[0]
            if mod and mod != name and not name.startswith(mod + ".") and mod != "mysched":
                deps.add(mod)
        graph[name] = deps
    return graph


def test_no_module_imports_itself_round_a_circle():
    graph = _graph()
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph[n]):
            if state.get(m) == 1:
                raise AssertionError("import circle: " + " -> ".join(stack[stack.index(m):] + [m]))
            if m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)


def test_the_core_is_composed_not_mixed_in():
    """A component owns its state: no class of the core inherits from more than three bases
    (the planner was one class of nine mixins)."""
    for path in (PKG / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                assert len(node.bases) <= 3, f"{path.name}: class {node.name} has {len(node.bases)} bases"


def test_the_core_leaves_the_garbage_collector_alone():
    """Pausing the cyclic collector is the callers' choice (daemon, simulator, bench), not the core's."""
    for path in (PKG / "core").rglob("*.py"):
        assert "gc" not in {m.split(".")[0] for m in imports(path)}, f"{path} imports gc"


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
    `mysched bench` must not pay for SQLAlchemy, matplotlib, Prometheus, APScheduler or Dask."""
    import subprocess

    code = ("import sys, importlib; importlib.import_module('mysched.cli.main').build_parser(); "
            "print(sorted({m.split('.')[0] for m in sys.modules} & "
            "{'sqlalchemy', 'matplotlib', 'prometheus_client', 'apscheduler', 'psycopg2', "
            "'dask', 'distributed', 'dask_jobqueue'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


import io  # noqa: E402 - kept with the test below that reads docstrings and comments
import re  # noqa: E402
import tokenize  # noqa: E402

RUN_LOG = (r"\b\d+ x \d+\b", r"\bseeds? [1-9]", r"\b\d+(\.\d+)? points\b", r"\d ?% to \d",
           r"\b(SDSC|CTC|KTH|LPC|HPC2N|LANL|LLNL|OSC|CEA)-\w")
"""What gives a simulation run away: a farm size (50 x 8), a seed, occupancy points, a
before/after percentage, a named trace."""


def run_logs(source: str) -> list[str]:
    """The docstrings and comments of `source` that carry a simulation run's set-up or figures."""
    texts = [n.value.value for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Expr)
             and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]
    texts += [t.string for t in tokenize.generate_tokens(io.StringIO(source).readline) if t.type == tokenize.COMMENT]
    return [t for t in texts if any(re.search(p, t) for p in RUN_LOG)]


def test_the_core_keeps_its_experiment_logs_in_docs_design():
    """A docstring says the rule and why; the runs that chose it (farm, seeds, figures) live in
    docs/design/, which it names. Before issue #30 drains.py, reservations.py, score.py and
    pools.py carried them inline, where no one could rerun or update them."""
    assert run_logs('"""Cut the wait 0.6 h (50 x 8, seeds 1-4)."""\n# on SDSC-SP2: 84 % to 92 %\n')
    for path in (PKG / "core").rglob("*.py"):
        logs = run_logs(path.read_text())
        assert not logs, f"{path.relative_to(REPO)}: move to docs/design/: {logs[0][:200]!r}"
    for note in sorted({m for p in PKG.rglob("*.py") for m in re.findall(r"docs/design/[\w.-]+\.md", p.read_text())}):
        assert (REPO / note).is_file(), f"{note} is named in a docstring but does not exist"
