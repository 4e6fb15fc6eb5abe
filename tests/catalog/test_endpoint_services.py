"""Interface endpoint catalogue (issue 9 §4): the complete set per provisioning mode, and its cost."""

from __future__ import annotations

import pytest

from inference_platform.catalog import endpoint_services as es


@pytest.mark.parametrize(
    ("karpenter", "fsx", "present", "absent"),
    [
        (True, False, {"sqs", "ssm", "eks", "eks-auth", "secretsmanager", "kms", "elasticloadbalancing"},
         {"autoscaling", "fsx"}),
        (False, True, {"autoscaling", "fsx", "eks-auth"}, {"sqs"}),
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
