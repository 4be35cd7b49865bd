"""The package stays typed and clean: mypy over the whole package (``[tool.mypy]``; ``core``,
the vocabulary every part shares, strictly) and ruff over the repository find nothing. Run as
processes (mypy's own fast exit; its cache makes a rerun take seconds)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_type_checker_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_finds_nothing():
    """``ruff check`` over the repository (``[tool.ruff]``: style, imports, bugbear, and every
    argument and return annotated in ``core`` and ``engine``)."""
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
