"""A scripted code-mode LLM team behind ``ScriptedOpenAI``: each request is answered by the role
its system prompt names (planner, coder, critic, submitter), from a script a test writes."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

PLAIN = '''
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler


def build_pipeline(columns):
    prep = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()),
         make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")))
    return make_pipeline(prep, LogisticRegression(max_iter=2000))
'''

CHARGES_PER_MONTH = '''
from sklearn.compose import make_column_selector, make_column_transformer
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, StandardScaler


def charges_per_month(X):
    X = X.copy()
    X["charges_per_month"] = X["TotalCharges"] / X["tenure"].clip(lower=1)
    return X


def build_pipeline(columns):
    prep = make_column_transformer(
        (make_pipeline(SimpleImputer(), StandardScaler()),
         make_column_selector(dtype_include="number")),
        (OneHotEncoder(handle_unknown="ignore"), make_column_selector(dtype_exclude="number")))
    return make_pipeline(FunctionTransformer(charges_per_month), prep,
                         LogisticRegression(max_iter=2000))
'''

BROKEN = '''
from sklearn.linear_model import LogisticRegression


def build_pipeline(columns):
    raise ValueError("the coder forgot to encode the categorical columns")
'''


def section(text: str, title: str):
    """The JSON under ``title:`` in a role's user message."""
    match = re.search(re.escape(title) + r":\n(.*?)(?:\n\n[A-Z][^\n]*:\n|\Z)", text, re.S)
    return json.loads(match.group(1)) if match else None


def best_accepted(user: str) -> dict:
    """A sensible submitter: the best CV score among verified attempts the critic accepted."""
    attempts = [a for a in section(user, "Attempts") if a["status"] == "verified"
                and not str(a.get("critic", "")).startswith("objected")]
    best = max(attempts, key=lambda a: a["cv_score"])
    return {"attempt": best["attempt"], "why": f"best accepted CV score {best['cv_score']}"}


class CodeTeam:
    """``responder`` for ``ScriptedOpenAI``. ``plan``: hypothesis titles; ``code``: title ->
    candidate.py (or ``coder(user) -> candidate.py``); ``critic(user)`` and
    ``submitter(user)`` make those roles' answers."""

    def __init__(self, plan: list[str], code: dict[str, str],
                 critic: Callable[[str], dict] | None = None,
                 submitter: Callable[[str], dict] = best_accepted) -> None:
        self.plan, self.code = plan, code
        self.critic = critic or (lambda user: {"accept": True, "note": "looks fine",
                                               "pivot": None})
        self.submitter = submitter
        self.roles: list[str] = []

    def __call__(self, body: dict):
        system, user = body["messages"][0]["content"], body["messages"][1]["content"]
        role = re.search(r"You are the (\w+)", system).group(1).lower()
        self.roles.append(role)
        if role == "planner":
            return ("answer", {"hypotheses": [{"title": t, "idea": f"try {t}"}
                                              for t in self.plan]})
        if role == "coder":
            title = section(user, "Hypothesis")["title"]
            code = self.code[title]  # or a function of what the coder was told
            code = code(user) if callable(code) else code
            return ("answer", {"code": code, "rationale": f"implements {title}"})
        if role == "critic":
            return ("answer", self.critic(user))
        return ("answer", self.submitter(user))
