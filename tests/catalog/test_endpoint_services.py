"""Interface endpoint catalogue (issue 9 §4): the complete set per provisioning mode, and its cost."""

from __future__ import annotations

import pytest

from inference_platform.catalog import endpoint_services as es


@pytest.mark.parametrize(
    ("karpenter", "fsx", "present", "absent"),
    [
        (True, False, {"sqs", "ssm", "eks", "eks-auth", "secretsmanager", "kms", "elasticloadbalancing"},
         {"autoscaling", "fsx"}),
        (False, True, {"autoscaling", "eks", "fsx", "eks-auth"}, {"sqs"}),
    ],
)  # fmt: skip
def test_required_services_follow_what_the_cluster_runs(karpenter, fsx, present, absent):
    services = es.required_services(karpenter=karpenter, fsx=fsx)
    assert present <= set(services) and not absent & set(services)
    assert {"ec2", "ecr.api", "ecr.dkr", "sts", "logs"} <= set(services)
    assert len(set(services)) == len(services) and not es.unknown(services)


def test_cost_is_per_endpoint_per_zone_hour():
    assert es.monthly_cost_usd(1, 1) == 7.3
    assert es.monthly_cost_usd(11, 3) == 240.9


@pytest.mark.parametrize("karpenter", [True, False])
def test_the_batch_lane_calls_sqs_from_the_private_subnets(karpenter):
    """Issue 28: prod's batch lane (API, workers, KEDA's aws-sqs-queue scaler) calls SQS, once."""
    services = es.required_services(karpenter=karpenter, fsx=True, batch=True)
    assert services.count("sqs") == 1 and not es.unknown(services)


def test_every_granted_prefix_is_classified_and_every_endpoint_is_known():
    assert es.endpoints_for_action("sqs:SendMessage") == ("sqs",)
    assert es.endpoints_for_action("ecr:BatchGetImage") == ("ecr.api", "ecr.dkr")
    assert es.endpoints_for_action("s3:GetObject") == ()  # the gateway endpoint
    assert es.endpoints_for_action("route53:ChangeResourceRecordSets") == ()
    assert es.endpoints_for_action("bedrock:InvokeModel") is None
    assert not es.unknown(s for services in es.IAM_PREFIX_ENDPOINTS.values() for s in services)
    assert not set(es.IAM_PREFIX_ENDPOINTS) & set(es.THROUGH_NAT)
