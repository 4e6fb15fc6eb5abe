"""The EKS control plane: private endpoint by default, encrypted secrets, every log type to an encrypted
group, access entries only, and one Kubernetes provider built from the cluster."""

from __future__ import annotations

import json

import pytest

from inference_platform.components.cluster.eks_cluster import (
    LOG_TYPES,
    Cluster,
    ClusterArgs,
    kubeconfig_document,
    principal_key,
)
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.offline_plan.redact import SECRET_SIG, SECRET_SIG_KEY
from tests.conftest import by_type, one

ADMIN = "arn:aws:iam::123456789012:role/platform-admin"
VIEWER = "arn:aws:iam::123456789012:role/aws-reserved/sso.amazonaws.com/OnCall"


def cluster(run_components, **overrides):
    values = dict(
        cluster_name="demo",
        kubernetes_version="1.36",
        subnet_ids=["subnet-a", "subnet-b"],
        secrets_key_arn="arn:aws:kms:us-west-2:123456789012:key/secrets",
        logs_key_arn="arn:aws:kms:us-west-2:123456789012:key/logs",
        region="us-west-2",
    )
    values.update(overrides)
    return run_components(lambda: Cluster("cluster", ClusterArgs(**values))).resources


def test_private_endpoint_encrypted_secrets_all_logs_and_api_authentication(run_components):
    resources = cluster(run_components)
    eks = one(resources, "cluster-eks")
    vpc = eks.inputs["vpcConfig"]
    assert vpc["endpointPrivateAccess"] is True and vpc["endpointPublicAccess"] is False
    assert "publicAccessCidrs" not in vpc
    assert eks.inputs["encryptionConfig"] == {"provider": {"keyArn": "arn:aws:kms:us-west-2:123456789012:key/secrets"},
                                              "resources": ["secrets"]}  # fmt: skip
    assert eks.inputs["enabledClusterLogTypes"] == list(LOG_TYPES)
    assert eks.inputs["accessConfig"] == {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}
    assert eks.inputs["bootstrapSelfManagedAddons"] is False and eks.inputs["version"] == "1.36"
    assert eks.inputs["upgradePolicy"] == {"supportType": "STANDARD"}


def test_the_log_group_exists_first_with_the_eks_name_key_and_retention(run_components):
    resources = cluster(run_components, log_retention_days=365)
    logs = one(resources, "cluster-control-plane-logs")
    assert logs.inputs["name"] == "/aws/eks/demo/cluster" and logs.inputs["retentionInDays"] == 365
    assert logs.inputs["kmsKeyId"].endswith("key/logs")
    assert logs.urn in one(resources, "cluster-eks").dependencies


def test_public_endpoint_only_for_the_listed_cidrs(run_components):
    vpc = one(cluster(run_components, public_access_cidrs=["198.51.100.0/24"]), "cluster-eks").inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["198.51.100.0/24"]


def test_control_plane_role_trusts_eks_and_has_only_the_cluster_policy(run_components):
    resources = cluster(run_components)
    trust = json.loads(one(resources, "cluster-control-plane-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {"Service": "eks.amazonaws.com"}
    attachments = by_type(resources, "aws:iam/rolePolicyAttachment:RolePolicyAttachment")
    assert [a.inputs["policyArn"] for a in attachments] == ["arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"]


def test_admins_get_cluster_admin_viewers_get_view_and_the_provider_waits_for_them(run_components):
    resources = cluster(run_components, admin_principal_arns=[ADMIN], read_only_principal_arns=[VIEWER])
    entries = {e.inputs["principalArn"]: e for e in by_type(resources, "aws:eks/accessEntry:AccessEntry")}
    assert set(entries) == {ADMIN, VIEWER} and all(e.inputs["type"] == "STANDARD" for e in entries.values())
    policies = {
        a.name: a.inputs["policyArn"].rsplit("/", 1)[1]
        for a in by_type(resources, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")
    }
    assert policies == {
        "cluster-admin-role-platform-admin-policy": "AmazonEKSClusterAdminPolicy",
        "cluster-view-role-oncall-policy": "AmazonEKSViewPolicy",
    }
    provider = one(resources, "cluster-k8s")
    associations = {a.urn for a in by_type(resources, "aws:eks/accessPolicyAssociation:AccessPolicyAssociation")}
    assert associations <= set(provider.dependencies)


def test_kubeconfig_is_secret_and_authenticates_with_aws_eks_get_token(run_components):
    provider = one(cluster(run_components), "cluster-k8s")
    wrapped = provider.inputs["kubeconfig"]
    assert wrapped[SECRET_SIG_KEY] == SECRET_SIG
    config = json.loads(wrapped["value"])
    (user,) = config["users"]
    assert user["user"]["exec"]["command"] == "aws"
    assert user["user"]["exec"]["args"][:4] == ["eks", "get-token", "--cluster-name", "demo"]
    server = config["clusters"][0]["cluster"]
    assert server["server"].startswith("https://") and server["certificate-authority-data"]


def test_production_protects_the_cluster_and_turns_on_deletion_protection(run_components):
    eks = one(cluster(run_components, protect=True, deletion_protection=True), "cluster-eks")
    assert eks.protect is True and eks.inputs["deletionProtection"] is True
    assert one(cluster(run_components), "cluster-eks").protect is False


def test_kubeconfig_document_shape():
    doc = kubeconfig_document("c", "https://x", "Y2E=", "eu-west-1")
    assert doc["current-context"] == "eks" and "--region" in doc["users"][0]["user"]["exec"]["args"]


def test_principal_keys_are_stable_names():
    assert principal_key(ADMIN) == "role-platform-admin"
    assert principal_key("arn:aws:iam::123456789012:user/ci") == "user-ci"
    with pytest.raises(ValueError):
        principal_key("arn:aws:iam::123456789012:root")


def test_bad_arguments_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        Cluster(
            "c",
            ClusterArgs(
                cluster_name="-bad",
                kubernetes_version="1.36",
                subnet_ids=["subnet-a"],
                secrets_key_arn="k",
                logs_key_arn="k",
                region="us-west-2",
                support_type="FOREVER",
                admin_principal_arns=[ADMIN, "root"],
                read_only_principal_arns=[ADMIN],
            ),
        )
    text = str(err.value)
    assert all(w in text for w in ("-bad", "two zones", "FOREVER", "'root'", "listed twice"))


def test_each_private_access_source_gets_one_https_rule_on_the_cluster_security_group(run_components):
    resources = cluster(run_components, private_access_cidrs=["10.255.0.0/24"],
                        private_access_security_group_ids=["sg-0123456789abcdef0"])  # fmt: skip
    rules = {r.name: r for r in by_type(resources, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")}
    assert set(rules) == {"cluster-api-from-10-255-0-0-24", "cluster-api-from-sg-0123456789abcdef0"}
    eks = one(resources, "cluster-eks")
    for rule in rules.values():
        assert (rule.inputs["ipProtocol"], rule.inputs["fromPort"], rule.inputs["toPort"]) == ("tcp", 443, 443)
        assert rule.property_dependencies["securityGroupId"] == [eks.urn] and rule.inputs["description"]
    assert rules["cluster-api-from-10-255-0-0-24"].inputs["cidrIpv4"] == "10.255.0.0/24"
    provider = one(resources, "cluster-k8s")
    assert {r.urn for r in rules.values()} <= set(provider.dependencies)


def test_private_access_sources_are_validated():
    args = dict(cluster_name="demo", kubernetes_version="1.36", subnet_ids=["subnet-a", "subnet-b"],
                secrets_key_arn="k", logs_key_arn="k", region="us-west-2")  # fmt: skip
    with pytest.raises(ComponentArgsError) as err:
        Cluster("c", ClusterArgs(**args, private_access_cidrs=["0.0.0.0/0", "10.1.0.0/33"],
                                 private_access_security_group_ids=["runners"]))  # fmt: skip
    assert "admit everyone" in str(err.value) and "10.1.0.0/33" in str(err.value) and "'runners'" in str(err.value)
