"""The Grafana dashboard against the metrics the daemon registers: every series and label it
names exists, rate() and increase() take counters only, units fit the series, the datasource
is a variable, and (with promtool) every query parses."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest
from prometheus_client import CollectorRegistry

from mysched.daemon.metrics import Metrics, sample_cycle

from ..conftest import REPO

DASHBOARD = REPO / "tools" / "grafana" / "mysched.json"
TARGET = {"instance", "job"}
"""Labels Prometheus adds to every scraped series."""


def dashboard() -> dict:
    return json.loads(DASHBOARD.read_text())


def targets() -> list[tuple[dict, dict]]:
    return [(panel, t) for panel in dashboard()["panels"] for t in panel["targets"]]


def registered() -> dict[str, tuple[str, set[str]]]:
    """Every series name the daemon exports -> (type, label names)."""
    m = sample_cycle(Metrics(CollectorRegistry()))
    out: dict[str, tuple[str, set[str]]] = {}
    for family in m.registry.collect():
        for s in family.samples:
            kind, labels = out.get(s.name, (family.type, set()))
            out[s.name] = (kind, labels | set(s.labels))
    return out


def used(expr: str) -> list[tuple[str, set[str]]]:
    """The series an expression selects, each with the label names its selector names."""
    return [(name, set(re.findall(r"([a-z_]+)\s*[=!]~?", sel or "")))
            for name, sel in re.findall(r"(mysched_[a-z_]+)(?:\{([^}]*)\})?", expr)]


def test_every_series_and_label_the_dashboard_names_is_registered():
    names = registered()
    for panel, t in targets():
        series = used(t["expr"])
        assert series, (panel["title"], t["expr"])
        labels = set(TARGET)
        for name, selected in series:
            assert name in names, (panel["title"], name)
            assert selected <= names[name][1], (panel["title"], name, selected - names[name][1])
            labels |= names[name][1]
        grouped = [set(re.split(r"\s*,\s*", g.strip())) for g in re.findall(r"\bby\s*\(([^)]*)\)", t["expr"])]
        for g in grouped:
            assert g <= labels, (panel["title"], g - labels)
        legend = set(re.findall(r"\{\{\s*([a-z_]+)\s*\}\}", t.get("legendFormat", "")))
        if re.search(r"\b(sum|max|min|avg|count)\s*\(", t["expr"]) and not grouped:
            labels = set()  # aggregated away
        for g in grouped:  # what an aggregation keeps is all a legend can show
            labels &= g
        assert legend <= labels, (panel["title"], legend - labels)


def test_rate_and_increase_take_counters_only():
    names = registered()
    for panel, t in targets():
        for fn, name in re.findall(r"\b(rate|irate|increase)\(\s*(mysched_[a-z_]+)", t["expr"]):
            kind = names[name][0]
            ok = (kind == "counter" and name.endswith("_total")) or (
                kind == "histogram" and name.endswith(("_bucket", "_count", "_sum")))
            assert ok, (panel["title"], fn, name, kind)
        bare = [n for n, _ in used(t["expr"]) if names[n][0] == "counter" and n.endswith("_total")
                and not re.search(rf"(rate|increase)\(\s*{n}", t["expr"])]
        assert not bare, (panel["title"], bare)  # a raw counter only grows since the daemon started


def test_units_fit_the_series():
    for panel, t in targets():
        unit = panel["fieldConfig"]["defaults"]["unit"]
        expr = t["expr"]
        if "histogram_quantile" in expr and "_seconds_bucket" in expr or expr.startswith("time() -"):
            assert unit == "s", panel["title"]
        elif "_ratio" in expr or re.search(r"/ mysched_farm_slots\b", expr):
            assert unit == "percentunit", panel["title"]
        elif re.search(r"rate\(.*\) \* 60", expr):
            assert unit == "opm", panel["title"]


def test_dashboard_imports_with_a_datasource_variable():
    dash = dashboard()
    variables = {v["name"]: v for v in dash["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource" and variables["datasource"]["query"] == "prometheus"
    assert "__inputs" not in dash  # file provisioning substitutes no inputs; the variable works both ways
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    for panel in dash["panels"]:
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
    boxes = [(p["gridPos"]["x"], p["gridPos"]["y"], p["gridPos"]["w"], p["gridPos"]["h"]) for p in dash["panels"]]
    for i, (x, y, w, h) in enumerate(boxes):
        assert x + w <= 24
        for x2, y2, w2, h2 in boxes[i + 1:]:
            assert x + w <= x2 or x2 + w2 <= x or y + h <= y2 or y2 + h2 <= y, "panels overlap"


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed")
def test_every_query_parses(tmp_path):
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:panel{panel['id']}:{t['refId']}", "expr": t["expr"]} for panel, t in targets()]}]}
    path = tmp_path / "rules.yml"
    path.write_text(json.dumps(rules))  # JSON is YAML
    res = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
