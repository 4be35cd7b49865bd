"""The package stays typed: mypy over the whole package (``[tool.mypy]``; ``core``, the
vocabulary every part shares, strictly) finds nothing. Run as a process (mypy's own
fast exit; its cache makes a rerun take seconds)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_the_type_checker_finds_nothing():
    done = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
