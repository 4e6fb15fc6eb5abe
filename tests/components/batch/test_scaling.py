"""KEDA's view of the lane's queue: the workers' ScaledObject and the queue trigger, held to what KEDA v2.20.2's
aws-sqs-queue scaler reads (tests/data/upstream/keda_v2.20.2_aws_sqs_queue_scaler.json, read from kedacore/keda at
the tag), and the serving ScaledObject that holds its day floor at night while the queue holds work."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from inference_platform.catalog.downstream_limits import KEDA_VERSION
from inference_platform.components.autoscaling.scaled_object import (
    ScaleTarget,
    ScalingPolicy,
    backfill_bounds,
    desired_replicas,
    formula,
    scaled_object_spec,
)
from inference_platform.components.batch.keda_objects import BatchScaling, BatchScalingArgs
from inference_platform.components.batch.scaling import (
    KEDA_OPERATOR_SERVICE_ACCOUNT,
    POD_IDENTITY_PROVIDER,
    TRIGGER_NAME,
    TRIGGER_TYPE,
    QueueSignal,
    desired_workers,
    trigger_authentication_spec,
    worker_scaled_object_spec,
)
from inference_platform.components.observability.promql import Scope
from inference_platform.planners.expr_lang import evaluate
from inference_platform.planners.night_schedule import NightSchedule
from tests.conftest import REPO, one

UPSTREAM = json.loads((REPO / "tests" / "data" / "upstream" / "keda_v2.20.2_aws_sqs_queue_scaler.json").read_text())
QUEUE = "https://sqs.us-east-1.amazonaws.com/123456789012/inference-platform-prod-batch-work-abc"
SIGNAL = QueueSignal(queue_url=QUEUE, region="us-east-1", messages_per_replica=8)
NIGHT = datetime(2026, 12, 3, 2, 0, tzinfo=UTC)
DAY = datetime(2026, 12, 3, 14, 0, tzinfo=UTC)


def test_the_pin_is_the_kedas_the_catalog_installs():
    assert KEDA_VERSION in UPSTREAM["source"] and UPSTREAM["source"].startswith("https://github.com/kedacore/keda/")


def test_the_worker_trigger_uses_only_metadata_the_scaler_reads_with_its_required_keys():
    spec = worker_scaled_object_spec(SIGNAL, deployment="batch-worker", min_replicas=0, max_replicas=8)
    (trigger,) = spec["triggers"]
    assert trigger["type"] == TRIGGER_TYPE == UPSTREAM["trigger_type"]
    known = UPSTREAM["metadata"]
    assert set(trigger["metadata"]) <= set(known)
    assert {k for k, v in known.items() if v.get("required")} <= set(trigger["metadata"])
    assert trigger["metadata"]["queueLength"] == "8" and trigger["metadata"]["scaleOnInFlight"] == "true"
    # The scaler takes the queue name from a URL path of exactly 3 parts ("/<account>/<name>").
    assert len(QUEUE.split("sqs.us-east-1.amazonaws.com", 1)[1].split("/")) == UPSTREAM["queue_url_path_parts"]
    assert trigger["authenticationRef"] == {"name": "batch-queue", "kind": "TriggerAuthentication"}
    crd = UPSTREAM["scaled_object_crd"]
    assert trigger["authenticationRef"]["kind"] in crd["trigger.authenticationRef.kind"]
    assert crd["trigger.metadata.additionalProperties.type"] == "string"
    assert all(isinstance(v, str) for v in trigger["metadata"].values()), "the CRD takes string metadata only"
    assert spec["minReplicaCount"] == 0 and spec["maxReplicaCount"] == 8
    assert (
        spec["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"] >= 600
    )


def test_keda_reads_the_queue_with_its_own_pod_identity():
    assert trigger_authentication_spec() == {"podIdentity": {"provider": POD_IDENTITY_PROVIDER}}
    assert POD_IDENTITY_PROVIDER in UPSTREAM["provider_values"]["values"]
    assert "roleArn" not in trigger_authentication_spec()["podIdentity"], UPSTREAM["pod_identity"]["without_role_arn"]
    assert UPSTREAM["operator_service_account"]["name"] == KEDA_OPERATOR_SERVICE_ACCOUNT


@pytest.mark.parametrize(
    ("queued", "in_flight", "expected"), [(0, 0, 0), (1, 0, 1), (8, 0, 1), (9, 0, 2), (40, 24, 8), (1000, 0, 8)]
)
def test_workers_follow_queued_plus_in_flight_messages_within_the_bounds(queued, in_flight, expected):
    assert desired_workers(queued, in_flight, messages_per_replica=8, min_replicas=0, max_replicas=8) == expected


def test_bad_bounds_are_refused():
    with pytest.raises(ValueError, match="min_replicas=3, max_replicas=2"):
        worker_scaled_object_spec(SIGNAL, deployment="w", min_replicas=3, max_replicas=2)


def test_the_component_orders_the_scaled_object_after_its_authentication(run_components):
    args = BatchScalingArgs(k8s_provider=None, namespace="batch", deployment="batch-worker", signal=SIGNAL)  # type: ignore[arg-type]
    resources = run_components(lambda: BatchScaling("batch-scaling", args)).resources
    scaled, auth = one(resources, "batch-scaling-scaled-object"), one(resources, "batch-scaling-auth")
    assert one(resources, "batch-scaling-auth-trigger-authentication").urn in scaled.dependencies
    assert auth.type == "inference:batch:QueueAuthentication"
    assert one(resources, "batch-scaling-auth-trigger-authentication").inputs["metadata"]["namespace"] == "batch"


def _serving(backfill: QueueSignal | None) -> ScalingPolicy:
    return ScalingPolicy(
        scope=Scope(namespace="inference", job="triton"),
        prometheus_url="http://prometheus:9090",
        min_replicas=4,
        max_replicas=8,
        night=NightSchedule(),
        backfill=backfill,
    )


def test_the_serving_formula_holds_the_day_floor_at_night_only_while_the_queue_holds_work():
    policy = _serving(SIGNAL)
    text = formula(policy)
    assert text is not None and f"({TRIGGER_NAME} ?? 0) > 0" in text
    quiet = {"requests": 0.0, "kv": 0.0, "day": 1.0}
    # Night, empty queue: the night floor (ceil(4 x 0.5) = 2); night, queued work: the day floor (4).
    assert evaluate(text, {**quiet, TRIGGER_NAME: 0.0}) == 2
    assert evaluate(text, {**quiet, TRIGGER_NAME: 120.0}) == 4
    # Day: the day floor whatever the queue; interactive demand above it still wins.
    assert evaluate(text, {**quiet, "day": 2.0, TRIGGER_NAME: 0.0}) == 4
    assert evaluate(text, {"requests": 48.0 * 6, "kv": 0.0, "day": 2.0, TRIGGER_NAME: 5.0}) == 6
    # Night: the night ceiling (ceil(8 x 0.5) = 4) still caps interactive demand, as without the lane:
    # batch work never adds replicas, it only keeps the floor.
    assert evaluate(text, {"requests": 48.0 * 6, "kv": 0.0, "day": 1.0, TRIGGER_NAME: 5.0}) == 4
    assert backfill_bounds(policy, policy.night).floor == 4


def test_the_serving_scaled_object_carries_the_queue_trigger_only_with_backfill():
    spec = scaled_object_spec(_serving(SIGNAL), ScaleTarget(name="triton"))
    names = [t["name"] for t in spec["triggers"]]
    assert TRIGGER_NAME in names and spec["minReplicaCount"] == 2
    plain = scaled_object_spec(_serving(None), ScaleTarget(name="triton"))
    assert TRIGGER_NAME not in [t["name"] for t in plain["triggers"]]
    assert formula(_serving(None)) is not None and f"{TRIGGER_NAME}" not in formula(_serving(None))


def test_desired_replicas_agrees_with_the_formula_at_night_and_by_day():
    policy = _serving(SIGNAL)
    quiet = {"requests": 0.0, "kv": 0.0}
    assert desired_replicas(policy, {**quiet, TRIGGER_NAME: 0.0}, current=4, instant=NIGHT) == 2
    assert desired_replicas(policy, {**quiet, TRIGGER_NAME: 10.0}, current=2, instant=NIGHT) == 4
    assert desired_replicas(policy, {**quiet, TRIGGER_NAME: 0.0}, current=4, instant=DAY) == 4


def test_backfill_without_a_night_schedule_is_refused():
    policy = ScalingPolicy(scope=Scope(namespace="inference", job="triton"), prometheus_url="http://p", night=None,
                           backfill=SIGNAL)  # fmt: skip
    assert any("backfill" in p for p in policy.problems())
