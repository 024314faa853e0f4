"""The docs against the code and against themselves: the generated pages are what the code
says, every relative link and anchor resolves, the README stays a front page with exactly the
two set-up commands CI runs, and the getting-started demo still shows what its text says."""

from __future__ import annotations

import re
import subprocess
import sys

from .conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SETUP = ["python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/mysched simulate",
         "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/pytest -q"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def test_generated_pages_are_what_the_code_says():
    """docs/configuration.md is the validator's schema, the metric table of docs/metrics.md a
    live registry: a setting or metric added without `tools/gen_docs.py --write` fails here."""
    out = subprocess.run([sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_check_sees_a_page_that_drifted(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import gen_docs
    finally:
        sys.path.remove(str(REPO / "tools"))
    page = tmp_path / "configuration.md"
    page.write_text(gen_docs.configuration_page().replace("| `interval` |", "| `intervall` |"))
    monkeypatch.setattr(gen_docs, "CONFIG_PAGE", page)
    monkeypatch.setattr(sys, "argv", ["gen_docs.py", "--check"])
    assert gen_docs.main() == 1


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, blanks to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page) -> set[str]:
    text = re.sub(r"(?ms)^```.*?^```", "", page.read_text())
    return {slug(m) for m in re.findall(r"(?m)^#{1,6} (.+)$", text)}


def test_every_relative_link_and_anchor_resolves():
    broken = []
    for page in PAGES:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(REPO)}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{page.relative_to(REPO)}: {target}: no such heading")
    assert not broken, "\n".join(broken)


def test_the_readme_is_a_front_page_with_the_two_set_up_commands_ci_runs():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    commands = [line.strip() for line in text.splitlines() if "pip install" in line or "python3 -m venv" in line]
    assert commands == SETUP
    assert SETUP[1] in (REPO / ".ci" / "run").read_text()
    for page in ("getting-started", "admin-guide", "configuration", "status-commands", "metrics", "simulator"):
        assert f"(docs/{page}.md)" in text, page
    demo = re.search(r"--server '(sim://[^']+)'", (REPO / "docs" / "getting-started.md").read_text())
    assert demo and f"--server '{demo.group(1)}'" in text  # the tour runs the demo of getting-started


def test_the_getting_started_demo_shows_a_queue_and_a_job_held_by_a_limit(tmp_path):
    """docs/getting-started.md runs this very command: the first cycle leaves a queue, and
    jobs that wait for a limit (user_limit, docs/demo.cfg's 25 running jobs per user)."""
    from mysched.backends.sim.server import sim_server_from_url
    from mysched.config import load_config
    from mysched.daemon.cycle import Daemon
    from mysched.daemon.statusfile import read_status, rows

    doc = (REPO / "docs" / "getting-started.md").read_text()
    run = re.search(r"(?m)^    mysched run -c (\S+) --server '(sim://[^']+)'", doc)
    assert run, "the demo's mysched run line"
    cfg = load_config(str(REPO / run.group(1)))
    assert "speed=5" in run.group(2)
    d = Daemon(cfg, sim_server_from_url(run.group(2), cfg), state_dir=str(tmp_path))
    assert d.cycle().started > 0
    jobs = rows(read_status(str(tmp_path)), "jobs")
    assert sum(1 for j in jobs if j["state"] == "Q" and j["reason"] == "no_free_slot") > 100
    held = [j["id"] for j in jobs if j["reason"] == "user_limit"]
    assert held and "402.sim" in held  # the job the page follows
