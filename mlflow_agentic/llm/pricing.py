"""Estimated cost of LLM calls: USD per million tokens (input, output), overridable.

Local models (llama.cpp, Ollama, vLLM on your hardware) cost nothing per token. Override or add
models with ``prices=`` or the environment variable ``MLFLOW_AGENTIC_LLM_PRICES`` holding JSON
like ``{"my-model": [0.5, 1.5]}``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from typing import Any, Protocol

PRICES_PER_MILLION: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "o4-mini": (1.10, 4.40),
}
ESTIMATED_COMPLETION_TOKENS = 300
CHARS_PER_TOKEN = 4


class PricedCall(Protocol):
    """What the cost cap reads of a call already made (``proposers.llm.Exchange``)."""

    @property
    def cost_usd(self) -> float: ...

    @property
    def prompt_tokens(self) -> int: ...

    @property
    def completion_tokens(self) -> int: ...


def price_table(overrides: dict[str, tuple[float, float]] | None = None
                ) -> dict[str, tuple[float, float]]:
    table = dict(PRICES_PER_MILLION)
    env = os.environ.get("MLFLOW_AGENTIC_LLM_PRICES")
    if env:
        table.update(parse_prices(env, "MLFLOW_AGENTIC_LLM_PRICES"))
    table.update(checked_prices(overrides or {}, "prices"))
    return table


PRICES_SHAPE = ('a JSON object of model name -> [input, output] USD per million tokens, each a '
                'finite number >= 0, e.g. {"my-model": [0.15, 0.60]}')


def parse_prices(text: str, where: str) -> dict[str, tuple[float, float]]:
    """``text`` as a price table, or ``UserInputError`` naming ``where`` and the shape."""
    from mlflow_agentic.core.errors import UserInputError

    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{where} is not JSON ({exc.msg} at character {exc.pos}); "
                             f"expected {PRICES_SHAPE}") from None
    return checked_prices(data, where)


def checked_prices(data: Any, where: str) -> dict[str, tuple[float, float]]:
    """``data`` as a price table: every price a finite number >= 0 (a negative or NaN price
    would let a cost cap never bind)."""
    import math

    from mlflow_agentic.core.errors import UserInputError

    if not isinstance(data, dict):
        raise UserInputError(f"{where}: got {type(data).__name__}; expected {PRICES_SHAPE}")
    table = {}
    for model, pair in data.items():
        ok = (isinstance(pair, (list, tuple)) and len(pair) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and v >= 0 for v in pair))
        if not ok:
            raise UserInputError(f"{where}: the price of {model!r} is {pair!r}; expected "
                                 f"{PRICES_SHAPE}")
        table[str(model)] = (float(pair[0]), float(pair[1]))
    return table


def cost_usd(model: str, prompt_tokens: int, completion_tokens: int,
             table: dict[str, tuple[float, float]]) -> float:
    """Unknown models (local ones) cost 0."""
    price_in, price_out = table.get(model, (0.0, 0.0))
    return (prompt_tokens * price_in + completion_tokens * price_out) / 1e6


def estimate_next_cost(model: str, prompt_chars: int, table: dict[str, tuple[float, float]],
                       previous: list[tuple[int, int]] | None = None) -> float:
    """What the next call will likely cost: its prompt size plus a typical completion."""
    completion = ESTIMATED_COMPLETION_TOKENS
    if previous:
        completion = max(c for _, c in previous)
    return cost_usd(model, prompt_chars // CHARS_PER_TOKEN + 1, completion, table)


def cap_reached(model: str, messages: list[dict], exchanges: Sequence[PricedCall],
                table: dict[str, tuple[float, float]],
                cap: float | None) -> str | None:
    """Why the next call (``messages``) would break the cost ``cap`` given the calls made so
    far (``exchanges``, with ``prompt_tokens``, ``completion_tokens``, ``cost_usd``); None
    while it is affordable (always, without a cap)."""
    if cap is None:
        return None
    spent = sum(e.cost_usd for e in exchanges)
    chars = sum(len(m["content"]) for m in messages)
    previous = [(e.prompt_tokens, e.completion_tokens) for e in exchanges if e.completion_tokens]
    estimate = estimate_next_cost(model, chars, table, previous)
    if spent + estimate <= cap:
        return None
    return (f"cost cap: spent ${spent:.4f}, the next LLM call (~${estimate:.4f}) would exceed "
            f"${cap:.4f}")


def check_priced(model: str, cap: float | None,
                 table: dict[str, tuple[float, float]] | None = None) -> None:
    """A cost cap needs a price: refuse a cap on a model with none known (it would cap
    nothing: every call would be counted at $0), saying how to give one."""
    from mlflow_agentic.core.errors import UserInputError

    if cap is None or model in (table if table is not None else price_table()):
        return
    raise UserInputError(
        f"--max-cost-usd {cap:g}: model {model!r} has no known price per token, so the cap "
        "would count every call as $0. Give its prices in USD per million tokens, input and "
        f"output: MLFLOW_AGENTIC_LLM_PRICES='{{\"{model}\": [0.15, 0.60]}}' (a local model "
        "that costs nothing: [0, 0]); known: " + ", ".join(sorted(PRICES_PER_MILLION)))
