"""The four code-mode roles: what each is told and the JSON it must answer (pydantic).

Every prompt keeps the privacy rules of ``llm.prompt``: aggregates and column names, CV scores,
verdicts and errors; never a raw cell value, never a holdout number (the holdout is sealed before
any proposer exists and scored after the search).
"""

from __future__ import annotations

import builtins
import json
import re
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import sklearn
from pydantic import BaseModel, Field, field_validator

if TYPE_CHECKING:
    from mlflow_agentic.core.types import AttemptRecord

CONTRACT = f"""Write candidate.py, a Python module defining:

    def build_pipeline(columns: dict[str, str]):
        # return an UNFITTED scikit-learn estimator, usually a Pipeline

- `columns` maps each input column name to "numeric" or "categorical". The estimator is fitted on
  a pandas DataFrame with exactly these columns: numeric ones as float (NaN where missing),
  categorical ones as text (None where missing).
- All feature work goes inside the returned pipeline (FunctionTransformer, ColumnTransformer,
  your own transformer classes defined at module level): it is refit on every CV fold and runs
  again on every prediction request.
- Classification: the final estimator needs predict_proba. Regression: predict.
- Available: numpy, pandas, scipy, scikit-learn {sklearn.__version__}. Nothing else, no network,
  no files. Do not print or compute scores: the engine scores the out-of-fold predictions
  itself, and anything you print is only logged.
"""


class Hypothesis(BaseModel):
    title: str = Field(min_length=1, max_length=120)
    idea: str = ""

    @field_validator("idea", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)


class Plan(BaseModel):
    """The planner's answer: hypotheses, most promising first."""

    hypotheses: list[Hypothesis] = Field(min_length=1)


class Code(BaseModel):
    """The coder's answer: the whole ``candidate.py``."""

    code: str = Field(min_length=1)
    rationale: str = ""


class Pivot(BaseModel):
    drop_columns: list[str] = Field(default_factory=list)
    cv_advice: str = ""


class Critique(BaseModel):
    """The critic's answer: accept or object (a note either way); at most one pivot counts."""

    accept: bool = True
    note: str = ""
    pivot: Pivot | None = None


class Submission(BaseModel):
    """The submitter's answer: the attempt to register, and why."""

    attempt: int
    why: str = ""


def schema(model: type[BaseModel]) -> dict:
    """The JSON schema sent to servers that support structured output."""
    return model.model_json_schema()


def _system(role: str, task: str, answer: str) -> dict:
    return {"role": "system", "content": (
        f"You are the {role} of an AutoML team that writes scikit-learn pipelines for a tabular "
        f"task. {task} Answer with one JSON object only: {answer}")}


def _user(*parts: tuple[str, object]) -> dict:
    return {"role": "user", "content": "\n\n".join(
        f"{title}:\n{json.dumps(value, default=str) if not isinstance(value, str) else value}"
        for title, value in parts)}


MESSAGE_CHARS = 240
"""The most of an error message a prompt carries (after ``clean_message``)."""
_QUOTED = re.compile(r"""(['"])(.*?)\1""")
_DATA_LIKE = re.compile(r"\d{7,}|(?=[0-9a-fA-F]*\d)(?=[0-9a-fA-F]*[a-fA-F])[0-9a-fA-F]{8,}")


def clean_message(text: str, columns: Collection[str] = (), code: str = "") -> str:
    """An error as a prompt may carry it: one line, at most ``MESSAGE_CHARS``; quoted text
    kept only when it names an input column or is written in the attempt's ``code`` (else
    ``<value>``: it may be a cell), and tokens
    that look like data (longer than 30 characters, runs of 8 hex or 7 decimal digits) replaced.
    What a candidate computes from its training rows cannot ride an exception into a prompt."""
    known = set(columns)
    text = _QUOTED.sub(lambda m: m.group(0) if m.group(2) in known or (
        m.group(2) and len(m.group(2)) <= 40 and m.group(2) in code) else "<value>",
                       " ".join(str(text).split()))
    tokens = [("<data>" if len(t) > 30 or _DATA_LIKE.search(t) else t) for t in text.split()]
    kept = [t for i, t in enumerate(tokens) if not (t == "<data>" and i and tokens[i - 1] == t)]
    line = " ".join(kept)
    return line if len(line) <= MESSAGE_CHARS else line[:MESSAGE_CHARS - 3] + "..."


STAGES = ("read", "import", "build", "fit", "predict", "pickle", "load model", "outputs",
          "killed", "crashed", "skipped", "start")
"""The harness's and the runner's stage names: the only words of a failure a prompt carries
besides a known exception class."""
_FOLD = re.compile(r"\bfold (\d{1,2})\b")
_EXCEPTION = re.compile(r"\b([A-Z][A-Za-z]{1,40}(?:Error|Exception|Exit|Interrupt))\b")
KNOWN_EXCEPTIONS = frozenset(
    name for name in dir(builtins) if isinstance(getattr(builtins, name), type)
    and issubclass(getattr(builtins, name), BaseException)) | {
    "NotFittedError", "LinAlgError", "UnicodeDecodeError", "ParserError", "EmptyDataError",
    "SandboxFailed", "CoderFailed"}


def verdict_words(record: AttemptRecord, columns: Collection[str]) -> str:
    """The verifier's reason (the engine's own words); a failure's as ``error_words``."""
    if record.failed:
        return "failed: " + error_words(record.error or "")
    return clean_message(record.verdict.reason, columns)


def error_words(text: str) -> str:
    """A failure as a prompt may carry it: the fold, the stage (``STAGES``) and the exception's
    class when it is a known one, nothing else. The message itself is the candidate's to write:
    it can hold its training rows' labels, cell values or instructions to the next role."""
    text = str(text)
    fold = _FOLD.search(text)
    stage = next((s for s in STAGES if re.search(rf"\b{re.escape(s)}\b", text[:80])), "")
    found = [m.group(1) for m in _EXCEPTION.finditer(text)]
    known = next((name for name in found if name in KNOWN_EXCEPTIONS), None)
    exception = known or ("an exception of the candidate's own" if found else "")
    words = [f"fold {fold.group(1)}" if fold else "", stage]
    head = " ".join(w for w in words if w)
    return ": ".join(w for w in (head or "failed", exception) if w)


def feature_summary(features: Sequence[str], columns: Collection[str]) -> dict:
    """What the critic learns of a candidate's features: how many, and which input columns
    their names mention (the host's own names, matched). Never the names themselves: a
    candidate writes them, and could write its training rows' labels into them."""
    features = [str(f) for f in features]
    used = [c for c in columns if any(c in f for f in features)]
    return {"features made": len(features), "input columns the feature names mention": used,
            "input columns no feature name mentions": [c for c in columns if c not in used]}


def attempt_lines(history: Sequence, notes: dict[int, str],
                  columns: Sequence[str] = ()) -> list[dict]:
    """What earlier code attempts taught: hypothesis, CV score, verdict, error, critic note."""
    lines = []
    for a in history:
        entry = {"attempt": a.index, "hypothesis": a.params.get("hypothesis", a.candidate.trainer),
                 "status": a.status, "verdict": verdict_words(a, columns)}
        if not a.failed and a.pruned is None:
            entry.update(cv_score=round(a.score, 4), cv_std=round(a.score_std, 4))
        if a.error:
            entry["error"] = error_words(a.error)
        if a.index in notes:
            entry["critic"] = notes[a.index][:400]
        lines.append(entry)
    return lines


def constraints(dropped: Collection[str], cv_advice: str) -> dict:
    return {"dropped_columns (never use these)": list(dropped),
            "cv_advice (from the critic)": cv_advice or "none"}


def planner_messages(facts: dict, history: Sequence, notes: dict[int, str],
                     dropped: Collection[str],
                     cv_advice: str, wanted: int) -> list[dict]:
    return [_system("PLANNER", (
        f"Rank up to {wanted} hypotheses for the next experiments: feature engineering, "
        "encodings, or a model, each testable by one candidate.py. Prefer ideas the attempts "
        "so far suggest will raise the cross-validated score."),
        '{"hypotheses": [{"title": str, "idea": str}, ...]} (most promising first)'),
        _user(("Task facts", facts), ("Attempts so far", attempt_lines(history, notes)),
              ("Constraints", constraints(dropped, cv_advice)))]


def coder_messages(facts: dict, hypothesis: Hypothesis, history: Sequence,
                   notes: dict[int, str], columns: dict[str, str], dropped: Collection[str],
                   cv_advice: str) -> list[dict]:
    return [_system("CODER", "Write candidate.py for one hypothesis.\n\n" + CONTRACT,
                    '{"code": "<the whole candidate.py>", "rationale": str}'),
            _user(("Task facts", facts), ("Input columns", columns),
                  ("Hypothesis", hypothesis.model_dump()),
                  ("Earlier attempts (learn from their scores and errors)",
                   attempt_lines(history, notes, list(columns))),
                  ("Constraints", constraints(dropped, cv_advice)))]


def critic_messages(findings: list[dict], record: AttemptRecord, features: Sequence[str],
                    columns: Collection[str], pivot_left: bool) -> list[dict]:
    pivot = ('"pivot": {"drop_columns": [str], "cv_advice": str} or null'
             if pivot_left else '"pivot": null (the one pivot of this search is used)')
    return [_system("CRITIC", (
        "Review one cross-validated candidate against the data findings. Object when its "
        "features use a column a finding flags (leakage, an identifier, a post-outcome value). "
        + ("You may pivot once per search: drop flagged columns from every later candidate, "
           "or advise on the CV scheme." if pivot_left else "")),
        '{"accept": bool, "note": str, ' + pivot + "}"),
        _user(("Findings about the training data", findings),
              ("Input columns", list(columns)),
              ("Features the candidate's pipeline makes", feature_summary(features, columns)),
              ("Attempt", {"index": record.index, "status": record.status,
                           "cv_score": None if record.failed else round(record.score, 4),
                           "verdict": verdict_words(record, columns)}))]


def submitter_messages(findings: list[dict], history: Sequence, notes: dict[int, str]
                       ) -> list[dict]:
    return [_system("SUBMITTER", (
        "Choose the one attempt to register, from its cross-validated score, its spread and "
        "the findings. Only verified attempts can be registered; prefer one the critic "
        "accepted."), '{"attempt": int, "why": str}'),
        _user(("Findings about the training data", findings),
              ("Attempts", attempt_lines(history, notes)))]
