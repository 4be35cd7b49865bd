"""The shape of an LLM's proposal, validated with pydantic (lenient where the engine recovers)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field, field_validator


class Proposal(BaseModel):
    """``{trainer, params, rationale}``; ``expected_score`` is logged, never ranked."""

    trainer: str
    params: dict[str, Any] = Field(default_factory=dict)
    rationale: str = ""
    expected_score: float | None = None

    @field_validator("params", mode="before")
    @classmethod
    def _params_or_empty(cls, value: Any) -> Any:
        """Malformed params degrade to ``{}`` (the trainer's defaults), not to a failure."""
        return value if isinstance(value, dict) else {}

    @field_validator("rationale", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str:
        return "" if value is None else str(value)

    @field_validator("expected_score", mode="before")
    @classmethod
    def _number_or_none(cls, value: Any) -> float | None:
        try:
            return float(value)
        except (TypeError, ValueError):
            return None


def proposal_schema(trainers: list[str]) -> dict:
    """JSON schema sent to servers that support structured output."""
    return {
        "type": "object",
        "properties": {
            "trainer": {"type": "string", "enum": list(trainers)},
            "params": {"type": "object"},
            "rationale": {"type": "string"},
            "expected_score": {"type": "number"},
        },
        "required": ["trainer", "params", "rationale"],
        "additionalProperties": False,
    }
