"""Cluster and node-pool settings: every bad input of issue 3 §8 ends `inferctl plan` with exit 2 naming
its key path, before any resource is registered; the other checks report by key path too."""

from __future__ import annotations

import copy
import datetime as dt

import pytest
import yaml

from inference_platform.inferctl.cli import main
from inference_platform.offline_plan.engine import ProgramError, run_program
from inference_platform.settings import SettingsError, load_settings
from inference_platform.settings.base import CheckContext
from inference_platform.settings.cluster import ClusterSettings
from inference_platform.settings.node_pools import NodePoolsSettings
from tests.conftest import REPO

TAGS = {"owner": "team", "costCenter": "cc-1"}
GPU = {"instanceTypes": ["g6.xlarge"], "maxSize": 2}
# What one L4 holds with room for its whole batch (the dev stack's serving shape).
SERVING = {"precision": "fp8", "maxBatchSize": 16, "kvCache": {"dtype": "fp8"}}


def problems(values, region="us-east-1", environment="development"):
    values = {"nodePools": {"inference": GPU}, "serving": SERVING, **values}  # the serving section's default pool
    with pytest.raises(SettingsError) as err:
        load_settings({"tags": TAGS, "environment": environment, **values}, project="p", stack="s", region=region)
    return {p.path: p.message for p in err.value.problems}


def stack_file(tmp_path, stack, **edits):
    doc = yaml.safe_load((REPO / "stacks" / f"Pulumi.{stack}.yaml").read_text())
    config = doc["config"]
    for key, change in edits.items():
        qualified = f"inference-platform:{key}"
        config[qualified] = change(copy.deepcopy(config.get(qualified, {})))
    path = tmp_path / f"Pulumi.{stack}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def pool(**fields):
    def change(pools):
        pools["inference"].update(fields)
        return pools

    return change


BAD_INPUTS = [
    ("dev", {"nodePools": pool(instanceTypes=["g6.huge"])}, "nodePools.inference.instanceTypes[0]", "unknown instance type 'g6.huge'"),
    ("dev", {"nodePools": pool(minSize=3, maxSize=2)}, "nodePools.inference.minSize", "larger than maxSize 2"),
    ("dev", {"nodePools": pool(minSize=0, maxSize=2, desiredSize=5)}, "nodePools.inference.desiredSize", "outside [minSize 0, maxSize 2]"),
    ("dev", {"nodePools": pool(efa=True)}, "nodePools.inference.efa", "g6.xlarge, g6.2xlarge: no EFA interface"),
    ("dev", {"nodePools": pool(instanceTypes=["g6.xlarge", "inf2.xlarge"])}, "nodePools.inference.instanceTypes", "mixes vendors"),
    ("prod", {"nodePools": pool(capacityTypes=["reservation"])}, "nodePools.inference.reservationIds", "needs the id"),
    ("dev", {"nodePools": pool(capacityTypes=["spot", "capacity-block"], reservationIds=["cr-0123456789abcdef0"])},
     "nodePools.inference.capacityTypes", "spot cannot be combined with capacity-block"),
    ("prod", {"cluster": lambda c: {**c, "publicAccessCidrs": ["0.0.0.0/0"]}}, "cluster.publicAccessCidrs[0]", "production"),
    ("dev", {"cluster": lambda c: {**c, "kubernetesVersion": "1.27"}}, "cluster.kubernetesVersion", "EKS offers"),
    ("dev", {"nodePools": pool(availabilityZones=["us-west-2a", "us-west-2a"])}, "nodePools.inference.availabilityZones",
     "lists a zone twice"),
    ("prod", {"nodePools": lambda p: {**p, "a-twenty-one-char-efa": {"instanceTypes": ["p5.48xlarge"]}}},
     "nodePools.a-twenty-one-char-efa", "a-twenty-one-char-efa-a"),
    ("prod", {"nodePools": pool(availabilityZones=None)}, "nodePools.inference.availabilityZones",
     "at least two zones"),
    # A private-only endpoint with no path for the deployer: `pulumi up` would hang on the first object.
    ("prod", {"cluster": lambda c: {**c, "privateAccess": {"cidrs": []}}}, "cluster.privateAccess",
     "set cluster.privateAccess.cidrs"),
    ("npu", {"cluster": lambda c: {}}, "cluster.privateAccess", "or cluster.publicAccessCidrs"),
    ("prod", {"cluster": lambda c: {**c, "privateAccess": {"cidrs": ["0.0.0.0/0"]}}}, "cluster.privateAccess.cidrs[0]",
     "admits everyone"),
    ("prod", {"cluster": lambda c: {**c, "privateAccess": {"securityGroupIds": ["runners"]}}},
     "cluster.privateAccess.securityGroupIds[0]", "expected sg-"),
]  # fmt: skip


@pytest.mark.parametrize(("stack", "edits", "path", "words"), BAD_INPUTS, ids=[b[2] + ":" + b[3] for b in BAD_INPUTS])
def test_each_bad_input_exits_2_naming_its_key_before_any_resource(tmp_path, capsys, stack, edits, path, words):
    file = stack_file(tmp_path, stack, **edits)
    code = main(["plan", "--stack", stack, "--stack-file", str(file), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2, err
    line = next((ln for ln in err.splitlines() if f"- {path}:" in ln), None)
    assert line is not None and words in line, err
    with pytest.raises(ProgramError) as raised:
        run_program(REPO, stack, stack_file=file)
    assert raised.value.registered == 0


def test_a_version_without_a_pinned_cluster_autoscaler_exits_2_for_a_managed_stack(tmp_path, capsys):
    file = stack_file(tmp_path, "npu", cluster=lambda c: {**c, "kubernetesVersion": "1.31"})
    code = main(["plan", "--stack", "npu", "--stack-file", str(file), "--out", str(tmp_path / "out"), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and any(
        "- cluster.kubernetesVersion:" in line and "scaled by the cluster autoscaler, pinned for" in line
        for line in err.splitlines()
    ), err
    with pytest.raises(ProgramError) as raised:
        run_program(REPO, "npu", stack_file=file)
    assert raised.value.registered == 0


def test_zero_zero_zero_zero_is_fine_outside_production():
    values = {"tags": TAGS, "cluster": {"publicAccessCidrs": ["0.0.0.0/0"]}, "nodePools": {"inference": GPU},
              "serving": SERVING}  # fmt: skip
    settings = load_settings(values, project="p", stack="s", region="us-east-1")
    assert settings.cluster.public_access_cidrs == ["0.0.0.0/0"]


def test_cluster_problems_by_key():
    found = problems(
        {
            "cluster": {
                "publicAccessCidrs": ["10.0.0.1/8", "10.0.0.1/8"],
                "logRetentionDays": 10,
                "addonVersions": {"istio": "v1.0.0-eksbuild.1", "coredns": "latest"},
                "systemNodeGroup": {"instanceTypes": ["g6.xlarge", "m9.large"], "minSize": 3, "maxSize": 2},
            }
        }
    )
    assert "IPv4 CIDR" in found["cluster.publicAccessCidrs[0]"]
    assert "lists a CIDR twice" in found["cluster.publicAccessCidrs"]
    assert "allowed: 1, 3" in found["cluster.logRetentionDays"]
    assert "unknown add-on" in found["cluster.addonVersions.istio"]
    assert "'latest'" in found["cluster.addonVersions.coredns"]
    assert "has accelerators" in found["cluster.systemNodeGroup.instanceTypes[0]"]
    assert "unknown instance type" in found["cluster.systemNodeGroup.instanceTypes[1]"]
    assert "larger than maxSize" in found["cluster.systemNodeGroup.minSize"]
    assert (
        "expected 'managed' or 'karpenter'"
        in problems({"cluster": {"provisioning": "fargate"}})["cluster.provisioning"]
    )


def test_versions_are_checked_against_the_calendar_of_the_day():
    cluster = ClusterSettings(kubernetes_version="1.33")
    assert cluster.version_problems(dt.date(2027, 1, 1))[0].path == "cluster.addonVersions"  # offered, not pinned
    assert "EKS offers" in cluster.version_problems(dt.date(2027, 8, 1))[0].message  # extended support over
    assert ClusterSettings().version_problems(dt.date(2026, 12, 2)) == []


def test_node_pool_problems_by_key():
    found = problems(
        {
            "nodePools": {
                "inference": GPU,
                "Bad_Name": GPU,
                "cpu": {"instanceTypes": ["m7i.large"]},
                "h1x": {"instanceTypes": ["p5.48xlarge", "p5en.48xlarge"]},
                "managed": {**GPU, "capacityTypes": ["spot", "on-demand"], "maxSize": 500},
                "reserved": {**GPU, "reservationIds": ["cr-1"]},
                "odcrs": {
                    **GPU,
                    "capacityTypes": ["reservation"],
                    "reservationIds": ["cr-0123456789abcdef0", "cr-0123456789abcdef1"],
                },
                "zones": {"instanceTypes": ["p5.48xlarge"], "availabilityZones": ["us-east-1a", "us-east-1f"]},
                "twice": {**GPU, "availabilityZones": ["us-east-1a", "us-east-1a"]},
                "a-twenty-one-char-efa": {"instanceTypes": ["p5.48xlarge"], "availabilityZones": ["us-east-1a"]},
                "labels": {**GPU, "labels": {"accelerator": "x", "team": "a b"}},
                "karp": {**GPU, "expireAfter": "30 days", "disruptionBudget": "150%", "amiFamily": "bottlerocket"},
                "neuronbr": {"instanceTypes": ["inf2.xlarge"], "amiFamily": "bottlerocket"},
            }
        }
    )
    assert "lowercase" in found["nodePools.Bad_Name"]
    assert "no accelerators" in found["nodePools.cpu.instanceTypes"]
    assert "mixes accelerators (h100, h200)" in found["nodePools.h1x.instanceTypes"]
    assert "one capacity type" in found["nodePools.managed.capacityTypes"]
    assert "exceeds EKS's 450" in found["nodePools.managed.maxSize"]
    assert "given without capacity type" in found["nodePools.reserved.reservationIds"]
    assert "17 hex digits" in found["nodePools.reserved.reservationIds[0]"]
    assert "targets one reservation" in found["nodePools.odcrs.reservationIds"]
    assert "are us-east-1a, us-east-1b" in found["nodePools.zones.availabilityZones[1]"]
    assert "nodePools.zones.availabilityZones" not in found  # an EFA pool may list several zones
    assert "lists a zone twice" in found["nodePools.twice.availabilityZones"]
    assert "a-twenty-one-char-efa-a" in found["nodePools.a-twenty-one-char-efa"]
    assert "set by the platform" in found["nodePools.labels.labels.accelerator"]
    assert "not a valid Kubernetes label" in found["nodePools.labels.labels.team"]
    assert (
        "Karpenter's pattern" in found["nodePools.karp.expireAfter"]
        and "0-100%" in found["nodePools.karp.disruptionBudget"]
    )
    assert "NVIDIA" in found["nodePools.neuronbr.amiFamily"]
    assert (
        "unknown key (did you mean 'maxSize'?)"
        in problems({"nodePools": {"inference": GPU, "a": {**GPU, "maxSzie": 1}}})["nodePools.a.maxSzie"]
    )


def test_an_efa_pool_on_bottlerocket_is_refused_naming_what_its_nodes_would_lack():
    """Bottlerocket EFA nodes got neither the containers' memlock limit nor the huge pages (nodeadm documents are
    AL2023's): refused, naming the key. A single-node p5 pool without EFA may run Bottlerocket."""
    found = problems({"nodePools": {"inference": GPU, "efa": {"instanceTypes": ["p5.48xlarge"],
                                                                "amiFamily": "bottlerocket"}}})  # fmt: skip
    message = found["nodePools.efa.amiFamily"]
    assert (
        "got bottlerocket for an EFA pool (p5.48xlarge)" in message and "use amiFamily al2023, or efa: false" in message
    )
    plain = {"instanceTypes": ["p5.48xlarge"], "amiFamily": "bottlerocket", "efa": False}
    settings = load_settings({"tags": TAGS, "nodePools": {"inference": GPU, "plain": plain}, "serving": SERVING},
                             project="p", stack="s", region="us-east-1")  # fmt: skip
    assert settings.node_pools.root["plain"].ami_family == "bottlerocket"


def test_karpenter_allows_fallbacks_several_reservations_and_refuses_bottlerocket():
    values = {"cluster": {"provisioning": "karpenter"}}
    pools = {"inference": GPU, "p": {"instanceTypes": ["p5.48xlarge"], "capacityTypes": ["reservation", "on-demand"],
                   "reservationIds": ["cr-0123456789abcdef0", "cr-0123456789abcdef1"], "maxSize": 500}}  # fmt: skip
    settings = load_settings({"tags": TAGS, **values, "nodePools": pools, "serving": SERVING}, project="p", stack="s",
                             region="us-east-1")  # fmt: skip
    assert settings.node_pools.root["p"].max_size == 500
    found = problems({**values, "nodePools": {"inference": GPU, "g": {**GPU, "amiFamily": "bottlerocket"}}})
    assert "pinned AL2023" in found["nodePools.g.amiFamily"]


def test_every_problem_is_reported_at_once():
    found = problems(
        {
            "cluster": {"kubernetesVersion": "1.20"},
            "nodePools": {"inference": GPU, "a": {"instanceTypes": ["x.large"], "minSize": 2, "maxSize": 1}},
        },
        environment="production",
    )
    assert {"cluster.kubernetesVersion", "nodePools.a.instanceTypes[0]", "nodePools.a.minSize"} <= set(found)


def test_managed_pools_need_a_cluster_autoscaler_pinned_for_the_kubernetes_version():
    pools = NodePoolsSettings.model_validate({"inference": GPU})

    def found(**cluster):
        ctx = CheckContext(stack="s", environment="development", region=None,
                           sections={"cluster": ClusterSettings(**cluster)})  # fmt: skip
        return {p.path: p.message for p in pools.problems(ctx)}

    assert "pinned for 1.36, 1.35" in found(kubernetes_version="1.37")["cluster.kubernetesVersion"]
    assert found(kubernetes_version="1.37", provisioning="karpenter") == {}  # Karpenter sizes its own pools
    assert found(kubernetes_version="1.36") == {}
    assert NodePoolsSettings.model_validate({}).problems(CheckContext(stack="s", environment="development",
        region=None, sections={"cluster": ClusterSettings(kubernetes_version="1.37")})) == []  # fmt: skip


def test_serving_finds_its_pool_through_the_node_pools_section():
    found = problems({"nodePools": {"other": GPU}})
    assert "no node pool named 'inference'" in found["serving.nodePool"]


def test_a_public_endpoint_for_named_runners_is_an_access_path_too():
    values = {"tags": TAGS, "cluster": {"publicAccessCidrs": ["198.51.100.0/24"]}, "nodePools": {"inference": GPU},
              "serving": SERVING, "environment": "production"}  # fmt: skip
    with pytest.raises(SettingsError) as err:
        load_settings(values, project="p", stack="s", region="us-east-1")
    assert "cluster.privateAccess" not in {p.path for p in err.value.problems}
