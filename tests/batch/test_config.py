"""The roles' environment: defaults, and every bad value named with what is allowed, all at once."""

from __future__ import annotations

import json

import pytest

from inference_platform.batch.config import ConfigError, api_config, worker_config

BASE = {
    "AWS_REGION": "us-east-1",
    "BATCH_BUCKET": "lane",
    "BATCH_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/work",
    "BATCH_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/dlq",
}


def test_defaults_are_the_contracts():
    api = api_config(BASE)
    assert (api.port, api.common.metrics_port, api.client_id_header) == (8080, 9090, "x-client-id")
    assert api.common.completion_window == "24h" and api.lines_per_message == 10
    assert (api.common.files_prefix, api.common.results_prefix) == ("files/", "results/")
    assert api.endpoints == ("/v1/chat/completions", "/v1/completions")
    worker = worker_config({**BASE, "BATCH_SERVING_URL": "http://serving.inference.svc:9000"})
    assert (worker.concurrency, worker.api_key, worker.shed_rules) == (8, None, ())


def test_every_problem_is_named_at_once():
    with pytest.raises(ConfigError) as err:
        worker_config({
            "BATCH_QUEUE_URL": "sqs://nope", "BATCH_CONCURRENCY": "0", "BATCH_FILES_PREFIX": "/abs",
            "BATCH_SHED_RULES": '[{"expr": "x", "above": "high"}]', "BATCH_SERVING_URL": "http://user:pw@host",
        })  # fmt: skip
    text = str(err.value)
    for expected in (
        "AWS_REGION is required", "BATCH_BUCKET is required", "BATCH_DLQ_URL is required",
        "BATCH_QUEUE_URL='sqs://nope'", "BATCH_CONCURRENCY='0': must be an integer from 1 to 256",
        "BATCH_FILES_PREFIX='/abs'", "BATCH_SHED_RULES[0]", "BATCH_SERVING_URL='http://user:pw@host'",
    ):  # fmt: skip
        assert expected in text, text


def test_shed_rules_need_a_source_and_at_most_one(tmp_path):
    rules = json.dumps([{"expr": "up", "above": 1}])
    with pytest.raises(ConfigError, match="needs BATCH_PROMETHEUS_URL or BATCH_SIGNALS_METRICS_URL"):
        worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_SHED_RULES": rules})
    with pytest.raises(ConfigError, match="set at most one"):
        worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_SHED_RULES": rules,
                       "BATCH_PROMETHEUS_URL": "http://p:9090", "BATCH_SIGNALS_METRICS_URL": "http://m/metrics"})  # fmt: skip


def test_the_key_file_holds_one_key(tmp_path):
    key = tmp_path / "api-key"
    key.write_text("abc def\n")
    with pytest.raises(ConfigError, match="must hold one key"):
        worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_API_KEY_FILE": str(key)})
    key.write_text("k" * 48 + "\n")
    assert (
        worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_API_KEY_FILE": str(key)}).api_key
        == "k" * 48
    )
    with pytest.raises(ConfigError, match="cannot read it"):
        worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_API_KEY_FILE": str(tmp_path / "none")})


def test_quota_overrides_come_from_a_file(tmp_path):
    quotas = tmp_path / "quotas.json"
    quotas.write_text(json.dumps({"team-a": {"queuedTokens": 5}, "team-b": {"queuedRequests": -1}}))
    with pytest.raises(ConfigError, match=r"team-b.queuedRequests=-1: must be an integer >= 0"):
        api_config({**BASE, "BATCH_QUOTAS_FILE": str(quotas)})
    quotas.write_text(json.dumps({"team-a": {"queuedTokens": 5}}))
    config = api_config({**BASE, "BATCH_QUOTAS_FILE": str(quotas), "BATCH_QUOTA_QUEUED_REQUESTS": "7"})
    assert (config.quota("team-a").queued_tokens, config.quota("team-a").queued_requests) == (5, 7)
    assert config.quota("team-z") == config.default_quota


GOOD_BUDGETS = {
    "address": "envoy-ratelimit.envoy-gateway-system.svc.cluster.local:8081",
    "domain": "envoy-gateway-system/inference-edge-backend",
    "weights": {"input": 1000, "cached": 100, "output": 2000, "batch": 500},
    "clients": {"alpha": [["d/rule/3", "d/rule/3"], ["rule-3-match-1", None]]},
}


def test_budgets_are_read_by_both_roles_and_bad_ones_named():
    import json

    raw = json.dumps(GOOD_BUDGETS)
    budgets = api_config({**BASE, "BATCH_BUDGETS": raw}).common.budgets
    assert budgets is not None and budgets.clients["alpha"] == (("d/rule/3", "d/rule/3"), ("rule-3-match-1", None))
    assert worker_config({**BASE, "BATCH_SERVING_URL": "http://s:9000", "BATCH_BUDGETS": raw}).common.budgets == budgets
    assert api_config(BASE).common.budgets is None
    for bad in (
        "{not json",
        json.dumps({**GOOD_BUDGETS, "address": "no-port"}),
        json.dumps({**GOOD_BUDGETS, "weights": {**GOOD_BUDGETS["weights"], "batch": -1}}),
        json.dumps({**GOOD_BUDGETS, "weights": {"input": 1000}}),
        json.dumps({**GOOD_BUDGETS, "clients": {"alpha": [["only-a-key"]]}}),
        json.dumps({k: v for k, v in GOOD_BUDGETS.items() if k != "domain"}),
    ):
        with pytest.raises(ConfigError) as err:
            api_config({**BASE, "BATCH_BUDGETS": bad})
        (problem,) = err.value.problems
        assert problem.startswith("BATCH_BUDGETS") and ("not JSON" in problem or '"address"' in problem), problem
