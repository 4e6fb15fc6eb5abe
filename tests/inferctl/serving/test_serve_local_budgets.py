"""serve-local --batch with monthly budgets (issue 30): the lane's two roles get ``BATCH_BUDGETS`` naming the local
edge's rate-limit stand-in (its port chosen before either starts) and the edge's budget descriptors, as the cluster
renders them; without a budget, neither the variable nor a port."""

from __future__ import annotations

import json
from types import SimpleNamespace

from inference_platform.batch.config import api_config, worker_config
from inference_platform.components.edge.token_limits import budget_descriptors
from inference_platform.inferctl.serving.local_batch import ServingTarget, _environments
from inference_platform.inferctl.serving.serve_local import _lane_budgets
from inference_platform.settings import load_settings, stack_files

TAGS = {"owner": "team", "costCenter": "cc-1"}


def test_the_lane_gets_the_edges_budgets_and_none_without_them(tmp_path):
    edge = {
        "auth": {"clients": {"alpha": {"tier": "std"}}},
        "rateLimits": {"tiers": {"std": {}}},
        "tokenLimits": {"clients": {"alpha": {"tokensPerMonth": 5_000_000}}},
    }
    policy = load_settings({"tags": TAGS, "edge": edge}, project="p", stack="s", region="us-west-2").edge.policy()
    port, budgets = _lane_budgets(SimpleNamespace(policy=policy))
    assert port is not None and budgets is not None and json.loads(budgets)["address"] == f"127.0.0.1:{port}"
    settings = stack_files.load("dev")
    serving = ServingTarget(url="http://127.0.0.1:9000", metrics_url="http://127.0.0.1:8002/metrics", llm_model="m")
    names = {"bucket": "b", "queue": "http://127.0.0.1:1/q", "dead_letter": "http://127.0.0.1:1/d"}
    api_env, worker_env = _environments(settings, serving, names, tmp_path, budgets)
    base = {"AWS_REGION": "us-west-2"}
    for read in (api_config({**base, **api_env}), worker_config({**base, **worker_env})):
        assert read.common.budgets is not None
        assert {c: [list(e) for e in v] for c, v in read.common.budgets.clients.items()} == budget_descriptors(policy)
    plain = load_settings({"tags": TAGS}, project="p", stack="s", region="us-west-2").edge.policy()
    assert _lane_budgets(SimpleNamespace(policy=plain)) == (None, None)
    api_env, worker_env = _environments(settings, serving, names, tmp_path)
    assert "BATCH_BUDGETS" not in api_env and "BATCH_BUDGETS" not in worker_env
