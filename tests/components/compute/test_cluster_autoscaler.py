"""The Cluster Autoscaler: a Pod Identity role whose writes reach only this cluster's tagged ASGs, and a
Helm release pinned to the chart and to the autoscaler built for the cluster's Kubernetes minor."""

from __future__ import annotations

import json

import pulumi_kubernetes as k8s
import pytest

from inference_platform.catalog import charts
from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.compute.cluster_autoscaler import (
    BALANCING_IGNORED_LABELS,
    ClusterAutoscaler,
    ClusterAutoscalerArgs,
)
from inference_platform.components.compute.iam_policies import cluster_autoscaler_policy
from inference_platform.policies.rules.iam import is_read_only, problems
from tests.conftest import one

ACCOUNT = "123456789012"


def args(**changes):
    base = {"cluster_name": "demo", "cluster": "demo", "kubernetes_version": "1.36", "region": "us-east-1",
            "account_id": ACCOUNT, "provider": None}  # fmt: skip
    return ClusterAutoscalerArgs(**{**base, **changes})


def autoscaler(run_components, **changes):
    def program():
        ClusterAutoscaler("cluster-autoscaler", args(provider=k8s.Provider("k8s", kubeconfig="{}"), **changes))

    return run_components(program).resources


def test_the_release_is_pinned_discovers_owned_groups_and_balances_zones(run_components):
    resources = autoscaler(run_components)
    release = one(resources, "cluster-autoscaler-chart")
    assert (release.inputs["chart"], release.inputs["version"]) == ("cluster-autoscaler", "9.59.0")
    assert release.inputs["repositoryOpts"] == {"repo": "https://kubernetes.github.io/autoscaler"}
    assert release.inputs["namespace"] == "kube-system" and release.provider.endswith("::k8s")
    values = release.inputs["values"]
    assert values["image"] == {"repository": "registry.k8s.io/autoscaling/cluster-autoscaler", "tag": "v1.36.1"}
    assert values["autoDiscovery"] == {
        "clusterName": "demo",
        "tags": ["k8s.io/cluster-autoscaler/enabled=true", "k8s.io/cluster-autoscaler/demo=owned"],
    }
    extra = values["extraArgs"]
    assert extra["balance-similar-node-groups"] is True and extra["expander"] == "least-waste"
    assert sorted(v for k, v in extra.items() if k.startswith("balancing-ignore-label_")) == sorted(
        BALANCING_IGNORED_LABELS
    )
    assert values["nodeSelector"] == {"node-role": "system"} and values["awsRegion"] == "us-east-1"
    assert values["rbac"]["serviceAccount"]["name"] == "cluster-autoscaler"
    assert values["containerSecurityContext"]["capabilities"] == {"drop": ["ALL"]}
    association = one(resources, "cluster-autoscaler-controller-association")
    assert (association.inputs["namespace"], association.inputs["serviceAccount"]) == (
        "kube-system",
        "cluster-autoscaler",
    )
    assert association.urn in release.dependencies


def test_the_image_follows_the_clusters_kubernetes_minor(run_components):
    release = one(autoscaler(run_components, kubernetes_version="1.35"), "cluster-autoscaler-chart")
    assert release.inputs["values"]["image"]["tag"] == "v1.35.2"
    assert set(charts.CLUSTER_AUTOSCALER_TAGS) == {"1.32", "1.33", "1.34", "1.35", "1.36"}
    assert all(tag.startswith(f"v{minor}.") for minor, tag in charts.CLUSTER_AUTOSCALER_TAGS.items())


def test_the_role_scales_only_this_clusters_owned_groups_and_describes_the_rest(run_components):
    document = json.loads(one(autoscaler(run_components), "cluster-autoscaler-controller-policy").inputs["policy"])
    assert document == cluster_autoscaler_policy(
        cluster_name="demo", partition="aws", region="us-east-1", account_id=ACCOUNT
    )
    assert problems(document) == []  # the pack's iam-no-wildcard-write rule
    by_sid = {s["Sid"]: s for s in document["Statement"]}
    scale = by_sid["ScaleThisClustersGroups"]
    assert scale["Action"] == ["autoscaling:SetDesiredCapacity", "autoscaling:TerminateInstanceInAutoScalingGroup"]
    assert scale["Condition"] == {"StringEquals": {"aws:ResourceTag/k8s.io/cluster-autoscaler/demo": "owned"}}
    assert scale["Resource"].startswith(f"arn:aws:autoscaling:us-east-1:{ACCOUNT}:autoScalingGroup:")
    unscoped = [s for s in document["Statement"] if s["Resource"] == "*"]
    assert unscoped and all(
        a.split(":")[1].startswith("Describe") and is_read_only(a) for s in unscoped for a in s["Action"]
    )
    assert by_sid["DescribeThisClustersNodeGroups"]["Resource"] == f"arn:aws:eks:us-east-1:{ACCOUNT}:nodegroup/demo/*/*"


def test_bad_args_are_reported_together():
    with pytest.raises(ComponentArgsError) as err:
        ClusterAutoscaler("ca", args(kubernetes_version="1.28", expander="cheapest", cluster_name=""))
    text = str(err.value)
    assert all(w in text for w in ("no autoscaler release pinned for 1.28", "'cheapest'", "cluster_name"))
