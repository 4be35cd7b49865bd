"""One container's work (``SandboxJob``: what goes in) and its ``SandboxResult`` (what comes
out), whatever runs it.

A job either fits the candidate on labelled rows (``train`` and ``target``) or loads a pipeline
an earlier job fitted (``model_bytes``), and predicts ``rows``: features only, never their
labels. So a CV fold's container holds that fold's training rows and its validation features;
the sealed holdout's features go to a scoring container after the search; the engine scores
every prediction against labels only it holds. The host never unpickles what a job returns.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mlflow_agentic.core.errors import AgenticError
from mlflow_agentic.core.types import is_regression
from mlflow_agentic.sandbox.cleanup import STAGED_PREFIX
from mlflow_agentic.sandbox.outputs import (
    LOG_BYTES,
    RESULT_BYTES,
    Outputs,
    prediction_bytes,
)

HARNESS = Path(__file__).with_name("harness.py")
MAX_LOG_CHARS = 20_000


class SandboxUnavailable(AgenticError):
    """No sandbox to run LLM-written code in (no Docker daemon, no image): code mode refuses."""


class SandboxFailed(AgenticError):
    """A sandbox job that had to succeed (a refit, a prediction of the selected model) failed."""


@dataclass
class SandboxJob:
    """``code`` (``candidate.py``) and either ``train`` + ``target`` (fit) or ``model_bytes``
    (a fitted pipeline's pickle, loaded inside only); ``rows`` (features, no labels) to
    predict; ``save_model``: return the fitted pipeline's pickle."""

    code: str
    task: str = "binary"
    """``regression``: predictions come out; else class probabilities in ``classes`` order."""
    classes: tuple = ()
    train: pd.DataFrame | None = None
    target: np.ndarray | None = None
    rows: pd.DataFrame | None = None
    model_bytes: bytes | None = None
    save_model: bool = False

    def __post_init__(self) -> None:
        if (self.train is None) == (self.model_bytes is None):
            raise ValueError("a sandbox job fits on train (with its target) or loads "
                             "model_bytes: exactly one of them")
        if self.train is not None and (self.target is None
                                       or len(self.target) != len(self.train)):
            raise ValueError("train needs one target value per row")
        if self.rows is not None and "__target__" in self.rows.columns:
            raise ValueError("rows to predict carry no labels")

    @property
    def n_outputs(self) -> int:
        return 0 if is_regression(self.task) else len(self.classes)

    def caps(self, model_bytes: int) -> dict[str, int]:
        """The only files the host reads back, each with the most bytes it may hold:
        ``model_bytes`` for a saved model (the sandbox's output limit)."""
        caps = {"result.json": RESULT_BYTES, "candidate.log": LOG_BYTES}
        if self.rows is not None:
            caps["pred.npy"] = prediction_bytes(len(self.rows), self.n_outputs)
        if self.save_model:
            caps["model.pkl"] = model_bytes
        return caps

    @contextlib.contextmanager
    def staged(self) -> Iterator[dict[str, Path]]:
        """The job's files in a fresh temporary folder (``write``), removed afterwards; named
        with this process's pid, so a killed search's folders are found (``cleanup``)."""
        folder = Path(tempfile.mkdtemp(prefix=f"{STAGED_PREFIX}{os.getpid()}-"))
        try:
            yield self.write(folder)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    def write(self, folder: Path) -> dict[str, Path]:
        """The files a runner mounts (``job.json``, ``candidate.py``, ``harness.py``, and
        ``train.parquet`` or ``model.pkl``, and ``rows.parquet`` when there are rows), and an
        empty ``out`` folder. Nothing else of the host goes in."""
        folder.mkdir(parents=True, exist_ok=True)
        paths = {"job": folder / "job.json", "candidate": folder / "candidate.py",
                 "harness": folder / "harness.py"}
        paths["job"].write_text(json.dumps({
            "task": self.task, "save_model": self.save_model,
            "classes": [c.item() if hasattr(c, "item") else c for c in self.classes]}))
        paths["candidate"].write_text(self.code)
        shutil.copyfile(HARNESS, paths["harness"])
        if self.train is not None:
            frame = self.train.reset_index(drop=True).copy()
            frame["__target__"] = np.asarray(self.target)
            paths["train"] = folder / "train.parquet"
            frame.to_parquet(paths["train"], index=False)
        else:
            paths["model"] = folder / "model.pkl"
            paths["model"].write_bytes(self.model_bytes or b"")
        if self.rows is not None:
            paths["rows"] = folder / "rows.parquet"
            self.rows.reset_index(drop=True).to_parquet(paths["rows"], index=False)
        paths["out"] = folder / "out"
        paths["out"].mkdir()
        for path in paths.values():
            path.chmod(0o777 if path.is_dir() else 0o644)  # readable by the sandbox's user
        return paths


@dataclass
class SandboxResult:
    """What came out: the stage reached (``done``) or the one that failed and why.
    ``predictions``: of the job's rows, checked for shape and finiteness here (the candidate
    wrote them; the engine scores them itself). ``model_bytes``: never unpickled on the host."""

    ok: bool
    stage: str
    label: str
    """``docker`` or ``host``: recorded on the attempt's run as ``sandbox``."""
    error: str | None = None
    traceback: str | None = None
    predictions: np.ndarray | None = None
    model_bytes: bytes | None = None
    features: list[str] = field(default_factory=list)
    seconds: float = 0.0
    log: str = ""
    limits: dict[str, str] = field(default_factory=dict)

    @classmethod
    def read(cls, outputs: Outputs, job: SandboxJob, label: str, seconds: float,
             limits: dict[str, str], killed: str | None = None,
             logs: str = "") -> SandboxResult:
        """The harness's files as the host took them (``outputs``: regular files within their
        caps, the rest refused with a reason); ``killed``: why the runner stopped it first."""
        log = outputs.files.get("candidate.log", b"").decode(errors="replace")[-MAX_LOG_CHARS:]
        refused = outputs.problem()
        if refused is not None:
            return cls(False, "outputs", label, error=refused, seconds=seconds,
                       log=log, limits=limits)
        if killed is not None or "result.json" not in outputs.files:
            return cls(False, "killed" if killed else "crashed", label,
                       error=killed or f"the sandbox ended without a result: {logs[-1500:]}",
                       seconds=seconds, log=(log + logs)[-MAX_LOG_CHARS:], limits=limits)
        common: dict[str, Any] = dict(seconds=seconds, log=log, limits=limits)
        try:
            data = json.loads(outputs.files["result.json"].decode())
            if not isinstance(data, dict):
                raise ValueError("result.json is not an object")
            if not data.get("ok"):
                return cls(False, str(data.get("stage", "?"))[:100], label,
                           error=str(data.get("error"))[:2000],
                           traceback=str(data.get("traceback") or "")[-8000:] or None, **common)
            predictions = (_predictions(outputs.files.get("pred.npy"), job)
                           if job.rows is not None else None)
            model = None
            if job.save_model:
                if "model.pkl" not in outputs.files:
                    raise ValueError("no model.pkl")
                model = outputs.files["model.pkl"]
            features = [str(f)[:200] for f in list(data.get("features") or [])[:500]]
        except (UnicodeDecodeError, ValueError, TypeError, AttributeError) as exc:
            return cls(False, "outputs", label, error=f"unreadable outputs: {exc}", **common)
        return cls(True, "done", label, predictions=predictions, model_bytes=model,
                   features=features, **common)

    @classmethod
    def combine(cls, results: list[SandboxResult]) -> SandboxResult:
        """One attempt's view of its fold jobs: the first failure (with its fold), or the first
        fold's features, the summed container seconds and every fold's log."""
        failed = next(((k, r) for k, r in enumerate(results) if not r.ok
                       and r.stage != "skipped"), None)
        first = results[0]
        log = "".join(f"--- fold {k} ---\n{r.log}" for k, r in enumerate(results)
                      if r.log.strip())[-MAX_LOG_CHARS:]
        seconds = sum(r.seconds for r in results)
        if failed is not None:
            k, r = failed
            return cls(False, f"fold {k}: {r.stage}", r.label, error=r.error,
                       traceback=r.traceback, seconds=seconds, log=log, limits=r.limits)
        return cls(True, "done", first.label, features=first.features, seconds=seconds,
                   log=log, limits=first.limits)


def _predictions(data: bytes | None, job: SandboxJob) -> np.ndarray:
    """``pred.npy`` as the job asked for it: one finite value (regression) or one probability
    per class for each row; anything else is the candidate's failure, not a number."""
    n, k = (0 if job.rows is None else len(job.rows)), job.n_outputs
    expected = (n, k) if k else (n,)
    if data is None:
        raise ValueError("no pred.npy")
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
              else np.lib.format.read_array_header_2_0)
    shape, _, dtype = header(stream)  # the header alone: no allocation it claims is made
    if shape != expected or dtype.kind not in "fiu" or dtype.hasobject:
        raise ValueError(f"predictions of shape {shape} ({dtype}), expected {expected} numbers")
    if len(data) - stream.tell() != dtype.itemsize * int(np.prod(shape)):
        raise ValueError(f"pred.npy holds {len(data) - stream.tell():,} bytes of data, not the "
                         f"{dtype.itemsize * int(np.prod(shape)):,} its header claims")
    values = np.load(io.BytesIO(data), allow_pickle=False)
    values = values.astype(float)
    if not np.isfinite(values).all():
        raise ValueError("predictions hold NaN or infinite values")
    return values
