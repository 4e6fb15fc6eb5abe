"""The rollout's Kubernetes manifests: every shipped stack writes its Deployment, Service, PDB,
NetworkPolicy, settings ConfigMap and ServiceMonitor; a multi-node variant of prod writes a
LeaderWorkerSet with its launcher. Built-in kinds validate strictly against the Kubernetes schema of
the cluster's version and 1.33 (tests/infra/test_cluster_manifests.py does so for the shipped
stacks); custom resources are checked for apiVersion, kind and the fields their CRDs require."""

from __future__ import annotations

import copy
import json

import kubernetes_validate
import pytest
import yaml

from inference_platform.catalog.efa import EFA_ENV
from inference_platform.inferctl.plan.command import make_plan
from inference_platform.offline_plan.manifests import write_manifests
from tests.conftest import REPO, STACKS

VERSIONS = ("1.36", "1.33")
# Required by the CRDs: lws v0.10.0 charts/lws/crds (spec.leaderWorkerTemplate.workerTemplate), and
# prometheus-operator v0.93.1 ServiceMonitor (spec.endpoints, spec.selector).
CUSTOM_REQUIRED = {
    ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"): ("spec.leaderWorkerTemplate.workerTemplate",),
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ("spec.endpoints", "spec.selector"),
}
ROLLOUT_KINDS = {"Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy", "ConfigMap", "ServiceMonitor"}


def rollout_objects(resources):
    return [r for r in resources if r.parent and "inference:serving:InferenceService::inference" in r.parent]


def dig(doc, path):
    for part in path.split("."):
        doc = doc[part]
    return doc


def validate_all(paths):
    kinds = []
    for path in paths:
        doc = yaml.safe_load(path.read_text())
        kinds.append(doc["kind"])
        key = (doc["apiVersion"], doc["kind"])
        if key in CUSTOM_REQUIRED:
            for field in CUSTOM_REQUIRED[key]:
                assert dig(doc, field), f"{path.name}: {field} is required"
            continue
        for version in VERSIONS:
            kubernetes_validate.validate(doc, version, strict=True)
    return kinds


@pytest.mark.parametrize("stack", STACKS)
def test_each_stack_writes_the_rollout_and_its_custom_resources_hold_their_required_fields(stack_plan, stack, tmp_path):
    rollout = write_manifests(rollout_objects(stack_plan(stack).run.resources), tmp_path)
    kinds = validate_all(rollout)
    assert set(kinds) == ROLLOUT_KINDS and len(rollout) == 6


@pytest.fixture(scope="module")
def multi_node_plan(tmp_path_factory):
    """prod serving Llama-3.1-405B FP8 at TP 8 x PP 2 over two p5 nodes per replica."""
    doc = yaml.safe_load((REPO / "stacks" / "Pulumi.prod.yaml").read_text())
    config = copy.deepcopy(doc["config"])
    config["inference-platform:serving"].update(
        {"model": "Llama-3.1-405B", "tensorParallel": 8, "pipelineParallel": 2, "nodes": 2, "maxBatchSize": 64}
    )
    # Its demand plan sizes the 70B rollout; this variant serves another model on the same pool.
    config.pop("inference-platform:capacity", None)
    # 405B FP8 (~378 GiB) stages for ~37 min (planners/cold_start.py): at the default ramp the
    # autoscaler must scale out at about 60 % of a replica's batch (the settings refuse prod's 75 %).
    config["inference-platform:autoscaling"] = {"targetRequestsPerReplica": 32}
    rollout = config["inference-platform:inference"]
    rollout.update({"replicas": 2, "rollout": {"maxSurge": 0, "maxUnavailable": 1}})
    rollout["model"].update({"engine": "llama-3.1-405b-instruct/fp8-tp8-pp2-sm90/2026-11-30/", "volumeGib": 256})
    directory = tmp_path_factory.mktemp("stack")
    path = directory / "Pulumi.prod-multinode.yaml"
    path.write_text(yaml.safe_dump({**doc, "config": config}))
    # Two replicas of two p5 nodes each cost more than prod's budget: the variant comes with its own.
    policy = json.loads((REPO / "policies" / "config" / "prod.json").read_text())
    policy["cost-monthly-budget"]["monthlyBudgetUsd"] = 250_000
    policy_path = directory / "policy.json"
    policy_path.write_text(json.dumps(policy))
    return make_plan(REPO, "prod", stack_file=path, policy_config=policy_path)


def test_a_multi_node_replica_is_a_leader_worker_set_whose_manifests_validate(multi_node_plan, tmp_path):
    mine = write_manifests(rollout_objects(multi_node_plan.run.resources), tmp_path)
    kinds = validate_all(mine)
    assert sorted(kinds) == sorted(
        ["LeaderWorkerSet", "ConfigMap", "ConfigMap", "Role", "RoleBinding", "Service", "PodDisruptionBudget",
         "NetworkPolicy", "ServiceMonitor"]
    )  # fmt: skip
    group = yaml.safe_load(next(p for p in mine if p.name.startswith("leaderworkerset")).read_text())
    template = group["spec"]["leaderWorkerTemplate"]
    assert template["size"] == 2 and group["spec"]["replicas"] == 2
    for role in ("leaderTemplate", "workerTemplate"):
        (container,) = template[role]["spec"]["containers"]
        assert container["resources"]["limits"]["nvidia.com/gpu"] == "8"
        assert container["resources"]["limits"]["vpc.amazonaws.com/efa"] == "32"
        # EFA pools only: NCCL loads aws-ofi-nccl and libfabric uses EFA with GPUDirect RDMA, on huge pages.
        env = {e["name"]: e.get("value") for e in container["env"]}
        assert {k: env.get(k) for k, _ in EFA_ENV} == dict(EFA_ENV)
        assert container["resources"]["requests"]["hugepages-2Mi"] == container["resources"]["limits"]["hugepages-2Mi"]
        assert "add" not in container["securityContext"]["capabilities"]
        pod = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": role.lower()},
               "template": template[role]}  # fmt: skip
        for version in VERSIONS:
            kubernetes_validate.validate(pod, version, strict=True)


def test_the_group_launches_through_the_agent_and_drains_around_mpirun(multi_node_plan, tmp_path):
    mine = write_manifests(rollout_objects(multi_node_plan.run.resources), tmp_path)
    group = yaml.safe_load(next(p for p in mine if p.name.startswith("leaderworkerset")).read_text())
    template = group["spec"]["leaderWorkerTemplate"]
    (leader,) = template["leaderTemplate"]["spec"]["containers"]
    (worker,) = template["workerTemplate"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in leader["env"]}
    # Either Open MPI line starts the workers' daemons through kubectl exec (tests/catalog/test_open_mpi.py).
    assert env["OMPI_MCA_plm_rsh_agent"] == env["PRTE_MCA_plm_ssh_agent"] == "/opt/inference/mpi/kubexec"
    assert leader["readinessProbe"]["httpGet"] == {"path": "/health", "port": "openai"}
    grace = template["workerTemplate"]["spec"]["terminationGracePeriodSeconds"]
    assert worker["command"][2].endswith(f"drain hold --budget-seconds {grace}")
    assert template["restartPolicy"] == "RecreateGroupOnPodRestart"


def test_the_multi_node_variant_installs_the_pinned_controller_first_and_passes_every_policy(multi_node_plan):
    resources = multi_node_plan.run.resources
    (lws,) = [r for r in resources if r.name == "serving-controllers-lws"]
    assert (lws.inputs["chart"], lws.inputs["version"]) == ("oci://registry.k8s.io/lws/charts/lws", "0.10.0")
    (group,) = [r for r in resources if r.name == "inference-group"]
    assert lws.urn in group.dependencies
    assert multi_node_plan.violations == []
