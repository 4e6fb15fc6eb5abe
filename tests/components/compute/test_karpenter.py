"""The Karpenter controller: interruption queue and rules, a controller policy scoped by this cluster's
tags, the node access entry, and pinned Helm releases on the system nodes."""

from __future__ import annotations

import json

import pulumi_kubernetes as k8s

from inference_platform.catalog import charts
from inference_platform.components.compute.iam_policies import karpenter_controller_policy
from inference_platform.components.compute.karpenter import INTERRUPTION_EVENTS, Karpenter, KarpenterArgs
from inference_platform.policies.rules.iam import problems
from tests.conftest import by_type, one

NODE_ROLE = "arn:aws:iam::123456789012:role/nodes"


def karpenter(run_components):
    def program():
        provider = k8s.Provider("k8s", kubeconfig="{}")
        Karpenter(
            "karpenter",
            KarpenterArgs(cluster_name="demo", cluster="demo", cluster_endpoint="https://api", node_role_arn=NODE_ROLE,
                          region="us-west-2", account_id="123456789012", provider=provider),
        )  # fmt: skip

    return run_components(program).resources


def test_interruption_queue_rules_and_tls_only_policy(run_components):
    resources = karpenter(run_components)
    queue = one(resources, "karpenter-interruptions")
    assert queue.inputs["name"] == "demo" and queue.inputs["messageRetentionSeconds"] == 300
    assert queue.inputs["sqsManagedSseEnabled"] is True
    rules = by_type(resources, "aws:cloudwatch/eventRule:EventRule")
    patterns = sorted(json.loads(r.inputs["eventPattern"])["detail-type"][0] for r in rules)
    assert patterns == sorted(p["detail-type"][0] for p in INTERRUPTION_EVENTS.values())
    assert any("Spot Instance Interruption" in p for p in patterns) and any("Rebalance" in p for p in patterns)
    targets = by_type(resources, "aws:cloudwatch/eventTarget:EventTarget")
    assert len(targets) == len(rules) and all(t.property_dependencies["arn"] == [queue.urn] for t in targets)
    policy = json.loads(one(resources, "karpenter-interruptions-policy").inputs["policy"])
    deny = [s for s in policy["Statement"] if s["Effect"] == "Deny"]
    assert deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}


def test_controller_role_is_pod_identity_for_kube_system_karpenter_with_a_scoped_policy(run_components):
    resources = karpenter(run_components)
    association = one(resources, "karpenter-controller-association")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == ("kube-system", "karpenter")
    document = json.loads(one(resources, "karpenter-controller-policy").inputs["policy"])
    assert problems(document) == []
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    for sid in ("AllowScopedEC2LaunchTemplateAccessActions", "AllowScopedDeletion", "AllowScopedResourceTagging"):
        assert by_sid[sid]["Condition"]["StringEquals"]["aws:ResourceTag/kubernetes.io/cluster/demo"] == "owned"
    assert by_sid["AllowPassingInstanceRole"]["Resource"] == NODE_ROLE
    assert by_sid["AllowInterruptionQueueActions"]["Resource"].endswith(":demo")


def test_nodes_get_an_ec2_linux_access_entry_and_releases_are_pinned_on_system_nodes(run_components):
    resources = karpenter(run_components)
    entry = one(resources, "karpenter-node-access")
    assert entry.inputs["type"] == "EC2_LINUX" and entry.inputs["principalArn"] == NODE_ROLE
    crd, controller = one(resources, "karpenter-crd"), one(resources, "karpenter-chart")
    assert (crd.inputs["chart"], crd.inputs["version"]) == (charts.KARPENTER_CRD.chart, "1.14.1")
    assert (controller.inputs["chart"], controller.inputs["version"]) == (charts.KARPENTER.chart, "1.14.1")
    assert controller.inputs["skipCrds"] is True and crd.urn in controller.dependencies
    assert entry.urn in controller.dependencies
    values = controller.inputs["values"]
    assert values["settings"]["clusterName"] == "demo" and values["settings"]["interruptionQueue"] == "demo"
    assert values["nodeSelector"] == {"node-role": "system"} and values["replicas"] == 2
    assert controller.provider.endswith("::k8s")


def test_controller_policy_never_grants_writes_outside_tagged_or_named_resources():
    document = karpenter_controller_policy(cluster_name="c", partition="aws", region="us-east-1", account_id="1" * 12,
                                           node_role_arn=NODE_ROLE, queue_arn="arn:aws:sqs:us-east-1:111111111111:c")  # fmt: skip
    for statement in document["Statement"]:
        actions = statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
        writes = [a for a in actions if not a.split(":")[1].startswith(("Describe", "Get", "List"))]
        if statement["Resource"] == "*":
            assert not writes, statement["Sid"]
        elif writes and "instance-profile" in str(statement["Resource"]):
            assert "Condition" in statement, statement["Sid"]
