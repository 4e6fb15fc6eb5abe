"""``loadTest`` and the verification Job's keys: defaults, sizing from the measured per-worker rate, and
every bad input (exit 2) named by its key: rate, concurrency, duration ceiling, TLS in production,
workers on accelerator pools or beyond the system nodes, a rate the edge would refuse."""

from __future__ import annotations

import copy

import pytest
import yaml

from inference_platform.catalog import load_generator
from inference_platform.errors import CommandError
from inference_platform.settings import load_settings, stack_files

TAGS = {"owner": "team", "costCenter": "cc-1"}
P = "inference-platform:"


def test_defaults_and_sizing():
    settings = load_settings({"tags": TAGS}, project="p", stack="dev", region="us-west-2")
    cfg = settings.load_test
    assert (cfg.enabled, cfg.target_rate, cfg.duration_seconds, cfg.max_duration_seconds) == (False, 100, 300, 1800)
    assert cfg.per_worker_rate == load_generator.MEASURED_PER_WORKER_RPS == 701
    # 100 requests/s at 70 % of 701 per worker: one worker; the budget leaves room for Poisson bursts.
    assert cfg.planned_workers == 1 and cfg.request_budget == 36_000
    assert load_generator.workers_for(100_000) == 204
    assert settings.verification.job.active_deadline_seconds == 1800
    assert cfg.protocol == "openai"


@pytest.fixture
def prod(repo):
    return yaml.safe_load((repo / "stacks" / "Pulumi.prod.yaml").read_text())


def load_with(repo, tmp_path, stack, changes: dict):
    stack = copy.deepcopy(stack)
    for key, value in changes.items():
        stack["config"][P + key] = value
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    return stack_files.load("prod", stack_file=path)


def problems(repo, tmp_path, stack, changes) -> str:
    with pytest.raises(CommandError) as err:
        load_with(repo, tmp_path, stack, changes)
    assert err.value.exit_code == 2
    return str(err.value)


# prod's edge: the load test needs a client of a tier sized for it and a WAF per-IP rule that admits it.
BIG_TIER = {
    "auth": {"clients": {"chat": {"tier": "interactive"}, "batch": {"tier": "bulk"}, "load": {"tier": "load"}}},
    "rateLimits": {
        "tiers": {
            "interactive": {"requestsPerMinute": 1200, "concurrentStreams": 64},
            "bulk": {"requestsPerMinute": 300, "concurrentStreams": 16},
            "load": {"requestsPerMinute": 60000, "concurrentStreams": 4096},
        }
    },
}


def edge_for_load(prod, **waf):
    edge = copy.deepcopy(prod["config"][P + "edge"]) | BIG_TIER
    edge["waf"] = {**edge.get("waf", {}), "ipRateLimit": 100_000, **waf}
    return edge


def test_prod_with_a_load_test_sized_for_its_edge_loads(repo, tmp_path, prod):
    settings = load_with(
        repo,
        tmp_path,
        prod,
        {"edge": edge_for_load(prod), "loadTest": {"enabled": True, "targetRate": 500, "client": "load"}},
    )
    assert settings.load_test.planned_workers == 2 and settings.verification.enabled


@pytest.mark.parametrize(
    ("load_test", "key", "words"),
    [
        ({"targetRate": 0}, "loadTest.targetRate", "greater than 0"),
        ({"targetRate": -5}, "loadTest.targetRate", "greater than 0"),
        ({"concurrencyPerWorker": 0}, "loadTest.concurrencyPerWorker", "greater than or equal to 1"),
        ({"workers": 0}, "loadTest.workers", "greater than or equal to 1"),
        ({"durationSeconds": 3600}, "loadTest.durationSeconds", "above maxDurationSeconds (1800)"),
        ({"url": "http://api.example.com"}, "loadTest.url", "production stack is tested through TLS"),
        ({"nodePool": "inference"}, "loadTest.nodePool", "accelerator pool"),
        ({"nodePool": "small-models"}, "loadTest.nodePool", "never run on accelerator nodes"),
        ({"workers": 1, "targetRate": 5000}, "loadTest.workers", "needs at least 8"),
        ({"targetRate": 100_000}, "loadTest.workers", "cluster.systemNodeGroup.maxSize is 4"),
        ({"client": "nobody"}, "loadTest.client", "expected one of edge.auth.clients"),
        # Issue 20: the Triton protocol is retired, its name refused saying why.
        (
            {"protocol": "triton"},
            "loadTest.protocol",
            "got 'triton', which is retired: the edge serves only the OpenAI",
        ),
        ({"protocol": "grpc"}, "loadTest.protocol", "got 'grpc'; allowed: 'openai'"),
    ],
)
def test_bad_load_test_input_exits_2_naming_the_key(repo, tmp_path, prod, load_test, key, words):
    message = problems(
        repo,
        tmp_path,
        prod,
        {"edge": edge_for_load(prod), "loadTest": {"enabled": True, "client": "load", **load_test}},
    )
    line = next((line for line in message.splitlines() if key + ":" in line), None)
    assert line is not None and words in line, message


def test_the_edge_limits_are_checked_against_the_rate(repo, tmp_path, prod):
    message = problems(repo, tmp_path, prod, {"loadTest": {"enabled": True, "targetRate": 500, "client": "chat"}})
    assert (
        "loadTest.targetRate: got 500 requests/s; client 'chat' may send 1200 a minute (edge.rateLimits.tiers.interactive.requestsPerMinute"
        in message
    )
    assert "WAF's per-IP rule (edge.waf.ipRateLimit 3000 per 300 s) admits 30/s" in message


@pytest.mark.parametrize(
    ("verification", "key", "words"),
    [
        ({"url": "http://triton.inference:8000"}, "verification.url", "production stack is tested through TLS"),
        ({"client": "nobody"}, "verification.client", "expected one of edge.auth.clients"),
        ({"concurrencyPerReplica": 64}, "verification.concurrencyPerReplica", "may hold 64 streams"),
        ({"job": {"activeDeadlineSeconds": 300}}, "verification.job.activeDeadlineSeconds", "needs up to 480"),
        ({"durationSeconds": 900}, "verification.durationSeconds", "above maxDurationSeconds (600)"),
    ],
)
def test_bad_verification_job_input_exits_2_naming_the_key(repo, tmp_path, prod, verification, key, words):
    current = prod["config"][P + "verification"]
    message = problems(repo, tmp_path, prod, {"verification": {**current, **verification}})
    line = next((line for line in message.splitlines() if key + ":" in line), None)
    assert line is not None and words in line, message


def test_production_without_an_edge_has_no_tls_target(repo, tmp_path, prod):
    stack = copy.deepcopy(prod)
    del stack["config"][P + "edge"]
    message = problems(repo, tmp_path, stack, {})
    assert "verification.url: unset and edge.domain is unset" in message


def test_plan_exits_2_naming_the_load_test_key(repo, tmp_path, prod, capsys):
    from inference_platform.inferctl.cli import main

    stack = copy.deepcopy(prod)
    stack["config"][P + "loadTest"] = {"enabled": True, "targetRate": 0, "concurrencyPerWorker": 0}
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(yaml.safe_dump(stack))
    code = main(["plan", "--stack", "prod", "--stack-file", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "loadTest.targetRate" in err and "loadTest.concurrencyPerWorker" in err
