"""Churn-like tasks generated from a seed, five with one planted trap each and one clean control.

Every task is a plain table plus what a careful user would tell the tool (a time column, a group
column, post-outcome columns). The trap is in the data, not in those hints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class TrapTask:
    name: str
    frame: pd.DataFrame
    target: str
    expected_checks: frozenset[str]
    """Checks that catch this trap (empty for the control)."""
    planted_column: str | None = None
    """A leaking column a model must not use (the leakage task)."""
    split: dict = field(default_factory=dict)
    """Keyword arguments for ``SplitOptions`` (what the user knows about the data)."""
    description: str = ""


def _base(rng: np.random.Generator, n: int, intercept: float = -1.0, scale: float = 1.0
          ) -> tuple[pd.DataFrame, np.ndarray]:
    """Customers with a moderate, honest signal (univariate AUCs well below 0.9)."""
    tenure = rng.integers(0, 73, n)
    monthly = np.clip(rng.normal(70, 30, n), 18, 120).round(2)
    contract = rng.choice(["month-to-month", "one year", "two year"], n, p=[0.55, 0.25, 0.2])
    calls = rng.poisson(1.5, n)
    region = rng.choice(["north", "south", "east", "west", "centre"], n)
    logit = (intercept + scale * (0.9 * (contract == "month-to-month") - 0.025 * tenure
             + 0.012 * (monthly - 70) + 0.3 * calls))
    frame = pd.DataFrame({"tenure": tenure, "monthly_charges": monthly, "contract": contract,
                          "support_calls": calls, "region": region})
    return frame, logit


def _draw(rng: np.random.Generator, logit: np.ndarray) -> np.ndarray:
    return rng.random(len(logit)) < 1 / (1 + np.exp(-logit))


def _label(y: np.ndarray) -> np.ndarray:
    return np.where(y, "Yes", "No")


def leakage(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    frame, logit = _base(rng, 2000)
    y = _draw(rng, logit)
    flip = rng.random(len(y)) < 0.015
    frame["refund_issued"] = np.where(y ^ flip, "yes", "no")  # recorded after the customer left
    frame["churned"] = _label(y)
    return TrapTask("leakage", frame, "churned",
                    frozenset({"single_feature", "missing_separation", "too_good"}),
                    "refund_issued", {"post_outcome_columns": ("refund_issued",)},
                    "a post-outcome column almost equal to the target")


def time_order(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    frame, logit = _base(rng, 2400)
    month = rng.integers(0, 36, len(frame))
    effect = rng.normal(0, 1.6, 36)  # each month's campaign moves churn; the future is unknown
    day = rng.integers(0, 28, len(frame))
    frame["signup_date"] = (pd.Timestamp("2021-01-01") + pd.to_timedelta(month * 30 + day, "D")
                            ).strftime("%Y-%m-%d")
    frame["churned"] = _label(_draw(rng, logit + effect[month]))
    return TrapTask("time", frame, "churned", frozenset({"time_leakage"}), None,
                    {"time_column": "signup_date"},
                    "churn moves with the month; random folds peek at the future")


def groups(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    frame, logit = _base(rng, 2400)
    n_stores = 40
    store = rng.integers(0, n_stores, len(frame))
    effect = rng.normal(0, 1.6, n_stores)
    size = rng.uniform(100, 5000, n_stores).round(1)
    frame["store"] = [f"store-{s:02d}" for s in store]
    frame["store_size"] = size[store]  # identifies the store to a model
    frame["churned"] = _label(_draw(rng, logit + effect[store]))
    return TrapTask("groups", frame, "churned", frozenset({"group_leakage"}), None,
                    {"group_column": "store"},
                    "rows of one store share an effect; random folds memorise stores")


def duplicates(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    records, logit = _base(rng, 1200, scale=0.5)
    records["churned"] = _label(_draw(rng, logit))
    copies = records.loc[records.index.repeat(rng.poisson(2.0, len(records)) + 1)].copy()
    jitter = rng.normal(0, 1e-4, len(copies))
    copies["monthly_charges"] = (copies["monthly_charges"] * (1 + jitter)).round(4)
    frame = copies.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return TrapTask("duplicates", frame, "churned", frozenset({"near_duplicates"}), None, {},
                    "a logging bug copied most records two or three times")


def imbalance(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    frame, logit = _base(rng, 3000, intercept=-4.6)
    frame["churned"] = _label(_draw(rng, logit))
    return TrapTask("imbalance", frame, "churned", frozenset({"class_imbalance"}), None, {},
                    "about 2% positives")


def control(seed: int) -> TrapTask:
    rng = np.random.default_rng(seed)
    frame, logit = _base(rng, 2000)
    frame["churned"] = _label(_draw(rng, logit))
    return TrapTask("control", frame, "churned", frozenset(), None, {}, "no trap")


GENERATORS: dict[str, Callable[[int], TrapTask]] = {
    "leakage": leakage, "time": time_order, "groups": groups, "duplicates": duplicates,
    "imbalance": imbalance, "control": control}


def make_tasks(seed: int = 0) -> list[TrapTask]:
    return [make(seed + k) for k, make in enumerate(GENERATORS.values())]
