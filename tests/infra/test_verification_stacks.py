"""The verification Job and the load test in the stacks: prod's plan verifies after the rollout and the
edge; prod with a 100,000 requests/s load test plans the Locust master and 204 workers on the system
nodes, schema-valid, with no mandatory violation, and ``inferctl cost`` prices the workers."""

from __future__ import annotations

import copy
import json

import pytest
import yaml

from inference_platform.catalog.load_generator import workers_for
from inference_platform.inferctl.cost.summary import resources_as_dicts
from inference_platform.inferctl.plan.command import make_plan
from inference_platform.planners import costing
from tests.components.verification.test_verification_job import validate_builtin
from tests.conftest import REPO, by_type

P = "inference-platform:"


def test_prod_verifies_through_the_edge_after_the_rollout(stack_plan):
    plan = stack_plan("prod")
    resources = plan.run.resources
    (job,) = [j for j in by_type(resources, "kubernetes:batch/v1:Job") if j.name == "verification-job"]
    deps = set(job.dependencies)
    assert any(d.endswith("kubernetes:apps/v1:Deployment::inference-deployment") for d in deps)
    assert any("inference:edge:PublicEndpoint" in d for d in deps) and any("EdgeGateway" in d for d in deps)
    command = job.inputs["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[command.index("--url") + 1] == "https://api.example.com"
    # The chat client's key, and only it, is what the Job's class mounts.
    (spc,) = [r for r in resources if r.name == "verification-secrets-class"]
    objects = yaml.safe_load(spc.inputs["spec"]["parameters"]["objects"])
    assert len(objects) == 1 and objects[0]["objectAlias"] == "api-key"
    (read,) = [r for r in resources if r.name == "verification-secrets-read"]
    (statement, _) = json.loads(read.inputs["policy"])["Statement"]
    assert len(statement["Resource"]) == 1 and "/edge/clients/chat-" in statement["Resource"][0]
    assert not [v for v in plan.violations if v.mandatory]
    validate_builtin([r for r in resources if "inference:verification:" in r.urn])


@pytest.fixture(scope="module")
def load_test_plan(tmp_path_factory):
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    config = copy.deepcopy(doc["config"])
    edge = config[P + "edge"]
    # A client of its own whose tier admits the load, and a WAF per-IP rule above it (3 NAT addresses).
    edge["auth"]["clients"]["loadtest"] = {"tier": "loadtest"}
    edge.setdefault("rateLimits", {}).setdefault("tiers", {})["loadtest"] = {
        "requestsPerMinute": 6_000_000,
        "concurrentStreams": 400_000,
    }
    edge["waf"]["ipRateLimit"] = 20_000_000
    config[P + "cluster"]["systemNodeGroup"] = {"instanceTypes": ["m7i.2xlarge"], "minSize": 2, "maxSize": 34}
    config[P + "loadTest"] = {"enabled": True, "targetRate": 100_000, "client": "loadtest", "durationSeconds": 300}
    path = tmp_path_factory.mktemp("stack") / "Pulumi.prod-loadtest.yaml"
    path.write_text(yaml.safe_dump({**doc, "config": config}))
    return make_plan(REPO, "prod", stack_file=path)


def test_a_peak_load_test_plans_on_system_nodes_and_is_priced(load_test_plan):
    resources = load_test_plan.run.resources
    assert not [v for v in load_test_plan.violations if v.mandatory], load_test_plan.violations
    mine = [r for r in resources if "inference:verification:LoadTest" in r.urn]
    validate_builtin(mine)
    (workers,) = [j for j in by_type(mine, "kubernetes:batch/v1:Job") if j.name == "load-test-worker-job"]
    assert workers.inputs["spec"]["parallelism"] == workers_for(100_000) == 204
    estimate = costing.estimate(resources_as_dicts(resources), region="us-east-1")
    (line,) = [line for line in estimate.lines if line.category == "EC2 load test"]
    assert "204 workers x 1 vCPU on 30 x m7i.2xlarge" in line.basis
    # The default of 4 runs a month of 5 minutes each, 30 nodes at $0.4032/h.
    assert line.monthly_expected == pytest.approx(4 * 30 * 0.4032 * 300 / 3600, rel=1e-3)
