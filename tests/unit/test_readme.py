"""The README and the docs pages as a newcomer reads them: the two set-up commands are the script CI installs with,
every relative link reaches its file and heading, and the README stays a README (short, no commit hashes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
PAGES = [README, *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "config").rglob("README.md"))]
PAGES += [REPO / "profiles" / "README.md", REPO / "CHANGELOG.md"]


def _bash_blocks(text: str, heading: str) -> list[str]:
    """The lines of the ```bash blocks of one ``## heading`` section."""
    section = text.split(f"\n{heading}\n", 1)[1].split("\n## ", 1)[0]
    return [line for block in re.findall(r"```bash\n(.*?)```", section, re.S) for line in block.splitlines()]


def test_the_set_up_is_two_commands_of_the_script_ci_installs_with() -> None:
    assert _bash_blocks(README.read_text(), "## Set-up") == ["scripts/setup.sh quick", "scripts/setup.sh tests"]
    ci = (REPO / ".ci" / "run").read_text()
    assert "step install bash scripts/setup.sh install" in ci
    assert ".venv/bin/python -m pytest -q -n 2 --dist loadfile --durations=15\n" in ci


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="the 3.11 install, as CI's first step")
def test_the_test_command_installs_the_ort_extra_and_runs_the_default_suite() -> None:
    said = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup.sh"), "--dry-run", "--python", sys.executable, "tests"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "-m pip install -c constraints.txt -e .[test,ort]" in said
    assert "-m compileall -q src" in said  # each job then reads traincost's modules compiled
    assert said.rstrip().endswith(".venv/bin/python -m pytest -q -n 2 --dist loadfile")


def test_the_script_refuses_an_unknown_job_in_one_line() -> None:
    result = subprocess.run(
        ["bash", str(REPO / "scripts" / "setup.sh"), "everything"], capture_output=True, text=True, check=False
    )
    assert result.returncode == 2 and result.stderr.strip() == "setup: unknown job 'everything' (quick, tests, full or install)"


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(REPO)) for p in PAGES])
def test_every_relative_link_reaches_its_file_and_heading(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(target)
    assert not broken, f"{page.relative_to(REPO)}: {broken}"


def test_the_readme_is_short_and_names_no_commit() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 300
    hashes = [word for word in re.findall(r"\b[0-9a-f]{7,40}\b", text) if re.search(r"\d", word) and re.search("[a-f]", word)]
    assert not hashes, hashes
