"""The asynchronous lane as the shipped stacks plan it: on in prod and npu, off in dev; wired to the stack's key,
log bucket, serving rollout, KEDA and edge in the order a first `pulumi up` needs."""

from __future__ import annotations

import json

import pytest

from tests.conftest import by_type, one


def _urns(plan, fragment):
    return [r for r in plan.run.resources if fragment in r.urn]


def test_dev_plans_no_lane(stack_plan):
    assert not _urns(stack_plan("dev"), "inference:batch:")


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_the_lane_uses_the_stacks_key_and_log_bucket(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    key = one(resources, "keys-storage")
    for queue in by_type(resources, "aws:sqs/queue:Queue"):
        if "inference:batch:" in queue.urn:
            assert queue.inputs["kmsMasterKeyId"] == key.outputs["arn"]
            assert key.urn in queue.property_dependencies["kmsMasterKeyId"]
    logging = one(resources, "batch-bucket-bucket-logging")
    assert one(resources, "model-store-logs").urn in logging.property_dependencies["targetBucket"]
    log_policy = json.loads(one(resources, "model-store-logs-policy").inputs["policy"])
    sources = log_policy["Statement"][-1]["Condition"]["ArnLike"]["aws:SourceArn"]
    prefix = one(resources, "batch-bucket-bucket").inputs["bucketPrefix"]
    assert f"arn:aws:s3:::{prefix}*" in sources


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_keda_starts_after_its_queue_role_and_both_scaled_objects_read_the_work_queue(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    keda = one(resources, "keda-release")
    association = one(resources, "batch-queue-monitor-association")
    assert association.inputs["namespace"] == "keda" and association.inputs["serviceAccount"] == "keda-operator"
    assert association.urn in created_before(resources, keda), "Pod Identity injects credentials at pod creation"
    work = one(resources, "batch-queues-work")
    workers = one(resources, "batch-scaling-scaled-object")
    serving = one(resources, "inference-autoscaling-scaled-object")
    for scaled in (workers, serving):
        (trigger,) = [t for t in scaled.inputs["spec"]["triggers"] if t["type"] == "aws-sqs-queue"]
        assert trigger["metadata"]["queueURL"] == work.outputs["url"]
        assert work.urn in scaled.property_dependencies["spec"]
    assert "(batch ?? 0) > 0" in serving.inputs["spec"]["advanced"]["scalingModifiers"]["formula"]
    auth = one(resources, "inference-queue-auth-trigger-authentication")
    assert auth.inputs["metadata"]["namespace"] == serving.inputs["metadata"]["namespace"]
    assert auth.urn in serving.dependencies


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_the_workers_call_the_serving_endpoint_inside_the_cluster_and_the_edge_routes_to_the_api(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    worker = one(resources, "batch-workloads-worker-deployment")
    env = {e["name"]: e["value"] for e in worker.inputs["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["BATCH_SERVING_URL"].endswith(".svc.cluster.local:9000")
    assert env["BATCH_QUEUE_URL"] == one(resources, "batch-queues-work").outputs["url"]
    route = one(resources, "edge-gateway-httproute-inference-edge-batch")
    (backend,) = {(b["name"], b["port"]) for rule in route.inputs["spec"]["rules"] for b in rule["backendRefs"]}
    assert backend == ("batch-api", 8080)
    grant = one(resources, "edge-gateway-referencegrant-inference-edge-routes-batch")
    assert one(resources, "batch-workloads-namespace-namespace").urn in created_before(resources, grant)


def created_before(resources, resource) -> set[str]:
    """What the engine has created before ``resource``: the closure of its parent, dependencies and property
    dependencies (a child registers after its parent, a component after its own dependencies), as
    tests/infra/test_first_up_ordering.py measures it."""
    by_urn = {r.urn: r for r in resources}
    seen: set[str] = set()
    todo = [resource.urn]
    while todo:
        r = by_urn[todo.pop()]
        direct = {*r.dependencies, *(u for us in r.property_dependencies.values() for u in us)}
        if r.parent:
            direct.add(r.parent)
        for urn in direct - seen:
            if urn in by_urn:
                seen.add(urn)
                todo.append(urn)
    return seen


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_production_protects_the_lanes_bucket_and_no_policy_objects(stack_plan, stack):
    plan = stack_plan(stack)
    bucket = one(plan.run.resources, "batch-bucket-bucket")
    assert bucket.protect and bucket.retain_on_delete
    assert not [v for v in plan.violations if "batch" in v.urn]


def test_dev_with_the_lane_turned_on_plans_cleanly(repo, tmp_path):
    """Off by default in dev; a developer who turns it on (one API replica, one worker) gets a plan the pack passes."""
    import yaml

    from inference_platform.inferctl.plan.command import make_plan

    stack = yaml.safe_load((repo / "stacks" / "Pulumi.dev.yaml").read_text())
    stack["config"]["inference-platform:batch"] = {
        "enabled": True,
        "image": {"tag": "2026.12.1"},
        "api": {"replicas": 1},
        "workers": {"maxReplicas": 1},
    }
    path = tmp_path / "Pulumi.dev.yaml"
    path.write_text(yaml.safe_dump(stack))
    plan = make_plan(repo, "dev", stack_file=path)
    assert _urns(plan, "inference:batch:BatchWorkloads") and plan.violations == []
