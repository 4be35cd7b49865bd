"""The names of the evidence a search writes and the promotion gate reads back: model-version
tags and the holdout artifact. One module for writer and reader, so renaming one cannot
silently make the gate refuse every model."""

from __future__ import annotations

METRIC = "metric"
TASK = "task"
TARGET = "target"
TRAINER = "trainer"
VERDICT = "verdict"
VERDICT_STATUS = "verdict.status"
QUARANTINED = "quarantined"
GAP = "gap"
SELF_DECEIVED = "self_deceived"
HOLDOUT_ROWS = "holdout_rows"
HOLDOUT_DIGEST = "holdout_digest"
RUN_ID = "run_id"
SEARCH_RUN_ID = "search_run_id"
PROPOSER = "proposer"
DATASET = "dataset"
CV_SCHEME = "cv_scheme"
EXCLUDED_COLUMNS = "excluded_columns"
CRITICAL_FINDINGS = "critical_findings"
ALIAS_DECISION = "alias_decision"
GENERATED_CODE = "generated_code"
"""``true`` on a code-mode model version: loading it runs LLM-written code."""
MODEL_SHA256 = "model_sha256"
"""The logged model's files' digest: a param of the selected attempt's run (params cannot be
changed once logged), compared by the promotion gate with the version it is asked to promote."""
EVIDENCE_MODEL_URI = "evidence_model_uri"
"""With ``--refit-full``: the model the holdout scored (fitted on the training rows only),
logged beside the served one; a param of the selected attempt's run. The promotion gate scores
it, not the served model, on the search's own holdout (the served model has seen those rows)."""
EVIDENCE_MODEL_SHA256 = "evidence_model_sha256"
"""That model's files' digest (a param), checked before it is scored."""
SERVED_ROWS = "served_rows"
"""How many labelled rows the served model was fitted on (a param)."""
ACCEPTED_BY = "generated_code.accepted_by"
ACCEPTED_AT = "generated_code.accepted_at"

HOLDOUT_ARTIFACT = "evaluation/holdout.csv"
"""The sealed rows as read (post-outcome columns blanked), logged on the search run."""


DECIMALS = 4
"""Scores a person reads (run metrics, version tags, descriptions) are rounded to this: the
runs table shows them whole, and the fifth decimal of a CV or holdout score is noise."""


def shown(value: float) -> float:
    """``value`` rounded for people (NaN and infinities unchanged)."""
    return round(float(value), DECIMALS) if value == value and abs(value) != float("inf") \
        else float(value)


def cv(metric: str) -> str:
    return f"cv_{metric}"


def holdout(metric: str) -> str:
    return f"holdout_{metric}"


def baseline(metric: str) -> str:
    return f"baseline_{metric}"
