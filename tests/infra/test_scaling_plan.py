"""Issue 31 in the plans: what the cold-start options and the derived thresholds render, and the facts a loss-free
scale-down relies on, pinned on the rendered objects.

- prod's serving pool carries nodeadm's FastImagePull; its weights come from S3 at the configured concurrency; its
  ScaledObject's requests target is the derived one.
- coldStart.standbyReplicas renders placeholder pods that hold exactly a serving pod's room on the serving pool at a
  negative, non-preempting priority, pass every policy, validate against the Kubernetes schema, and ``inferctl cost``
  prices the nodes they hold.
- The scale-down path (readiness fails; Envoy Gateway drains the terminating endpoint; the server drains; exit):
  Envoy Gateway v1.9.0 marks a terminating endpoint DRAINING and Envoy leaves it out of load balancing
  (tests/data/upstream/envoy_gateway_v1.9.0_terminating_endpoints.json); the rendered pod's preStop, drain budget and
  grace period fit inside one another; the HPA removes at most one replica per period. The night's scale-down to the
  floor is the same path (the HPA lowers the count; the pods terminate the same way).
"""

from __future__ import annotations

import base64
import copy
import json

import kubernetes_validate
import pytest
import yaml

from inference_platform.catalog import image_cache
from inference_platform.components.autoscaling.standby import PRIORITY_VALUE
from inference_platform.inferctl.cost.summary import estimate_for, resources_as_dicts
from inference_platform.inferctl.plan.command import make_plan
from inference_platform.settings import derived
from tests.components.compute.test_efa_memlock import _node_configs
from tests.conftest import REPO, by_type
from tests.settings.test_inference import load

EG = json.loads((REPO / "tests/data/upstream/envoy_gateway_v1.9.0_terminating_endpoints.json").read_text())
SCALED_OBJECT = "kubernetes:keda.sh/v1alpha1:ScaledObject"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"


@pytest.fixture(scope="module")
def standby_plan(tmp_path_factory):
    """prod with two standby replicas (one p5 node's room: two TP-4 replicas per node)."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    config = copy.deepcopy(doc["config"])
    config["inference-platform:coldStart"] = {**config["inference-platform:coldStart"], "standbyReplicas": 2}
    directory = tmp_path_factory.mktemp("stack")
    path = directory / "Pulumi.prod-standby.yaml"
    path.write_text(yaml.safe_dump({**doc, "config": config}))
    # A p5 node held around the clock costs more than prod's budget allows: the variant comes with its own.
    policy = json.loads((REPO / "policies" / "config" / "prod.json").read_text())
    policy["cost-monthly-budget"]["monthlyBudgetUsd"] = 250_000
    policy_path = directory / "policy.json"
    policy_path.write_text(json.dumps(policy))
    return make_plan(REPO, "prod", stack_file=path, policy_config=policy_path)


def _server(resources):
    found = [r for r in by_type(resources, DEPLOYMENT) if r.inputs["metadata"]["name"] == "triton"]
    assert len(found) == 1
    return found[0].inputs["spec"]["template"]["spec"]


def test_prods_serving_pool_mounts_its_image_cache_and_its_target_is_derived(stack_plan):
    resources = stack_plan("prod").run.resources
    templates = [r for r in resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate" and "inference" in r.name]
    assert templates
    for lt in templates:
        configs = _node_configs(base64.b64decode(lt.inputs["userData"]).decode())
        assert not any(doc["spec"].get("featureGates") for doc in configs), lt.name  # SOCI cannot read the cache
        (cache,) = [b for b in lt.inputs["blockDeviceMappings"] if b["ebs"].get("snapshotId")]
        assert cache["deviceName"] == image_cache.CACHE_DEVICE
        assert image_cache.mount_script() in base64.b64decode(lt.inputs["userData"]).decode()
    restores = by_type(resources, "aws:ebs/fastSnapshotRestore:FastSnapshotRestore")
    assert sorted(r.inputs["availabilityZone"] for r in restores) == ["us-east-1a", "us-east-1b"]
    system = [r for r in resources if r.type == "aws:ec2/launchTemplate:LaunchTemplate" and "system" in r.name]
    assert all(image_cache.CONTAINERD_ROOT not in base64.b64decode(r.inputs.get("userData") or "").decode()
               for r in system)  # fmt: skip
    spec = next(r for r in by_type(resources, SCALED_OBJECT) if r.name == "inference-autoscaling-scaled-object")
    requests = next(t for t in spec.inputs["spec"]["triggers"] if t["name"] == "requests")
    thresholds = derived.thresholds(load({}, "prod"))
    assert float(requests["metadata"]["threshold"]) == thresholds.target == int(thresholds.derived_target)


def test_standby_placeholders_hold_a_serving_pods_room_and_never_preempt(standby_plan, tmp_path):
    resources = standby_plan.run.resources
    assert standby_plan.violations == []
    server = _server(resources)
    (standby,) = [r for r in by_type(resources, DEPLOYMENT) if r.inputs["metadata"]["name"] == "triton-standby"]
    spec = standby.inputs["spec"]
    pod = spec["template"]["spec"]
    assert spec["replicas"] == 2
    (container,) = pod["containers"]
    assert container["resources"] == server["containers"][0]["resources"]  # accelerators, EFA, huge pages, ...
    assert container["image"] == server["containers"][0]["image"] and container["command"] == ["sleep", "infinity"]
    assert pod["affinity"] == server["affinity"] and pod["tolerations"] == server["tolerations"]
    (priority,) = by_type(resources, "kubernetes:scheduling.k8s.io/v1:PriorityClass")
    assert pod["priorityClassName"] == priority.inputs["metadata"]["name"]
    assert priority.inputs["value"] == PRIORITY_VALUE < 0 and priority.inputs["preemptionPolicy"] == "Never"
    assert priority.inputs["globalDefault"] is False
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": standby.inputs["metadata"], "spec": spec}
    for version in ("1.36", "1.33"):
        kubernetes_validate.validate(json.loads(json.dumps(doc)), version, strict=True)


def test_inferctl_cost_prices_the_nodes_standby_holds(stack_plan, standby_plan):
    def pools(plan):
        e = estimate_for(resources_as_dicts(plan.run.resources), plan.run.outputs, "prod", project_root=REPO)
        return e.accelerator_pools()

    node_month = 55.04 * 730  # p5.48xlarge on demand (catalog/prices.py)
    extra = sum(line.monthly_expected or 0 for line in pools(standby_plan)) - sum(
        line.monthly_expected or 0 for line in pools(stack_plan("prod"))
    )
    # Two TP-4 placeholders hold 8 GPUs around the clock: one p5.48xlarge, priced per zonal group as the cost model
    # spreads a pool's demand over its zones (prod has two), so between one and two nodes.
    assert node_month * 0.9 < extra < 2 * node_month * 1.1
    assert any("triton-standby" in line.basis for line in pools(standby_plan))
    cold = standby_plan.run.outputs["coldStart"]
    assert cold["standbyReplicas"] == 2 and cold["scaleUpPath"] == "new node"  # 2 do not cover a period of 3


def test_envoy_gateway_drains_a_terminating_endpoint_before_the_server_drains(stack_plan):
    """The order the loss-free scale-down test (on the multi-replica rig, issue 29) will drive: readiness fails;
    EG marks the terminating endpoint DRAINING (no new requests, streams continue); the server drains its admitted
    streams within its budget; the container exits before the grace period ends."""
    assert EG["draining_when"] == "terminating || !serving (when both conditions are set), else !ready"
    assert EG["eds_status"] == "HEALTH_STATUS_DRAINING" and EG["ignore_health_on_host_removal"] is True
    settings = load({}, "prod")
    pod = _server(stack_plan("prod").run.resources)
    (container,) = pod["containers"]
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    grace = pod["terminationGracePeriodSeconds"]
    drain = settings.serving.exit_timeout_seconds
    # preStop keeps the server accepting while EG pushes DRAINING; then SIGTERM starts the drain, which must end
    # (and the supervisor's stop grace after it) inside the grace period.
    assert pre_stop > 0 and pre_stop + drain + 5 <= grace
    # Readiness is the OpenAI server's own health (it fails as soon as the drain starts).
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    # The HPA removes one replica per period: at most one endpoint drains at a time.
    so = next(r for r in by_type(stack_plan("prod").run.resources, SCALED_OBJECT) if "inference" in r.name)
    down = so.inputs["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]
    assert down["policies"] == [{"type": "Pods", "value": 1, "periodSeconds": 600}] and down["selectPolicy"] == "Min"
