"""The canary gate's decision (inferctl/verify/canary_gate.py): within the bounds of models.canary, always."""

from __future__ import annotations

import pytest

from inference_platform.inferctl.verify.canary_gate import Limits, Sample, decide, percentile
from inference_platform.inferctl.verify.canary_live import Live, LiveVersion, VersionScope, queries

LIMITS = Limits(weight=25, steps=(5, 25, 50, 100), ttft_p95_ms=500, max_error_rate=0.01, max_ttft_ratio=1.25, itl_p50_ms=50,
                min_requests=100)  # fmt: skip
GOOD = Sample(requests=200, errors=0, ttft_p95_ms=100)
LIVE_OK = LiveVersion(requests=400, errors=0, ttft_p95_ms=120, itl_p50_ms=20, itl_p95_ms=30)


def live(canary: LiveVersion | None = LIVE_OK, current: LiveVersion | None = LIVE_OK, note: str = "") -> Live:
    return Live(600, canary=canary, current=current, note=note)


@pytest.mark.parametrize(
    ("canary", "live", "action", "weight", "words"),
    [
        (GOOD, None, "promote", 50, "within every limit"),
        (Sample(200, 3, 100), None, "rollback", 0, "above the error budget"),
        (Sample(200, 0, 600), None, "rollback", 0, "above the SLO"),
        (Sample(200, 0, 130), None, "rollback", 0, "1.25 x the current"),
        (Sample(50, 0, 100), None, "hold", 25, "needs 100"),
        (GOOD, live(LiveVersion(1000, 50, 100, 20, 30)), "rollback", 0, "live: canary errors 50/1000"),
        (GOOD, live(LiveVersion(400, 0, 600, 20, 30)), "rollback", 0, "live: canary TTFT p95 600 ms above the SLO"),
        (GOOD, live(LiveVersion(400, 0, 160, 20, 30)), "rollback", 0, "live: canary TTFT p95 160.0 ms above 1.25"),
        (GOOD, live(LiveVersion(400, 0, 120, 20, 40)), "rollback", 0, "live: canary ITL p95 40.0 ms above 1.25"),
        (
            GOOD,
            live(LiveVersion(400, 0, 120, 70, 80), LiveVersion(400, 0, 120, 70, 80)),
            "rollback",
            0,
            "ITL p50 70.0 ms above the SLO 50 ms",
        ),
        (GOOD, live(), "promote", 50, "live 600 s: canary TTFT p95 120.0 ms"),
        # Too little real traffic, or none measured: a canary already at 25 % is held, never promoted.
        (GOOD, live(LiveVersion(40, 20, 900, 90, 90)), "hold", 25, "only 40 live canary requests"),
        (GOOD, Live(600, note="Prometheus not reachable"), "hold", 25, "live metrics unavailable"),
        # The current version's live figures are compared only above the minimum too.
        (GOOD, live(current=LiveVersion(20, 0, 10, 1, 1)), "promote", 50, "too few to compare"),
    ],
)
def test_decisions(canary, live, action, weight, words):
    decision = decide(canary, Sample(200, 0, 100), LIMITS, live)
    assert (decision.action, decision.weight) == (action, weight) and words in decision.reason, decision


def test_at_zero_percent_the_first_step_rests_on_the_synthetic_load():
    """No real request reaches a 0 % canary: too few live requests, or no Prometheus, does not hold it there."""
    at_zero = Limits(**{**LIMITS.__dict__, "weight": 0})
    for seen in (live(LiveVersion(0, 0, None, None, None)), Live(600, note="Prometheus not reachable")):
        decision = decide(GOOD, GOOD, at_zero, seen)
        assert (decision.action, decision.weight) == ("promote", 5), decision


def test_the_queries_read_the_servers_published_series_by_version():
    found = queries(VersionScope("inference", "triton-llama-3-1-8b-v2", "Llama-3.1-8B"), 600)
    scope = 'namespace="inference",job="triton-llama-3-1-8b-v2"'
    assert found == {
        "requests": f'sum(increase(http_requests_total{{{scope},handler=~"/v1/chat/completions|/v1/completions",'
        'status!="4xx"}[600s]))',
        "http_errors": f'sum(increase(http_requests_total{{{scope},handler=~"/v1/chat/completions|/v1/completions",'
        'status="5xx"}[600s]))',
        "engine_errors": f'sum(increase(vllm:request_success_total{{{scope},model_name="Llama-3.1-8B",'
        'finished_reason="error"}[600s]))',
        "ttft_p95": "histogram_quantile(0.95, sum by (le) (increase(vllm:time_to_first_token_seconds_bucket"
        f'{{{scope},model_name="Llama-3.1-8B"}}[600s])))',
        "itl_p50": "histogram_quantile(0.5, sum by (le) (increase(vllm:inter_token_latency_seconds_bucket"
        f'{{{scope},model_name="Llama-3.1-8B"}}[600s])))',
        "itl_p95": "histogram_quantile(0.95, sum by (le) (increase(vllm:inter_token_latency_seconds_bucket"
        f'{{{scope},model_name="Llama-3.1-8B"}}[600s])))',
    }


def test_an_unreachable_prometheus_is_not_measured_with_the_reason():
    from inference_platform.inferctl.verify.canary_live import measure_live
    from inference_platform.processes import free_port

    scope = VersionScope("inference", "triton", "m")
    found = measure_live(f"http://127.0.0.1:{free_port()}", scope, scope, 600, at=0)
    assert not found.measured and "not reachable" in found.note


def test_never_beyond_the_bounds():
    assert decide(GOOD, GOOD, Limits(**{**LIMITS.__dict__, "weight": 100})).action == "complete"
    held = decide(Sample(200, 9, 100), GOOD, Limits(**{**LIMITS.__dict__, "rollback": False}))
    assert (held.action, held.weight) == ("hold", 25) and "rollback is false" in held.reason
    assert decide(GOOD, GOOD, Limits(**{**LIMITS.__dict__, "weight": 0})).weight == 5


def test_percentile():
    assert (
        percentile([], 0.95) == 0 and percentile([1, 2, 3, 4], 0.5) == 2 and percentile(list(range(1, 101)), 0.95) == 95
    )


def test_the_first_token_is_the_first_text_not_the_role_chunk():
    """The OpenAI server streams the role with an empty content before the engine answers (as OpenAI does)."""
    from inference_platform.inferctl.verify.canary_gate import _has_token

    role = b'data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'
    text = b'data: {"choices":[{"index":0,"delta":{"content":"Hi"}}]}'
    completion = b'data: {"choices":[{"index":0,"text":"Hi"}]}'
    assert [_has_token(x) for x in (role, text, completion, b"data: [DONE]", b"")] == [False, True, True, False, False]


def test_the_decision_is_written_back_into_the_stacks_settings():
    """The printed commands set exactly the keys the settings read back: weight and lastDecision."""
    import shlex

    from inference_platform.inferctl.verify.canary_gate import Decision, write_back
    from inference_platform.settings import load_settings

    decision = Decision("rollback", 0, "live: canary TTFT p95 480 ms above the SLO's 'x'")
    commands = write_back(decision, "dev")
    values: dict = {}
    for command in commands:
        argv = shlex.split(command)
        assert argv[:6] == ["pulumi", "config", "set", "--stack", "dev", "--path"]
        path, value = argv[6].removeprefix("inference-platform:").split("."), argv[7]
        node = values
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = int(value) if value.isdigit() else value
    canary = {"version": "v2", "weight": 5, "inference": {"image": {"tag": "2"}}}
    canary |= values["models"]["canary"]
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "models": {"canary": canary},
         "inference": {"image": {"tag": "1"}, "model": {"engine": "e/", "tokenizer": "t/"}}},
        project="p", stack="dev", region="us-west-2",
    )  # fmt: skip
    written = settings.models.canary
    assert written.weight == 0 and written.last_decision.action == "rollback"
    assert written.last_decision.reason == decision.reason and written.state.startswith("rolled back")
