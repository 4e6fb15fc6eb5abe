"""The cluster area of every shipped stack, as `make plan` builds it: npu runs Neuron only, prod's H100
pool is an EFA pool with a node group per zone, dev provisions its spot GPUs with Karpenter; the cluster
autoscaler sizes exactly the managed node groups; the VPC CNI enforces NetworkPolicies."""

from __future__ import annotations

import json
import re

import pytest

from inference_platform import catalog
from inference_platform.catalog import charts
from inference_platform.components.compute import autoscaler_tags
from inference_platform.policies.rules.nodes import NODE_POOL, accelerators
from inference_platform.settings.stack_files import load as load_stack
from tests.conftest import STACKS, by_type, one

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
ADDON = "aws:eks/addon:Addon"
RELEASE = "kubernetes:helm.sh/v3:Release"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
MY_POLICIES = ("eks-endpoint-not-public", "eks-secrets-encryption", "eks-control-plane-logging", "nodes-imdsv2",
               "nodes-ebs-encrypted", "node-instance-types-allowed", "accelerator-budget", "iam-no-wildcard-write")  # fmt: skip


def charts_of(resources):
    return {r.inputs["chart"] for r in by_type(resources, RELEASE)}


@pytest.mark.parametrize("stack", STACKS)
def test_every_stack_has_the_cluster_pinned_addons_and_one_kubernetes_provider(stack_plan, stack):
    plan = stack_plan(stack)
    resources = plan.run.resources
    (cluster,) = by_type(resources, "aws:eks/cluster:Cluster")
    assert cluster.inputs["version"] == "1.36"
    addons = {a.inputs["addonName"]: a.inputs["addonVersion"] for a in by_type(resources, "aws:eks/addon:Addon")}
    assert set(addons) == {"vpc-cni", "coredns", "kube-proxy", "aws-ebs-csi-driver", "eks-pod-identity-agent"}
    (provider,) = by_type(resources, "pulumi:providers:kubernetes")
    kube = [r for r in resources if r.custom and r.type.startswith("kubernetes:")]
    assert kube and all(r.provider == provider.urn for r in kube), [r.urn for r in kube if r.provider != provider.urn]
    mine = [v for v in plan.violations if v.policy in MY_POLICIES]
    assert mine == []


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_production_cluster_is_private_protected_and_logged(stack_plan, stack):
    (cluster,) = by_type(stack_plan(stack).run.resources, "aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False
    assert cluster.protect and cluster.inputs["deletionProtection"] is True


def test_npu_runs_neuron_amis_taints_and_software_and_nothing_from_nvidia(stack_plan):
    resources = stack_plan("npu").run.resources
    pools = {g.inputs["labels"]["node-pool"]: g for g in by_type(resources, NODE_GROUP)}
    for name in ("inference", "trn1"):
        group = pools[name].inputs
        assert group["amiType"] == "AL2023_x86_64_NEURON"
        assert group["taints"] == [{"key": "aws.amazon.com/neuron", "value": "true", "effect": "NO_SCHEDULE"}]
        assert group["labels"]["accelerator"] == "neuron"
    assert pools["inference"].inputs["labels"]["accelerator-model"] == "inferentia2"
    assert charts_of(resources) >= {charts.NEURON.chart, charts.EFA_DEVICE_PLUGIN.chart}
    neuron = one(resources, "accelerators-neuron").inputs["values"]
    assert neuron["scheduler"]["enabled"] is True and neuron["devicePlugin"]["nodeSelector"] == {
        "accelerator": "neuron"
    }
    assert one(resources, "accelerators-neuron-monitor").type == "kubernetes:apps/v1:DaemonSet"
    assert charts.GPU_OPERATOR.chart not in charts_of(resources)
    assert not [r for r in resources if "nvidia" in str(r.inputs.get("amiType", "")).lower()]


def test_prod_efa_pool_has_a_placement_group_every_efa_interface_and_the_node_sg_in_each_zone(stack_plan):
    resources = stack_plan("prod").run.resources
    node_sg = one(resources, "security-groups-nodes")
    node_sg_id = node_sg.id
    # The node SG admits and sends all traffic to itself: NCCL/EFA between the pool's nodes.
    for rule_type in ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                      "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"):  # fmt: skip
        rule = one(by_type(resources, rule_type), "security-groups-nodes-self")
        assert rule.inputs["ipProtocol"] == "-1" and rule.inputs["referencedSecurityGroupId"] == node_sg_id
    subnets = {s.inputs["availabilityZone"]: s.id for s in by_type(resources, "aws:ec2/subnet:Subnet")
               if s.name.startswith("network-private")}  # fmt: skip
    zones = ("us-east-1a", "us-east-1b")
    for zone in zones:
        lt = one(resources, f"pool-inference-{zone}-lt")
        interfaces = lt.inputs["networkInterfaces"]
        assert len(interfaces) == 32 and all(i["interfaceType"] == "efa" for i in interfaces)
        assert node_sg.urn in lt.property_dependencies["networkInterfaces"]
        assert all(node_sg_id in i["securityGroups"] for i in interfaces)
        pg = one(resources, f"pool-inference-{zone}-placement")
        assert pg.inputs["strategy"] == "cluster" and lt.property_dependencies["placement"] == [pg.urn]
        group = one(resources, f"pool-inference-{zone}-ng").inputs
        assert group["subnetIds"] == [subnets[zone]] and group["labels"]["efa"] == "true"
        assert re.fullmatch(rf"inference-platform-prod-inference-{zone[-1]}-[0-9a-f]{{8}}", group["nodeGroupName"])
        assert group["scalingConfig"] == {"minSize": 1, "maxSize": 2, "desiredSize": 1}  # per zone
    inference = [g for g in by_type(resources, NODE_GROUP) if g.inputs["labels"]["node-pool"] == "inference"]
    assert len(inference) == len(by_type(resources, "aws:ec2/placementGroup:PlacementGroup")) == len(zones)
    small = one(resources, "pool-small-models-ng").inputs
    assert len(small["subnetIds"]) == 3 and "efa" not in small["labels"]
    assert charts_of(resources) >= {charts.GPU_OPERATOR.chart, charts.EFA_DEVICE_PLUGIN.chart}
    assert charts.NEURON.chart not in charts_of(resources)


@pytest.mark.parametrize("stack", ["prod", "npu"])
def test_managed_stacks_run_the_cluster_autoscaler_over_every_node_groups_tagged_asg(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    release = one(resources, "cluster-autoscaler-chart")
    assert (release.inputs["chart"], release.inputs["version"]) == (
        "cluster-autoscaler",
        charts.CLUSTER_AUTOSCALER.version,
    )
    assert release.inputs["values"]["image"]["tag"] == "v1.36.1"  # the cluster's 1.36
    assert release.inputs["values"]["nodeSelector"] == {"node-role": "system"}
    assert one(resources, "addons-workload-coredns").urn in release.dependencies  # system nodes run it
    cluster = f"inference-platform-{stack}"
    owner = autoscaler_tags.ownership_key(cluster)
    tags = by_type(resources, ASG_TAG)
    for group in by_type(resources, NODE_GROUP):
        asg = group.outputs["resources"][0]["autoscalingGroups"][0]["name"]
        mine = {
            t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in tags if t.inputs["autoscalingGroupName"] == asg
        }
        assert mine[owner] == "owned" and mine[autoscaler_tags.ENABLED] == "true", group.name
        labels = {k.rsplit("/label/", 1)[1]: v for k, v in mine.items() if "/node-template/label/" in k}
        assert labels == group.inputs["labels"], group.name
    policy = json.loads(one(resources, "cluster-autoscaler-controller-policy").inputs["policy"])
    scale = next(s for s in policy["Statement"] if s["Sid"] == "ScaleThisClustersGroups")
    assert scale["Condition"]["StringEquals"] == {f"aws:ResourceTag/{owner}": "owned"}


def test_a_karpenter_stack_has_no_cluster_autoscaler_and_tags_no_asg(stack_plan):
    resources = stack_plan("dev").run.resources
    assert charts.CLUSTER_AUTOSCALER.chart not in charts_of(resources)
    assert not by_type(resources, ASG_TAG)
    assert not [r for r in resources if r.name.startswith("cluster-autoscaler")]


@pytest.mark.parametrize("stack", STACKS)
def test_the_vpc_cni_enforces_network_policies(stack_plan, stack):
    (cni,) = [a for a in by_type(stack_plan(stack).run.resources, ADDON) if a.inputs["addonName"] == "vpc-cni"]
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}


@pytest.mark.parametrize("stack", STACKS)
def test_the_accelerator_budget_counts_every_zone_of_every_pool(stack_plan, stack, repo):
    """What the policy sums over node groups and NodePools is zones x per-zone size for an EFA pool and
    maxSize for the others, and it stays within the stack's configured budget."""
    plan = stack_plan(stack)
    resources = plan.run.resources
    cluster_zones = sorted(
        {s.inputs["availabilityZone"] for s in by_type(resources, "aws:ec2/subnet:Subnet") if "private" in s.name}
    )
    expected = sum(
        pool.max_nodes(cluster_zones) * max(catalog.instance(t).accelerator_count for t in pool.instance_types)
        for pool in load_stack(stack).node_pools.root.values()
    )
    counted = sum(accelerators(r.type, r.inputs)[0] or 0 for r in resources if r.type in (NODE_GROUP, NODE_POOL))
    budget = json.loads((repo / "policies" / "config" / f"{stack}.json").read_text())["accelerator-budget"]
    assert counted == expected <= budget["maxAccelerators"]
    assert not [v for v in plan.violations if v.policy == "accelerator-budget"]


def test_dev_provisions_spot_gpus_with_karpenter_and_keeps_only_system_node_groups(stack_plan):
    resources = stack_plan("dev").run.resources
    assert [g.inputs["labels"]["node-role"] for g in by_type(resources, NODE_GROUP)] == ["system"]
    (node_pool,) = by_type(resources, "kubernetes:karpenter.sh/v1:NodePool")
    requirements = {r["key"]: r["values"] for r in node_pool.inputs["spec"]["template"]["spec"]["requirements"]}
    assert requirements["karpenter.sh/capacity-type"] == ["spot"]
    assert requirements["node.kubernetes.io/instance-type"] == ["g6.2xlarge", "g6.xlarge"]
    assert node_pool.inputs["spec"]["limits"] == {"nvidia.com/gpu": "2"}
    assert by_type(resources, "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass")
    assert (
        by_type(resources, "aws:sqs/queue:Queue") and len(by_type(resources, "aws:cloudwatch/eventRule:EventRule")) == 5
    )
    assert charts_of(resources) >= {charts.KARPENTER.chart, charts.KARPENTER_CRD.chart, charts.GPU_OPERATOR.chart}
    assert not charts_of(resources) & {charts.NEURON.chart, charts.EFA_DEVICE_PLUGIN.chart}
    (cluster,) = by_type(resources, "aws:eks/cluster:Cluster")
    assert cluster.inputs["vpcConfig"]["publicAccessCidrs"] == ["198.51.100.0/24"] and not cluster.protect


@pytest.mark.parametrize("stack", STACKS)
def test_every_launch_template_requires_imdsv2_and_encrypts_and_tags(stack_plan, stack):
    templates = by_type(stack_plan(stack).run.resources, LAUNCH_TEMPLATE)
    assert templates
    for lt in templates:
        assert lt.inputs["metadataOptions"]["httpTokens"] == "required"
        # A volume restored from the image cache's snapshot takes the snapshot's encryption (EC2 refuses a value
        # beside a snapshot id); the preview holds the snapshot to the storage key (infra/image_cache.py).
        assert all(b["ebs"]["encrypted"] == "true" for b in lt.inputs["blockDeviceMappings"]
                   if not b["ebs"].get("snapshotId"))  # fmt: skip
        for spec in lt.inputs["tagSpecifications"]:
            assert spec["tags"]["stack"] == stack and spec["tags"]["owner"]
