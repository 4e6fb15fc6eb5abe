"""The cluster area of every shipped stack, as `make plan` builds it: npu runs Neuron only, prod's H100
pool is an EFA pool in one zone, dev provisions its spot GPUs with Karpenter."""

from __future__ import annotations

import pytest

from components import charts
from tests.conftest import STACKS, by_type, one

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
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


def test_prod_efa_pool_has_a_placement_group_every_efa_interface_the_node_sg_and_one_zone(stack_plan):
    resources = stack_plan("prod").run.resources
    lt = one(resources, "pool-inference-lt")
    interfaces = lt.inputs["networkInterfaces"]
    assert len(interfaces) == 32 and all(i["interfaceType"] == "efa" for i in interfaces)
    node_sg = one(resources, "security-groups-nodes")
    assert node_sg.urn in lt.property_dependencies["networkInterfaces"]
    node_sg_id = node_sg.id
    assert all(node_sg_id in i["securityGroups"] for i in interfaces)
    # The node SG admits and sends all traffic to itself: NCCL/EFA between the pool's nodes.
    for rule_type in ("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
                      "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"):  # fmt: skip
        rule = one(by_type(resources, rule_type), "security-groups-nodes-self")
        assert rule.inputs["ipProtocol"] == "-1" and rule.inputs["referencedSecurityGroupId"] == node_sg_id
    pg = one(resources, "pool-inference-placement")
    assert pg.inputs["strategy"] == "cluster" and lt.property_dependencies["placement"] == [pg.urn]
    group = one(resources, "pool-inference-ng").inputs
    assert len(group["subnetIds"]) == 1 and group["labels"]["efa"] == "true"
    assert group["scalingConfig"] == {"minSize": 2, "maxSize": 4, "desiredSize": 2}
    small = one(resources, "pool-small-models-ng").inputs
    assert len(small["subnetIds"]) == 3 and "efa" not in small["labels"]
    assert charts_of(resources) >= {charts.GPU_OPERATOR.chart, charts.EFA_DEVICE_PLUGIN.chart}
    assert charts.NEURON.chart not in charts_of(resources)


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
        assert all(b["ebs"]["encrypted"] == "true" for b in lt.inputs["blockDeviceMappings"])
        for spec in lt.inputs["tagSpecifications"]:
            assert spec["tags"]["stack"] == stack and spec["tags"]["owner"]
