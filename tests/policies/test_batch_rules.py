"""The batch lane's rules: each passes the lane's own components and fails each way it guards against."""

from __future__ import annotations

import dataclasses
import json

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s
import pytest

from inference_platform.components.batch.bucket import BatchBucket
from inference_platform.components.batch.queues import BatchQueues
from inference_platform.components.batch.workloads import BatchWorkloads
from inference_platform.components.compute.karpenter import Karpenter, KarpenterArgs
from tests.components.batch.test_bucket import bucket_args
from tests.components.batch.test_queues import KEY, queue_args
from tests.components.batch.test_workloads import workload_args

RULES = (
    "sqs-queues-encrypted",
    "sqs-queues-tls-only",
    "batch-queue-dead-letter",
    "batch-visibility-covers-generation",
    "batch-workers-off-accelerators",
    "batch-files-expire",
)
SYSTEM = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "node-role", "operator": "In", "values": ["system"]}]}]
        }
    }
}


class _Lane(pulumi.ComponentResource):
    """A stand-in ``inference:batch`` parent for hand-built lane resources."""

    def __init__(self, name: str) -> None:
        super().__init__("inference:batch:Probe", name, None, None)


def _lane_program(*, visibility: int = 660, timeout: int = 600, receive: int = 5):
    """The lane's own components wired as infra/batch.py wires them (the workers' spec names the queue's URL)."""

    def program() -> None:
        queues = BatchQueues("lane", queue_args(visibility_timeout_seconds=visibility, max_receive_count=receive))
        lane = dataclasses.replace(workload_args().lane, queue_url=queues.queue_url, request_timeout_seconds=timeout)
        BatchWorkloads("batch-workloads", workload_args(lane=lane, queue_arn=queues.queue_arn))
        BatchBucket("batch", bucket_args())

    return program


@pytest.mark.parametrize("rule", RULES)
def test_the_lanes_components_pass_every_rule(violations, rule):
    assert violations(_lane_program(), rule) == []


def test_the_karpenter_interruption_queue_passes_the_general_queue_rules(violations):
    def program() -> None:
        provider = k8s.Provider("k8s", kubeconfig="{}")
        Karpenter(
            "karpenter",
            KarpenterArgs(cluster_name="demo", cluster="demo", cluster_endpoint="https://api", node_role_arn="arn:aws:iam::123456789012:role/nodes",
                          region="us-west-2", account_id="123456789012", provider=provider),
        )  # fmt: skip

    assert violations(program, "sqs-queues-encrypted") == []
    assert violations(program, "sqs-queues-tls-only") == []


def _queue(name: str, parent=None, **inputs):
    opts = pulumi.ResourceOptions(parent=parent) if parent is not None else None
    return aws.sqs.Queue(name, **inputs, opts=opts)


def test_an_unencrypted_queue_fails(violations):
    found = violations(lambda: _queue("q"), "sqs-queues-encrypted")
    assert any("not encrypted at rest" in v.message for v in found), found


@pytest.mark.parametrize(
    "inputs",
    [{"sqs_managed_sse_enabled": True}, {"kms_master_key_id": "alias/aws/sqs"}],
    ids=["sse-sqs", "aws-managed-key"],
)
def test_a_lane_queue_without_the_customer_key_fails(violations, inputs):
    found = violations(lambda: _queue("q", _Lane("lane"), **inputs), "sqs-queues-encrypted")
    assert any("customer-managed key" in v.message for v in found), found


def test_a_queue_that_redrives_is_a_work_queue_wherever_it_is(violations):
    program = lambda: _queue(  # noqa: E731
        "q",
        sqs_managed_sse_enabled=True,
        redrive_policy=json.dumps({"deadLetterTargetArn": "arn", "maxReceiveCount": 3}),
    )
    assert any("work queue" in v.message for v in violations(program, "sqs-queues-encrypted"))


def test_a_queue_without_a_tls_only_policy_fails(violations):
    def program() -> None:
        queue = _queue("q", kms_master_key_id=KEY)
        allow = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "sqs:*",
                                                         "Resource": "*"}]}  # fmt: skip
        aws.sqs.QueuePolicy("q-policy", queue_url=queue.url, policy=json.dumps(allow))

    found = violations(program, "sqs-queues-tls-only")
    assert any("denies requests without TLS" in v.message for v in found), found


def test_a_lane_work_queue_without_a_dead_letter_queue_fails(violations):
    found = violations(lambda: _queue("work", _Lane("lane"), kms_master_key_id=KEY), "batch-queue-dead-letter")
    assert any("no redrive policy" in v.message for v in found), found


def test_a_receive_limit_beyond_the_configured_one_fails(violations):
    found = violations(_lane_program(receive=5), "batch-queue-dead-letter", {"maxReceiveCount": 3})
    assert any("maxReceiveCount is 5" in v.message for v in found), found


def test_a_dead_letter_queue_that_forgets_sooner_than_its_work_queue_fails(violations):
    def program() -> None:
        lane = _Lane("lane")
        dead = _queue("dead", lane, kms_master_key_id=KEY, message_retention_seconds=3600)
        _queue("work", lane, kms_master_key_id=KEY, message_retention_seconds=86_400,
               redrive_policy=dead.arn.apply(lambda a: json.dumps({"deadLetterTargetArn": a, "maxReceiveCount": 5})))  # fmt: skip

    found = violations(program, "batch-queue-dead-letter")
    assert any("expire before anyone reads it" in v.message for v in found), found


def test_a_visibility_timeout_shorter_than_the_longest_generation_fails(violations):
    found = violations(_lane_program(visibility=620, timeout=600), "batch-visibility-covers-generation")
    assert any("does not cover the workers' longest generation" in v.message for v in found), found
    assert violations(_lane_program(visibility=620, timeout=600), "batch-visibility-covers-generation",
                      {"marginSeconds": 10}) == []  # fmt: skip


def test_workers_without_a_request_timeout_fail(violations):
    def program() -> None:
        labels = {"app.kubernetes.io/name": "batch-worker"}
        k8s.apps.v1.Deployment(
            "w",
            metadata={"name": "w", "namespace": "batch", "labels": labels},
            spec={
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"affinity": SYSTEM, "containers": [{"name": "w", "image": "i"}]},
                },
            },
        )

    found = violations(program, "batch-visibility-covers-generation")
    assert any("BATCH_REQUEST_TIMEOUT_SECONDS" in v.message for v in found), found


@pytest.mark.parametrize(
    ("pod", "expected"),
    [
        ({"containers": [{"name": "w", "image": "i"}]}, "not pinned to the system nodes"),
        (
            {"affinity": SYSTEM, "tolerations": [{"operator": "Exists"}], "containers": [{"name": "w", "image": "i"}]},
            "(every taint)",
        ),
        (
            {
                "affinity": SYSTEM,
                "containers": [{"name": "w", "image": "i", "resources": {"limits": {"aws.amazon.com/neuron": "1"}}}],
            },
            "limits aws.amazon.com/neuron",
        ),
    ],
)
@pytest.mark.parametrize("app", ["batch-api", "batch-worker"])
def test_lane_pods_on_accelerators_fail(violations, pod, expected, app):
    labels = {"app.kubernetes.io/name": app}
    program = lambda: k8s.apps.v1.Deployment(  # noqa: E731
        "w",
        metadata={"name": "w", "namespace": "batch", "labels": labels},
        spec={"selector": {"matchLabels": labels}, "template": {"metadata": {"labels": labels}, "spec": pod}},
    )
    found = violations(program, "batch-workers-off-accelerators")
    assert any(expected in v.message and v.message.startswith(app) for v in found), found


def test_a_lane_bucket_that_keeps_everything_fails(violations):
    def program() -> None:
        aws.s3.Bucket("files", bucket_prefix="lane-", opts=pulumi.ResourceOptions(parent=_Lane("lane")))

    found = violations(program, "batch-files-expire")
    assert any("kept (and billed) forever" in v.message for v in found), found
