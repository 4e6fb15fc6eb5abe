"""eks-endpoint-not-public, eks-secrets-encryption, eks-control-plane-logging: passing and failing fixtures."""

from __future__ import annotations

import pulumi_aws as aws

from components.cluster.eks_cluster import Cluster, ClusterArgs


def our_cluster(**kw):
    def program():
        Cluster(
            "c",
            ClusterArgs(cluster_name="demo", kubernetes_version="1.36", subnet_ids=["s-a", "s-b"],
                        secrets_key_arn="arn:aws:kms:us-west-2:123456789012:key/k", logs_key_arn="k", region="us-west-2", **kw),
        )  # fmt: skip

    return program


def bare(**kw):
    def program():
        aws.eks.Cluster("bare", role_arn="arn:aws:iam::123456789012:role/r", vpc_config={"subnet_ids": ["s-a"], **kw})

    return program


def test_our_cluster_passes_all_three(violations):
    for policy in ("eks-endpoint-not-public", "eks-secrets-encryption", "eks-control-plane-logging"):
        assert violations(our_cluster(), policy) == [], policy
    assert violations(our_cluster(public_access_cidrs=["198.51.100.0/24"]), "eks-endpoint-not-public") == []


def test_public_endpoint_by_default_or_open_to_the_world_fails(violations):
    (default,) = violations(bare(), "eks-endpoint-not-public")  # EKS's default: public and 0.0.0.0/0
    assert "0.0.0.0/0" in default.message
    assert violations(bare(endpoint_public_access=True, public_access_cidrs=["0.0.0.0/0"]), "eks-endpoint-not-public")
    assert violations(bare(endpoint_public_access=False), "eks-endpoint-not-public") == []


def test_a_cluster_without_secrets_encryption_or_logs_fails(violations):
    (found,) = violations(bare(), "eks-secrets-encryption")
    assert "envelope-encrypted" in found.message
    (logs,) = violations(bare(), "eks-control-plane-logging")
    assert "api, audit, authenticator, controllerManager, scheduler" in logs.message


def test_required_log_types_come_from_policy_config(violations):
    def program():
        aws.eks.Cluster(
            "audit-only", role_arn="r", vpc_config={"subnet_ids": ["s"]}, enabled_cluster_log_types=["audit"]
        )

    assert violations(program, "eks-control-plane-logging", {"requiredLogTypes": ["audit"]}) == []
    assert violations(program, "eks-control-plane-logging")
