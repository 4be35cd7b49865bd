"""``LLMCalls``: each LLM call a proposer makes, as an MLflow trace on the search run, and its
tokens, time and cost on the attempt it led to."""

from __future__ import annotations

import json

from mlflow.tracing.constant import SpanAttributeKey

from mlflow_agentic.tracking.store import TraceRefused, deliver_trace


class LLMCalls:
    """The calls of one search. ``journal_trace(call, trace, tried)`` keeps a trace the store
    did not take, to send when it answers again."""

    def __init__(self, say, journal_trace) -> None:
        self.say = say
        self.journal_trace = journal_trace
        self.exchanges: list = []
        self.pending: dict[str, float] = {}
        """Tokens, seconds and cost since the last attempt (logged on the next one)."""
        self.trace_ids: list[str] = []

    def add(self, exchange, store, proposer: str, run_id: str, experiment_id: str) -> None:
        """One call: traced now (or journaled), its usage added to the next attempt's."""
        self.exchanges.append(exchange)
        trace_id = exchange.replayed_trace
        if trace_id is None:
            trace = trace_payload(exchange, len(self.exchanges), proposer, run_id,
                                  experiment_id)
            trace_id = self._trace_now(store, len(self.exchanges), trace)
        for key, value in (("llm_prompt_tokens", exchange.prompt_tokens),
                           ("llm_completion_tokens", exchange.completion_tokens),
                           ("llm_seconds", exchange.seconds),
                           ("llm_cost_usd", exchange.cost_usd)):
            self.pending[key] = self.pending.get(key, 0) + value
        if trace_id:
            self.trace_ids.append(trace_id)

    def take(self) -> tuple[dict[str, float], dict[str, str]]:
        """The usage since the last attempt (metrics) and its last trace (a tag), reset."""
        metrics, self.pending = self.pending, {}
        tags = {"llm.trace_id": self.trace_ids[-1]} if metrics and self.trace_ids else {}
        return metrics, tags

    def _trace_now(self, store, call: int, trace: dict) -> str | None:
        """Trace call number ``call`` and see it in the store before the search goes on
        (resuming answers the call from it). MLflow exports traces on its own threads and only
        warns when the store is down: a trace not seen in the store is journaled and sent by
        the writer when the store answers again (or by ``flush``), once."""
        tried: list = []
        try:  # not retried here: a store that is down costs the search nothing
            return deliver_trace(store, trace, tried)
        except TraceRefused as exc:  # the store is up: sending it again will not help
            self.say(f"{exc}; the call is kept in the search run's llm_exchanges.jsonl")
            return None
        except Exception:  # noqa: BLE001 - the store is down: the trace waits its turn
            self.journal_trace(call, trace, tried)
            return None


def trace_payload(exchange, call: int, proposer: str, run_id: str, experiment_id: str) -> dict:
    """One LLM call as a trace (``delivery.send_trace``): JSON, so it can wait on disk."""
    cand = exchange.candidate
    attributes = {"model": exchange.model, "mode": exchange.mode,
                  "prompt_tokens": exchange.prompt_tokens,
                  "completion_tokens": exchange.completion_tokens,
                  "cost_usd": exchange.cost_usd, "attempts": exchange.attempts,
                  "call": call}  # resuming replays calls 1..k
    usage = {"input_tokens": exchange.prompt_tokens,  # the UI's Tokens column
             "output_tokens": exchange.completion_tokens,
             "total_tokens": exchange.prompt_tokens + exchange.completion_tokens}
    outputs = {"text": exchange.text, "error": exchange.error, "notes": exchange.notes,
               "claimed_score": exchange.claimed_score,
               "candidate": None if cand is None else {"trainer": cand.trainer,
                                                        "params": dict(cand.params)}}
    return json.loads(json.dumps({
        "name": f"llm.{exchange.role}", "inputs": {"messages": exchange.messages},
        "attributes": {**{k: str(v) for k, v in attributes.items()},
                       SpanAttributeKey.CHAT_USAGE: usage},
        "tags": {"proposer": proposer, "role": exchange.role, "search_run_id": run_id},
        "experiment_id": experiment_id, "run_id": run_id,
        "start_ns": exchange.started_ns or None, "end_ns": exchange.ended_ns or None,
        "outputs": outputs, "status": "ERROR" if exchange.error else "OK"}, default=str))
