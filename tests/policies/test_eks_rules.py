"""eks-endpoint-not-public, eks-secrets-encryption, eks-control-plane-logging, eks-api-reachable,
eks-one-access-entry-per-principal: passing and failing fixtures."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from inference_platform.components.cluster.eks_cluster import Cluster, ClusterArgs


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


# eks-api-reachable: a private-only endpoint the stack's own Kubernetes objects cannot reach.


def cluster_with_objects(extra=None, **kw):
    def program():
        cluster = Cluster(
            "c",
            ClusterArgs(cluster_name="demo", kubernetes_version="1.36", subnet_ids=["s-a", "s-b"],
                        secrets_key_arn="arn:aws:kms:us-west-2:123456789012:key/k", logs_key_arn="k", region="us-west-2", **kw),
        )  # fmt: skip
        k8s.core.v1.Namespace("ns", metadata={"name": "apps"}, opts=pulumi.ResourceOptions(provider=cluster.provider))
        if extra:
            extra(cluster)

    return program


def test_a_private_endpoint_with_an_access_path_passes(violations):
    assert violations(cluster_with_objects(private_access_cidrs=["10.255.0.0/24"]), "eks-api-reachable") == []
    assert violations(cluster_with_objects(private_access_security_group_ids=["sg-0123456789abcdef0"]),
                      "eks-api-reachable") == []  # fmt: skip
    assert violations(cluster_with_objects(public_access_cidrs=["198.51.100.0/24"]), "eks-api-reachable") == []
    assert violations(our_cluster(), "eks-api-reachable") == []  # no Kubernetes objects to install


def test_a_private_endpoint_nothing_can_reach_fails_when_objects_go_through_it(violations):
    (found,) = violations(cluster_with_objects(), "eks-api-reachable")
    assert "c-eks" in found.message and "cluster.privateAccess" in found.message


def rule_on_cluster_sg(low, high, protocol="tcp"):
    def extra(cluster):
        aws.vpc.SecurityGroupIngressRule("rule", security_group_id=cluster.cluster_security_group_id,
                                         ip_protocol=protocol, from_port=low, to_port=high, cidr_ipv4="10.9.0.0/16")  # fmt: skip

    return extra


def test_a_rule_of_our_own_admitting_443_is_an_access_path(violations):
    assert violations(cluster_with_objects(rule_on_cluster_sg(443, 443)), "eks-api-reachable") == []
    assert violations(cluster_with_objects(rule_on_cluster_sg(None, None, "-1")), "eks-api-reachable") == []


def test_a_rule_on_another_port_is_no_access_path(violations):
    assert violations(cluster_with_objects(rule_on_cluster_sg(22, 22)), "eks-api-reachable")


# eks-one-access-entry-per-principal: EKS makes an entry for a managed node group's role itself.


def entries(*, same_role: bool, node_group: bool = True):
    def program():
        group_role = aws.iam.Role("group-role", assume_role_policy="{}")
        other_role = group_role if same_role else aws.iam.Role("karpenter-role", assume_role_policy="{}")
        if node_group:
            aws.eks.NodeGroup("ng", cluster_name="demo", node_role_arn=group_role.arn, subnet_ids=["s-a"],
                              scaling_config={"min_size": 1, "max_size": 2, "desired_size": 1})  # fmt: skip
        else:
            aws.eks.AccessEntry("first", cluster_name="demo", principal_arn=group_role.arn, type="EC2_LINUX")
        aws.eks.AccessEntry("karpenter-nodes", cluster_name="demo", principal_arn=other_role.arn, type="EC2_LINUX")

    return program


def test_entries_for_distinct_roles_pass(violations):
    assert violations(entries(same_role=False), "eks-one-access-entry-per-principal") == []
    assert violations(entries(same_role=False, node_group=False), "eks-one-access-entry-per-principal") == []


def test_an_entry_for_a_managed_node_groups_role_fails(violations):
    (found,) = violations(entries(same_role=True), "eks-one-access-entry-per-principal")
    assert "karpenter-nodes" in found.message and "managed node group(s) ng" in found.message
    assert "409" in found.message


def test_two_explicit_entries_for_one_principal_fail(violations):
    (found,) = violations(entries(same_role=True, node_group=False), "eks-one-access-entry-per-principal")
    assert "first, karpenter-nodes" in found.message


def test_the_shipped_karpenter_stack_gives_its_nodes_their_own_role(stack_plan):
    from inference_platform.offline_plan.policy_runner import evaluate
    from inference_platform.policies.pack import POLICIES

    plan = stack_plan("dev")
    assert not [v for v in plan.violations if v.policy == "eks-one-access-entry-per-principal"]
    roles = {r.name for r in plan.run.resources if r.type == "aws:iam/role:Role"}
    assert {"nodes-role", "karpenter-nodes-role"} <= roles
    assert evaluate(plan.run.resources, [p for p in POLICIES if p.name == "eks-api-reachable"]) == []


# eks-core-addons: inference_platform.components.cluster.Cluster turns EKS's self-managed add-ons off, so a program that builds
# one without ClusterAddons gets a cluster with no pod network, no kube-proxy and no DNS.


def test_our_cluster_without_core_addons_is_refused(violations):
    (found,) = violations(our_cluster(), "eks-core-addons")
    assert "vpc-cni, kube-proxy, coredns" in found.message


def test_our_cluster_with_its_core_addons_passes_and_each_missing_one_is_named(violations):
    from inference_platform.components.cluster.addons import AddonSpec, ClusterAddons, ClusterAddonsArgs

    def with_addons(names):
        def program():
            cluster = Cluster(
                "c",
                ClusterArgs(cluster_name="demo", kubernetes_version="1.36", subnet_ids=["s-a", "s-b"],
                            secrets_key_arn="arn:aws:kms:us-west-2:123456789012:key/k", logs_key_arn="k",
                            region="us-west-2"),
            )  # fmt: skip
            ClusterAddons(
                "addons",
                ClusterAddonsArgs(cluster_name=cluster.cluster_name,
                                  addons=[AddonSpec(name=n, version="v1.0.0-eksbuild.1") for n in names]),
            )  # fmt: skip

        return program

    assert violations(with_addons(["vpc-cni", "kube-proxy", "coredns"]), "eks-core-addons") == []
    (found,) = violations(with_addons(["vpc-cni", "kube-proxy"]), "eks-core-addons")
    assert "no coredns add-on" in found.message


def test_a_cluster_eks_bootstraps_needs_no_managed_addons(violations):
    assert violations(bare(), "eks-core-addons") == []
