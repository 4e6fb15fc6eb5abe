"""The charged-vs-served alarm (issue 30), evaluated by the real promtool on synthetic series shaped as published:
the rate-limit service's ``total_hits`` as Envoy Gateway's statsd exporter names it (tests/data/upstream/
token_budgets.json) and the OpenAI server's token counters by client."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from inference_platform.catalog.token_limits import TokenWeights
from inference_platform.components.edge.token_limits import charge_meters, cluster_domain
from inference_platform.components.observability.rules import RuleSet, alert_names, rule_groups, rules_file
from inference_platform.components.observability.token_rules import (
    ALERT,
    CHARGED_SERIES,
    TOKEN_DRIFT,
    TOKENS_CHARGED,
    TokenMeter,
)
from inference_platform.infra.token_meters import token_meters
from inference_platform.settings import load_settings
from tests.components.observability.test_rules import SCOPE, SRV, Case, _run, _tests, promtool  # noqa: F401

FACTS = json.loads((Path(__file__).parents[2] / "data" / "upstream" / "token_budgets.json").read_text())
STATSD = FACTS["envoyproxy/gateway@v1.9.0"]["internal/infrastructure/kubernetes/ratelimit/statsd_conf.yaml"]
DOMAIN = "envoy-gateway-system/inference-edge-backend"
RULE = f"{DOMAIN}/rule/1"
METERS = (TokenMeter(client="team-a", domain=DOMAIN, key1=f"{RULE}_{RULE}"),)
RULES = RuleSet(scope=SCOPE, token_meters=METERS)
HITS = f'{CHARGED_SERIES}{{domain="{DOMAIN}",key1="{RULE}_{RULE}",key2="rule-1-match-0_rule-1-match-0"}}'
PROMPT = f"vllm:prompt_tokens_total{{{SRV}}}"
GENERATED = f"vllm:generation_tokens_total{{{SRV}}}"
# Per minute: 3000 prompt + 2000 generated tokens served.
SERVED = [(PROMPT, "0+3000x60"), (GENERATED, "0+2000x60")]


def _case(firing: list[tuple[str, str]], calm: list[tuple[str, str]], percent: str) -> Case:
    return Case(
        ALERT,
        firing,
        calm,
        "45m",
        {"client": "team-a"},
        f"Client team-a: the edge debited and the replicas served tokens {percent} apart for 30m: requests reach a "
        "replica without being charged, or are charged twice.",
    )


CASES = [
    # Charged 6000/min against 5000 served: 20 % apart. Charged exactly what was served: quiet.
    _case([*SERVED, (HITS, "0+6000x60")], [*SERVED, (HITS, "0+5000x60")], "20%"),
    # Served, never charged (the metering is off): 100 %. Charged within 1 %: quiet.
    _case(SERVED, [*SERVED, (HITS, "0+5040x60")], "100%"),
]


def test_the_alarm_fires_on_sustained_drift_and_stays_quiet_within_the_tolerance(promtool, tmp_path):  # noqa: F811
    groups = rule_groups(RULES)
    assert ALERT in alert_names(groups)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules_file(groups), sort_keys=False))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": _tests(groups, CASES)}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = _run(promtool, "test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# Weighted (input 2, cached 0.5, output 0.25): per minute 3000 prompt tokens of which 1000 cached, 2000 generated
# weigh 2 * 2000 + 0.5 * 1000 + 0.25 * 2000 = 5000; the edge charging that is quiet, charging the unweighted 5000
# tokens served (prompt + generated) when cached tokens are a tenth the price is not.
WEIGHTED = RuleSet(scope=SCOPE, token_meters=METERS, token_weights=TokenWeights(input=2000, cached=500, output=250))
CACHED = f"vllm:prefix_cache_hits_total{{{SRV}}}"
WEIGHTED_CASES = [
    _case(
        [*SERVED, (CACHED, "0+1000x60"), (HITS, "0+6000x60")],
        [*SERVED, (CACHED, "0+1000x60"), (HITS, "0+5000x60")],
        "20%",
    ),
]


def test_with_weights_the_served_side_is_weighted_as_the_edge_charges(promtool, tmp_path):  # noqa: F811
    groups = rule_groups(WEIGHTED)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules_file(groups), sort_keys=False))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": _tests(groups, WEIGHTED_CASES)}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = _run(promtool, "test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


# A client whose only limit is its monthly budget is metered at the rule the batch lane debits too: its served side
# adds its batch tokens at the batch weight (0.5): 3000 + 2000 interactive and (1000 + 1000) x 0.5 batch a minute.
BUDGET_ONLY = RuleSet(
    scope=SCOPE,
    token_meters=(TokenMeter(client="team-a", domain=DOMAIN, key1=f"{RULE}_{RULE}", batch=True),),
    token_weights=TokenWeights(batch=500),
)
BATCH = [
    ('batch_tokens_total{client="team-a",model_name="m",kind="prompt",job="batch-worker"}', "0+1000x60"),
    ('batch_tokens_total{client="team-a",model_name="m",kind="completion",job="batch-worker"}', "0+1000x60"),
]
BUDGET_ONLY_CASES = [
    # Charged the interactive tokens only (5000, the batch debits lost): 1000/6000 apart. Charged 6000: quiet.
    _case([*SERVED, *BATCH, (HITS, "0+5000x60")], [*SERVED, *BATCH, (HITS, "0+6000x60")], "16.67%"),
    # Batch alone, charged what its lines weigh: quiet; charged nothing: 100 %.
    _case(BATCH, [*BATCH, (HITS, "0+1000x60")], "100%"),
]


def test_a_budget_only_client_is_served_its_batch_tokens_at_the_batch_weight(promtool, tmp_path):  # noqa: F811
    groups = rule_groups(BUDGET_ONLY)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rules_file(groups), sort_keys=False))
    checked = _run(promtool, "check", "rules", "rules.yml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    suite = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": _tests(groups, BUDGET_ONLY_CASES)}
    (tmp_path / "tests.yml").write_text(yaml.safe_dump(suite, sort_keys=False))
    result = _run(promtool, "test", "rules", "tests.yml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_stack_marks_its_budget_only_clients_meters():
    edge = {
        "auth": {"clients": {"alpha": {"tier": "gold"}, "beta": {"tier": "gold"}}},
        "rateLimits": {"tiers": {"gold": {}}},
        "tokenLimits": {"tokensPerMinute": None, "clients": {"alpha": {"tokensPerMonth": 10_000},
                                                            "beta": {"tokensPerDay": 500, "tokensPerMonth": 9000}}},
    }  # fmt: skip
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s", region="us-west-2"
    )
    assert [(m.client, m.batch) for m in token_meters(settings, "inference-edge")] == [("alpha", True), ("beta", False)]


def test_the_charged_series_is_read_as_envoy_gateways_statsd_exporter_names_it():
    assert STATSD["name"] == CHARGED_SERIES and set(STATSD["labels"]) == {"domain", "key1", "key2"}
    charged = next(r["expr"] for g in rule_groups(RULES) for r in g["rules"] if r.get("record") == TOKENS_CHARGED)
    assert f'key1="{RULE}_{RULE}"' in charged and f'domain="{DOMAIN}"' in charged
    assert any(r.get("record") == TOKEN_DRIFT for g in rule_groups(RULES) for r in g["rules"])


def test_a_stack_meters_each_limited_client_at_its_first_token_rule():
    edge = {
        "auth": {"clients": {"alpha": {"tier": "gold"}, "beta": {"tier": "gold"}}},
        "rateLimits": {"tiers": {"gold": {}}},
        "tokenLimits": {"tokensPerMinute": 5000, "tokensPerDay": 100_000},
    }
    settings = load_settings(
        {"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s", region="us-west-2"
    )
    meters = token_meters(settings, "inference-edge")
    domain = cluster_domain("envoy-gateway-system", "inference-edge")
    # Two request rules (one per client) come first; then alpha's Minute and Day, beta's Minute and Day.
    assert [(m.client, m.key1) for m in meters] == [
        ("alpha", f"{domain}/rule/2_{domain}/rule/2"),
        ("beta", f"{domain}/rule/4_{domain}/rule/4"),
    ]
    assert [c for c, _ in charge_meters(settings.edge.policy(), domain)] == ["alpha", "beta"]


def test_the_alarm_has_a_runbook_section(repo):
    runbooks = (repo / "docs" / "runbooks.md").read_text()
    rule = next(r for g in rule_groups(RULES) for r in g["rules"] if r.get("alert") == ALERT)
    assert rule["annotations"]["runbook_url"] == f"docs/runbooks.md#{ALERT.lower()}"
    assert f"## {ALERT}\n" in runbooks and rule["labels"]["severity"] == "critical"
