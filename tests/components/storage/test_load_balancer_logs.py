"""The log bucket admits the edge's ALB access logs: the regional ELB account where AWS has one, the log
delivery service principal in regions opened since August 2022, only under the ALB's prefix."""

from __future__ import annotations

import pytest

from inference_platform.components.storage.documents import (
    ELB_LOG_ACCOUNTS,
    load_balancer_log_statement,
    log_bucket_policy,
)

BUCKET = "arn:aws:s3:::p-logs-1"


@pytest.mark.parametrize(
    ("region", "principal"),
    [
        ("us-west-2", {"AWS": "arn:aws:iam::797873946194:root"}),
        ("us-east-1", {"AWS": "arn:aws:iam::127311923021:root"}),
        ("ap-southeast-4", {"Service": "logdelivery.elasticloadbalancing.amazonaws.com"}),
        ("mx-central-1", {"Service": "logdelivery.elasticloadbalancing.amazonaws.com"}),
    ],
)
def test_the_principal_follows_the_region(region, principal):
    statement = load_balancer_log_statement(BUCKET, "alb/", "123456789012", region)
    assert statement["Principal"] == principal
    assert statement["Action"] == "s3:PutObject"
    assert statement["Resource"] == f"{BUCKET}/alb/AWSLogs/123456789012/*"


def test_the_log_bucket_policy_keeps_its_rules_and_adds_the_alb():
    alb = load_balancer_log_statement(BUCKET, "alb", "123456789012", "us-east-2")
    sources = ["arn:aws:s3:::p-models-1"]
    policy = log_bucket_policy(BUCKET, sources, "123456789012", [alb])
    sids = [s["Sid"] for s in policy["Statement"]]
    assert "AllowLoadBalancerAccessLogs" in sids and "AllowServerAccessLogDelivery" in sids
    assert log_bucket_policy(BUCKET, sources, "123456789012")["Statement"] == [
        s for s in policy["Statement"] if s["Sid"] != "AllowLoadBalancerAccessLogs"
    ]


def test_every_account_is_twelve_digits():
    assert all(len(a) == 12 and a.isdigit() for a in ELB_LOG_ACCOUNTS.values())
