"""The LLM proposer over real HTTP (a scripted OpenAI-compatible server, the real openai client):
the fault matrix, fallbacks, and privacy of the prompts."""

from __future__ import annotations

import json

import pytest

from mlflow_agentic.core.types import StopKind
from mlflow_agentic.engine import AgenticAutoML
from mlflow_agentic.proposers.llm import AgentSolutionProposer, LLMProposer
from tests.fakes.openai_server import ScriptedOpenAI

pytestmark = pytest.mark.search  # its tests run searches in-process

TRAINERS = ["linear", "xgboost"]


@pytest.fixture
def server():
    s = ScriptedOpenAI()
    yield s
    s.close()


def search(dataset, server, script, max_iterations=1, **kw):
    server.script = list(script)
    proposer = LLMProposer(model="scripted", base_url=server.base_url, api_key="k",
                           timeout=kw.pop("timeout", 5), backoff=0.01,
                           max_attempts=kw.pop("max_attempts", 3))
    run = AgenticAutoML(proposer, max_iterations=max_iterations, patience=5, cv=3,
                        trainers=TRAINERS, ensemble=False).solve(dataset)
    return run, proposer


def good(trainer="xgboost", **params):
    return ("answer", {"trainer": trainer, "params": params or {"max_depth": 3},
                       "rationale": "shallower trees", "expected_score": 0.99})


def test_seeds_without_calls_then_a_valid_proposal(churn_small, server):
    run, proposer = search(churn_small, server, [good()])
    assert [a.candidate.trainer for a in run.attempts] == ["linear", "xgboost", "xgboost"]
    assert len(server.requests) == 1
    llm = run.attempts[2]
    assert llm.params["max_depth"] == 3 and "shallower trees" in llm.candidate.rationale
    assert proposer.exchanges[0].claimed_score == 0.99  # recorded, never used for ranking
    assert llm.score < 0.99
    assert server.requests[0]["response_format"]["type"] == "json_schema"
    assert AgentSolutionProposer is LLMProposer


BAD_ANSWERS = {
    "prose": ("answer", "Sure! I would try a deeper gradient boosting model next."),
    "empty": ("answer", ""),
    "truncated": ("answer", '{"trainer": "xgboost", "params": {"max_dep'),
    "off-schema": ("answer", {"model": "xgboost", "settings": {"max_depth": 3}}),
    "unknown trainer": ("answer", {"trainer": "neural_net", "params": {"layers": 3},
                                   "rationale": "go deep"}),
}


@pytest.mark.parametrize("kind", list(BAD_ANSWERS))
def test_an_unusable_answer_is_reasked_with_what_was_wrong(churn_small, server, kind):
    run, proposer = search(churn_small, server, [BAD_ANSWERS[kind], good()])
    assert len(server.requests) == 2 and len(run.attempts) == 3
    assert run.attempts[2].candidate.source == "llm"
    assert run.attempts[2].params["max_depth"] == 3
    followup = server.requests[1]["messages"][-1]["content"]
    assert followup.startswith("Your answer could not be used:")
    assert run.stop.kind is StopKind.ITERATIONS and proposer.fallbacks == 0


def test_bad_answers_in_a_row_fall_back_and_the_search_reaches_its_budget(churn_small, server):
    """Prose, empty, truncated and off-schema answers, over and over: every proposal falls back
    to Optuna's next trial (told the attempts so far), and the search ends on its budget."""
    bad = [BAD_ANSWERS[k] for k in ("prose", "empty", "truncated", "off-schema")]
    run, proposer = search(churn_small, server, bad * 3, max_iterations=4)
    assert run.stop.kind is StopKind.ITERATIONS and "max_iterations=4" in run.stop_reason
    assert len(run.attempts) == 6 and len(server.requests) == 12  # 3 calls per proposal
    fallbacks = run.attempts[2:]
    assert [a.candidate.source for a in fallbacks] == ["fallback"] * 4
    assert all("fallback after 3 unusable LLM answers" in a.candidate.rationale
               for a in fallbacks)
    assert not any(a.failed for a in fallbacks) and proposer.fallbacks == 4
    errors = [e.error for e in proposer.exchanges]
    assert errors[0] == "unreadable answer: no JSON object in the answer: " + repr(
        bad[0][1][:200])
    assert errors[1] == "unreadable answer: the answer was empty"
    assert errors[3].startswith("off-schema answer: trainer: Field required")


def test_the_fallback_is_deterministic_for_a_seed(churn_small, server):
    first, _ = search(churn_small, server, [BAD_ANSWERS["prose"]] * 6, max_iterations=2)
    again, _ = search(churn_small, server, [BAD_ANSWERS["prose"]] * 6, max_iterations=2)
    assert [dict(a.params) for a in first.attempts] == [dict(a.params) for a in again.attempts]


def test_json_in_prose_is_extracted(churn_small, server):
    server.rejects_json_schema = True
    text = 'Here is my idea:\n```json\n{"trainer": "linear", "params": {"C": 0.5}, ' \
           '"rationale": "regularise"}\n```'
    run, proposer = search(churn_small, server, [("answer", text)])
    assert run.attempts[2].params["C"] == 0.5


def test_out_of_space_params_are_dropped_with_the_reason(churn_small, server):
    run, _ = search(churn_small, server, [good(max_depth=99, learning_rate=0.05, depth=4,
                                               subsample="lots")])
    attempt = run.attempts[2]
    assert attempt.candidate.params == {"learning_rate": 0.05}
    why = attempt.candidate.rationale
    assert "dropped max_depth=99: outside int in [2, 10]" in why
    assert "dropped depth: not a parameter of xgboost" in why and "dropped subsample" in why


def test_malformed_params_degrade_to_defaults(churn_small, server):
    run, _ = search(churn_small, server, [("answer", {"trainer": "xgboost", "params": "deep",
                                                      "rationale": "r"})])
    assert run.attempts[2].candidate.params == {} and not run.attempts[2].failed


def test_429_then_success_is_retried(churn_small, server):
    run, proposer = search(churn_small, server, [("status", 429), good()])
    assert len(run.attempts) == 3 and proposer.exchanges[0].attempts == 2


def test_500s_until_give_up_end_the_search_cleanly(churn_small, server):
    run, proposer = search(churn_small, server, [("status", 500)] * 10, max_iterations=4)
    assert len(run.attempts) == 2 and "gave up after 3 attempts" in run.stop_reason
    assert run.stop.kind is StopKind.ENDPOINT and proposer.stop_reason == run.stop
    assert run.model is not None  # the seeds' best is still refit


def test_a_slow_answer_beyond_the_timeout(churn_small, server):
    run, proposer = search(churn_small, server, [("slow", 3, good())] * 3, timeout=0.5,
                           max_attempts=2)
    assert len(run.attempts) == 2 and "APITimeoutError" in run.stop_reason


@pytest.mark.slow  # over ~3 s
def test_a_trickling_answer_is_cut_at_the_timeout_in_all_not_per_read(server):
    """A server that sends a byte every 2 s never trips a per-read timeout; each attempt is cut
    at ``timeout`` seconds in all, and the search's deadline cuts the retries."""
    import time

    from mlflow_agentic.llm.client import LLMClient, LLMConfig, LLMUnavailable

    server.script = [("trickle", 30)] * 3
    client = LLMClient(LLMConfig("scripted", server.base_url, "k", timeout=3, max_attempts=3,
                                 backoff=0.01))
    started = time.monotonic()
    with pytest.raises(LLMUnavailable, match="time budget ran out"):
        client.complete_json([{"role": "user", "content": "hi"}], {"type": "object"},
                             deadline=time.perf_counter() + 4)
    assert time.monotonic() - started < 8


def test_server_rejecting_json_schema_falls_back_to_json_object(churn_small, server):
    server.rejects_json_schema = True
    run, proposer = search(churn_small, server, [good(), good("linear", C=2.0)],
                           max_iterations=2)
    kinds = [(r.get("response_format") or {}).get("type") for r in server.requests]
    assert kinds == ["json_schema", "json_object", "json_object"]
    assert proposer.exchanges[-1].mode == "json_object" and len(run.attempts) == 4


def test_prompts_carry_no_cell_values(churn_small, server):
    run, proposer = search(churn_small, server, [good(), good("linear", C=0.3)],
                           max_iterations=2)
    prompts = json.dumps(server.requests)
    text_columns = [c for c, i in churn_small.columns.items()
                    if not str(churn_small.frame[c].dtype).startswith(("int", "float"))]
    values = {str(v) for c in [*text_columns, churn_small.target]
              for v in churn_small.frame[c].dropna().unique() if len(str(v)) >= 2}
    leaked = sorted(v for v in values if json.dumps(v) in prompts)
    assert leaked == []
    assert "Contract" in prompts  # column names are fine


@pytest.mark.slow
def test_cli_runs_the_llm_proposer_over_http(tracking_uri, server, tmp_path, churn_frame):
    from click.testing import CliRunner

    from mlflow_agentic.cli import main

    path = tmp_path / "churn.csv"
    churn_frame.head(300).to_csv(path, index=False)
    server.script = [good(max_depth=3), good("linear", C=0.3)]
    result = CliRunner().invoke(main, [
        "run", "--data", str(path), "--proposer", "llm", "--llm-model", "scripted",
        "--llm-base-url", server.base_url, "--trainers", "linear,xgboost", "--cv", "3",
        "--max-iterations", "2", "--no-ensemble", "--quiet"], env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert "Agentic AutoML: 4 attempts" in result.output
    import mlflow

    runs = mlflow.search_runs(experiment_names=["churn-agentic"],
                              filter_string="tags.proposer = 'llm'")
    assert "shallower trees" in " ".join(runs["tags.rationale"].dropna())


@pytest.mark.slow
def test_an_endpoint_that_fails_for_good_is_said_even_with_quiet(tracking_uri, server,
                                                                 tmp_path, churn_frame):
    from click.testing import CliRunner

    from mlflow_agentic.cli import main

    path = tmp_path / "churn.csv"
    churn_frame.head(300).to_csv(path, index=False)
    server.script = [("status", 500)] * 20
    result = CliRunner().invoke(main, [
        "run", "--data", str(path), "--proposer", "llm", "--llm-model", "scripted",
        "--llm-base-url", server.base_url, "--trainers", "linear,xgboost", "--cv", "3",
        "--max-iterations", "2", "--no-ensemble", "--no-register", "--quiet"],
        env={"OPENAI_API_KEY": "k"})
    assert result.exit_code == 0, result.output
    assert "warning: the search stopped early: " in result.output
    assert "no LLM proposal was made: the results are the seeds'" in result.output


# ---- accounting, traces, record/replay ----------------------------------------------------------
def tracked_llm_search(dataset, server, script, **proposer_kw):
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.tracking import MlflowTracker

    server.script = list(script)
    tracker = MlflowTracker(register=False)
    proposer = LLMProposer(model="gpt-4o-mini", base_url=server.base_url, api_key="k",
                           timeout=5, backoff=0.01, **proposer_kw)
    result = run_search(dataset, lambda: proposer, max_iterations=3, patience=5, cv=3,
                        trainers=TRAINERS, tracker=tracker, ensemble=False)
    return result, proposer, tracker


@pytest.mark.slow
def test_tokens_cost_traces_and_recording(tracking_uri, churn_small, server):
    import mlflow

    result, proposer, tracker = tracked_llm_search(
        churn_small, server, [good(max_depth=3), good("linear", C=0.5), good(max_depth=4)])
    client = mlflow.MlflowClient()
    parent = client.get_run(tracker.parent_run_id)
    tokens = [server.prompt_tokens(r) for r in server.requests]
    assert parent.data.metrics["llm_calls"] == 3
    assert parent.data.metrics["llm_prompt_tokens"] == sum(tokens)
    assert parent.data.metrics["llm_completion_tokens"] == 60
    costs = [(t * 0.15 + 20 * 0.60) / 1e6 for t in tokens]  # gpt-4o-mini's listed price
    assert parent.data.metrics["llm_cost_usd"] == pytest.approx(sum(costs))
    child = client.get_run(tracker.child_run_ids[3])
    assert child.data.metrics["llm_prompt_tokens"] == tokens[0]
    assert child.data.metrics["llm_cost_usd"] == pytest.approx(costs[0])
    traces = mlflow.search_traces(locations=[parent.info.experiment_id], flush=True,
                                  run_id=tracker.parent_run_id, return_type="list")
    assert len(traces) == 3
    assert child.data.tags["llm.trace_id"] in {t.info.trace_id for t in traces}
    usage = sorted((t.info.token_usage or {}).get("input_tokens") for t in traces)
    assert usage == sorted(tokens)  # the Traces tab's Tokens column
    path = mlflow.artifacts.download_artifacts(run_id=tracker.parent_run_id,
                                               artifact_path="llm_exchanges.jsonl")
    with open(path) as fh:
        lines = fh.read().splitlines()
    assert len(lines) == 3 and json.loads(lines[0])["candidate"]["trainer"] == "xgboost"


@pytest.mark.slow
def test_replay_proposes_the_same_candidates_without_network(tracking_uri, churn_small, server):
    from click.testing import CliRunner

    from mlflow_agentic.cli import main

    first, _, tracker = tracked_llm_search(
        churn_small, server, [good(max_depth=3), good("linear", C=0.5), ("status", 500)] +
        [("status", 500)] * 5)
    server.close()  # no network from here on
    from mlflow_agentic.frontdoor.orchestrator import run_search
    from mlflow_agentic.proposers.llm import LLMProposer as Proposer
    from mlflow_agentic.tracking.registry import load_llm_recording

    recording = load_llm_recording(tracker.parent_run_id)
    again = run_search(churn_small, lambda: Proposer.replay(recording), max_iterations=3,
                       patience=5, cv=3, trainers=TRAINERS, ensemble=False)
    seq = [(a.candidate.trainer, dict(a.params)) for a in first.run.attempts]
    assert [(a.candidate.trainer, dict(a.params)) for a in again.run.attempts] == seq
    assert len(seq) == 4  # two seeds, two proposals, then the recorded give-up
    bad = CliRunner().invoke(main, ["run", "--data", "x.csv", "--replay", "nope"])
    assert bad.exit_code == 2


def test_cost_budget_stops_before_the_call_that_would_exceed_it(churn_small, server):
    server.script = [good()] * 5
    # a price of $1000 per million prompt tokens: each call costs most of a dollar here
    capped = LLMProposer(model="priced", base_url=server.base_url, api_key="k", backoff=0.01,
                         max_cost_usd=2.5, prices={"priced": (1000.0, 0.0)})
    run = AgenticAutoML(capped, max_iterations=5, patience=10, cv=3, trainers=TRAINERS
                        ).solve(churn_small)
    assert 2 <= len(server.requests) < 5 and run.stop.kind is StopKind.COST
    assert "cost cap" in run.stop_reason
    assert len(capped.exchanges) == len(server.requests)  # the refused call was never sent
    assert 1.0 < capped.spent_usd <= 2.5


def test_the_fallback_study_learns_every_attempt_once(churn_small, server):
    """Seeds, an LLM proposal between two fallbacks: each reaches the fallback study once."""
    prose = BAD_ANSWERS["prose"]
    run, proposer = search(churn_small, server, [prose] * 3 + [good()] + [prose] * 3,
                           max_iterations=3)
    assert [a.candidate.source for a in run.attempts[2:]] == ["fallback", "llm", "fallback"]
    trials = proposer._fallback_proposer.study.trials
    assert len(trials) == 5  # 2 seeds + the LLM's attempt, learned; 2 asked by the fallback
    llm = run.attempts[3]
    assert any(t.params.get("xgboost.max_depth") == llm.params["max_depth"]
               and t.value == pytest.approx(llm.utility) for t in trials)
