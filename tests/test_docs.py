"""The docs cannot go stale: every fenced block of the README and of ``docs/`` is run here, run
by the test it names, or marked as an excerpt; the site builds with ``mkdocs build --strict``.

A block is marked by an HTML comment on the line before its fence:
``<!-- run -->`` (this file runs it: Python in a fresh process, from the repository root, on a
fresh sqlite store), ``<!-- tested-by: tests/test_x.py::test_name -->`` (that test runs the same
thing; checked to exist), or ``<!-- excerpt: why -->`` (output, or a command that needs a
service or runs until stopped).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the README's and the guides' commands, run as written

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(r"^<!-- (run|excerpt|tested-by)(?::\s*(.*?))? -->$")


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    mark: str | None
    target: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks() -> list[Block]:
    found = []
    for page in PAGES:
        text = page.read_text()
        for match in FENCE.finditer(text):
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            mark = MARK.match(before)
            found.append(Block(page, text[:match.start()].count("\n") + 1, match.group(1),
                               match.group(2), mark.group(1) if mark else None,
                               (mark.group(2) or "") if mark else ""))
    return found


def workspace(tmp_path: Path) -> tuple[Path, dict]:
    """A directory that looks like the repository to a newcomer's command (the MLproject, the
    conda file and the examples), so what it writes (``mlflow.db``, ``mlruns/``, journals)
    lands in ``tmp_path``; and the environment of a fresh shell: no ``MLFLOW_*`` variable an
    earlier test (or MLflow itself: ``set_experiment``) left in this process."""
    work = tmp_path / "work"
    work.mkdir()
    for name in ("MLproject", "conda.yaml", "examples"):
        (work / name).symlink_to(ROOT / name)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(MLFLOW_TRACKING_URI=f"sqlite:///{tmp_path / 'mlflow.db'}",
               MLFLOW_AGENTIC_JOURNAL_DIR=str(tmp_path / "journal"), PYTHONPATH=str(ROOT),
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    return work, env


def run_python(code: str, tmp_path: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    work, env = workspace(tmp_path)
    return subprocess.run([sys.executable, "-c", code], cwd=work, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_every_block_is_run_tested_or_an_excerpt():
    unmarked = [str(b) for b in blocks() if b.mark is None]
    assert unmarked == [], "blocks with no <!-- run / tested-by / excerpt --> mark"
    missing = []
    for block in blocks():
        if block.mark == "tested-by":
            path, _, name = block.target.partition("::")
            file = ROOT / path
            if not file.exists() or (name and f"def {name}(" not in file.read_text()):
                missing.append(f"{block}: {block.target}")
        if block.mark == "run" and block.language != "python":
            missing.append(f"{block}: only python blocks run here (name the test that runs it)")
        if block.mark == "excerpt" and not block.target:
            missing.append(f"{block}: say why it is an excerpt")
    assert missing == []


RUNNABLE = [b for b in blocks() if b.mark == "run"]


@pytest.mark.parametrize("block", RUNNABLE, ids=str)
def test_python_blocks_run_as_written(block, tmp_path):
    done = run_python(block.code, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    if block.page.name == "README.md":  # it once crashed after registering a version
        out = done.stdout
        assert out.startswith("Agentic AutoML: "), out
        assert re.search(r"^\[('(Yes|No)' ?){3}\]$", out, re.M), out  # three predicted labels
        assert out.rstrip().endswith("@challenger -> version 1"), out  # a fresh store
    if "SequenceProposer" in block.code:  # the documented quick start of the loop
        assert "Agentic AutoML: 3 attempts" in done.stdout, done.stdout


def test_the_main_command_runs_as_written(tmp_path):
    """The README's first command, after its install step (the suite's venv is that install),
    in a directory holding the project's files, with the store there."""
    text = (ROOT / "README.md").read_text()
    block = next(b for b in blocks() if b.page.name == "README.md" and "mlflow run" in b.code)
    command = block.code.replace("\\\n", " ")
    install = "python3 -m venv .venv && .venv/bin/pip install -e . && "
    assert command.startswith(install), command
    command = command[len(install):].replace('PATH="$PWD/.venv/bin:$PATH"', "").strip()
    work, env = workspace(tmp_path)
    done = subprocess.run(["bash", "-c", command], cwd=work, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert re.search(r"^Agentic AutoML: \d+ attempts", done.stdout, re.M), done.stdout
    assert "registered: models:/churn-agentic@challenger (version 1)" in done.stdout
    assert "registered: models:/churn-agentic@challenger (version 1)" in text  # as documented


def test_the_site_builds_strictly(tmp_path):
    """``mkdocs build --strict``: every page in the nav, every link and anchor resolves, the
    CLI and Python references generate from the code."""
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "-d", str(tmp_path / "site")], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-5000:]
    reference = (tmp_path / "site" / "reference" / "cli" / "index.html").read_text()
    assert "Sentinel" not in reference  # click's "no default" shown as what it is
    for command in ("predict", "leaderboard", "mlflow-agentic ui"):
        assert command in reference


MAIN_QUOTES = [  # how pages quote the main command; named groups: what numbers.json records
    r"(?P<attempts>\d+) attempts \((?P<verified>\d+) verified\); best=\S+ roc_auc=(?P<cv>0\.\d{4})",
    r"holdout \((?P<holdout_rows>\d+) rows, stratified\): selected \S+ roc_auc CV (?P<cv>0\.\d{4}) "
    r"vs holdout (?P<holdout>0\.\d{4}), gap (?P<gap>-?0\.\d{4})",
    r"\bCV (?P<cv>0\.\d{4}), holdout (?P<holdout>0\.\d{4})",
    r"holdout roc_auc (?P<holdout>0\.\d{4}), CV (?P<cv>0\.\d{4})",
    r"(?P<cv>0\.\d{4}) and holdout (?P<holdout>0\.\d{4}) on (?P<holdout_rows>\d+) sealed rows",
    r"same (?P<attempts>\d+) attempts and holdout \((?P<holdout>0\.\d{4})\)",
]
ANOTHER_RUN = "<!-- numbers: another run -->"
"""Put on one of the 16 lines above a quote of another run's numbers (a distributed search, a
transcript recorded with an earlier engine, said so beside it): the check leaves it alone."""


def test_every_page_quotes_the_main_commands_recorded_numbers():
    """``docs/numbers.json`` is written by ``python docs/record_numbers.py`` from one run of the
    main command; every page's quote of that command must say what that run printed."""
    recorded = {k: str(v) for k, v in json.loads(
        (ROOT / "docs" / "numbers.json").read_text())["main"].items()}
    wrong = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            if any(ANOTHER_RUN in above for above in lines[max(0, i - 16):i + 1]):
                continue
            for pattern in MAIN_QUOTES:
                for match in re.finditer(pattern, line):
                    wrong += [f"{page.relative_to(ROOT)}:{i + 1}: {key} {value} (recorded "
                              f"{recorded[key]})" for key, value in match.groupdict().items()
                              if value != recorded[key]]
    assert wrong == [], "\n".join(wrong)
