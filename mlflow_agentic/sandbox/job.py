"""One candidate's job (what goes in) and result (what comes out), whatever runs it."""

from __future__ import annotations

import contextlib
import json
import pickle
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mlflow_agentic.errors import AgenticError

HARNESS = Path(__file__).with_name("harness.py")


class SandboxUnavailable(AgenticError):
    """No sandbox to run LLM-written code in (no Docker daemon, no image): code mode refuses."""


@dataclass
class SandboxJob:
    """The training rows (features, target, the engine's fold of each row) and the code."""

    features: pd.DataFrame
    target: np.ndarray
    folds: np.ndarray
    code: str
    task: str = "binary"
    """``regression``: predictions come out; else class probabilities (sorted classes)."""

    @contextlib.contextmanager
    def staged(self):
        """The job's files in a fresh temporary folder (``write``), removed afterwards."""
        folder = Path(tempfile.mkdtemp(prefix="mlflow-agentic-sandbox-"))
        try:
            yield self.write(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def write(self, folder: Path) -> dict[str, Path]:
        """The files a runner mounts: ``train.parquet``, ``candidate.py``, ``harness.py``; and
        an empty ``out`` folder. Nothing else of the host goes in."""
        folder.mkdir(parents=True, exist_ok=True)
        frame = self.features.copy()
        frame["__target__"] = self.target
        frame["__fold__"] = self.folds
        paths = {"train": folder / "train.parquet", "candidate": folder / "candidate.py",
                 "harness": folder / "harness.py", "out": folder / "out"}
        frame.to_parquet(paths["train"], index=False)
        paths["candidate"].write_text(self.code)
        shutil.copyfile(HARNESS, paths["harness"])
        paths["out"].mkdir()
        for path in paths.values():
            path.chmod(0o777 if path.is_dir() else 0o644)  # readable by the sandbox's user
        return paths


@dataclass
class SandboxResult:
    """What came out: the stage reached (``done``) or the one that failed and why. ``oof``:
    out-of-fold predictions, from which the engine computes the fold scores itself."""

    ok: bool
    stage: str
    label: str
    """``docker`` or ``host``: recorded on the attempt's run as ``sandbox``."""
    error: str | None = None
    traceback: str | None = None
    oof: np.ndarray | None = None
    model_bytes: bytes | None = None
    features: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""
    limits: dict[str, str] = field(default_factory=dict)

    def model(self):
        """The fitted pipeline (unpickling runs the candidate's classes: the caller decides)."""
        return pickle.loads(self.model_bytes)

    @classmethod
    def read(cls, out: Path, label: str, seconds: float, limits: dict[str, str],
             killed: str | None = None, logs: str = "") -> SandboxResult:
        """The harness's files in ``out``; ``killed``: why the runner stopped it first."""
        result_file = out / "result.json"
        log = (out / "candidate.log").read_text() if (out / "candidate.log").exists() else ""
        if killed is not None or not result_file.exists():
            return cls(False, "killed" if killed else "crashed", label,
                       error=killed or f"the sandbox ended without a result: {logs[-1500:]}",
                       seconds=seconds, log=(log + logs)[-20000:], limits=limits)
        data = json.loads(result_file.read_text())
        ok = bool(data.get("ok"))
        return cls(ok, data.get("stage", "?"), label, error=data.get("error"),
                   traceback=data.get("traceback"),
                   oof=np.load(out / "oof.npy") if ok else None,
                   model_bytes=(out / "model.pkl").read_bytes() if ok else None,
                   features=list(data.get("features", [])), seconds=seconds, log=log,
                   limits=limits)


