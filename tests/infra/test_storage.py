"""Storage and secrets in every shipped stack, as `make plan` runs them; and the secret-leak test: a
secret injected through config (and the generated API keys) appear nowhere in plain text."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
from pathlib import Path

import pytest
import yaml

from inference_platform.inferctl.plan.command import make_plan
from inference_platform.inferctl.plan.report import to_json
from inference_platform.infra.cluster import build_cluster
from inference_platform.infra.foundation import build_foundation
from inference_platform.infra.storage import INFERENCE, MODEL_SYNC, build_storage
from inference_platform.offline_plan.engine import ProgramError
from inference_platform.offline_plan.manifests import write_manifests
from inference_platform.offline_plan.redact import SECRET_SIG, SECRET_SIG_KEY
from inference_platform.settings.stack_files import load as load_stack_settings
from tests.conftest import STACKS, by_type, one
from tests.settings.test_cold_start import PROD_CACHE

CACHED_PROD = "prod-with-cache"
"""prod as a stack that keeps the FSx model cache plans it (cached_prod_plan): the shipped prod downloads from S3."""
PRODUCTION = {"dev": False, "prod": True, "npu": True, CACHED_PROD: True}
CACHE = {"dev": False, "prod": False, "npu": True, CACHED_PROD: True}
"""Whether the stack enables the FSx model cache (stacks/Pulumi.prod.yaml says why prod does not)."""
STATEFUL = (
    "aws:s3/bucket:Bucket",
    "aws:secretsmanager/secret:Secret",
    "aws:fsx/lustreFileSystem:LustreFileSystem",
    "aws:kms/key:Key",
    # Issue 28 R8: the batch lane's work queue and dead-letter queue (prod and npu).
    "aws:sqs/queue:Queue",
    "aws:ecr/repository:Repository",
    "aws:elasticache/replicationGroup:ReplicationGroup",
)
NGC_KEY = "nvapi-KNOWN-4242-leak-canary"
HF_TOKEN = "hf_KNOWNleakCanary0042"


@pytest.mark.parametrize("stack", STACKS)
def test_stateful_resources_are_protected_and_retained_exactly_in_production(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    # Karpenter's interruption queue holds 5-minute notices, nothing worth keeping (policy: transient queues).
    stateful = [r for r in resources if r.type in STATEFUL and "Karpenter" not in r.urn]
    # The model store's two, and the batch lane's in the stacks that turn it on (docs/batch.md).
    assert len(by_type(resources, "aws:s3/bucket:Bucket")) == 2 + (stack in ("prod", "npu"))
    assert len(by_type(resources, "aws:secretsmanager/secret:Secret")) >= 2
    queues = [q for q in by_type(resources, "aws:sqs/queue:Queue") if "BatchQueues" in q.urn]
    assert len(queues) == 2 * (stack in ("prod", "npu"))
    for r in stateful:
        assert r.protect is PRODUCTION[stack] and r.retain_on_delete is PRODUCTION[stack], r.urn
    for r in resources:
        if r.type.startswith("aws:s3/bucket") or r.type == "aws:secretsmanager/secretVersion:SecretVersion":
            assert r.retain_on_delete is PRODUCTION[stack], r.urn


@pytest.mark.parametrize("stack", STACKS)
def test_only_development_buckets_may_be_force_destroyed(stack_plan, stack):
    buckets = by_type(stack_plan(stack).run.resources, "aws:s3/bucket:Bucket")
    assert all(b.inputs["forceDestroy"] is (stack == "dev") for b in buckets)


@pytest.fixture(scope="module")
def cached_prod_file(tmp_path_factory, repo) -> Path:
    """prod's stack file with the FSx model cache it had before it downloaded from S3, read by the rollout
    (inference.model.source fsx, so no ranged GETs: coldStart.downloadConcurrency unset), and the parallel pulls it
    had then (no image cache, whose snapshot a plan of bare components would have no account to read)."""
    doc = copy.deepcopy(yaml.safe_load((repo / "stacks" / "Pulumi.prod.yaml").read_text()))
    config = doc["config"]
    config["inference-platform:fsx"] = dict(PROD_CACHE)
    config["inference-platform:inference"]["model"]["source"] = "fsx"
    config["inference-platform:coldStart"] = {"imagePull": "parallel"}
    stack_file = tmp_path_factory.mktemp("cached-prod") / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc))
    return stack_file


@pytest.fixture(scope="module")
def cached_prod_plan(cached_prod_file, repo):
    return make_plan(repo, "prod", stack_file=cached_prod_file)


@pytest.fixture
def plan_of(stack_plan, request):
    """A shipped stack's plan, or CACHED_PROD's."""
    return lambda name: request.getfixturevalue("cached_prod_plan") if name == CACHED_PROD else stack_plan(name)


@pytest.mark.parametrize("stack", [*STACKS, CACHED_PROD])
def test_the_fsx_cache_and_its_volume_exist_where_the_stack_enables_it(plan_of, stack):
    resources = plan_of(stack).run.resources
    file_systems = by_type(resources, "aws:fsx/lustreFileSystem:LustreFileSystem")
    volumes = by_type(resources, "kubernetes:core/v1:PersistentVolume")
    assert len(file_systems) == len(volumes) == (1 if CACHE[stack] else 0)
    if file_systems:
        assert file_systems[0].protect is PRODUCTION[stack] and file_systems[0].retain_on_delete is PRODUCTION[stack]
        (link,) = by_type(resources, "aws:fsx/dataRepositoryAssociation:DataRepositoryAssociation")
        bucket = one(resources, "model-store-models").outputs["bucket"]
        assert link.inputs["dataRepositoryPath"] == f"s3://{bucket}/models/"
        zone_a = [
            s
            for s in by_type(resources, "aws:ec2/subnet:Subnet")
            if s.inputs["tags"]["tier"] == "private" and s.inputs["availabilityZone"].endswith("a")
        ]
        assert file_systems[0].property_dependencies["subnetIds"] == [zone_a[0].urn]
        fsx = plan_of(stack).run.outputs["modelCache"]
        assert fsx["fileSystemId"] == file_systems[0].id


@pytest.mark.parametrize("stack", [*STACKS, CACHED_PROD])
def test_workloads_get_their_roles_drivers_and_secret_classes(plan_of, stack):
    resources = plan_of(stack).run.resources
    bindings = {
        (r.inputs["namespace"], r.inputs["serviceAccount"])
        for r in by_type(resources, "aws:eks/podIdentityAssociation:PodIdentityAssociation")
    }
    assert {(INFERENCE.namespace, INFERENCE.name), (MODEL_SYNC.namespace, MODEL_SYNC.name)} <= bindings
    charts = {r.inputs["chart"]: r.inputs["version"] for r in by_type(resources, "kubernetes:helm.sh/v3:Release")}
    assert charts["secrets-store-csi-driver"] == "1.6.0"
    assert charts["secrets-store-csi-driver-provider-aws"] == "3.1.1"
    assert ("aws-fsx-csi-driver" in charts) is CACHE[stack]
    classes = [
        c
        for c in by_type(resources, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
        if "inference:edge:" not in (c.parent or "")  # the gateway's client keys: tests/infra/test_edge_stacks.py
        and "inference:observability:" not in (c.parent or "")  # Grafana's admin: test_monitoring_stack.py
        and "inference:verification:" not in c.urn  # the verification Job's one key: test_verification_stacks.py
    ]
    # Shipped stacks set no NGC key or HF token, and check API keys at the gateway, not in Triton (serving.auth
    # off): no workload class at all. The leak plan below sets all three and sees each class.
    assert classes == []


def test_cluster_objects_use_the_clusters_one_provider(cached_prod_plan):
    resources = cached_prod_plan.run.resources
    (provider,) = by_type(resources, "pulumi:providers:kubernetes")
    prefixes = ("workload-", "secrets-store-csi", "fsx-csi", "inference-secrets")
    mine = [r for r in resources if r.type.startswith("kubernetes:") and r.name.startswith(prefixes)]
    assert len(mine) >= 10
    assert {r.provider for r in mine} == {provider.urn}


@pytest.mark.parametrize("stack", STACKS)
def test_stack_outputs_name_the_storage_without_any_secret_value(stack_plan, stack):
    outputs = stack_plan(stack).run.outputs
    assert outputs["modelStore"]["modelPrefix"] == "models/"
    assert set(outputs["modelAccessRoleArns"]) == {"reader", "writer"}
    assert all(arn.startswith("arn:aws:secretsmanager:") for arn in outputs["secretArns"].values())


# --- the secret-leak test ---------------------------------------------------------------------------


def _without_secrets(value):
    """Wire-form value with every secret-marked subtree removed: what is stored or shown in clear."""
    if isinstance(value, dict):
        if value.get(SECRET_SIG_KEY) == SECRET_SIG:
            return None
        return {k: _without_secrets(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_secrets(v) for v in value]
    return value


@pytest.fixture(scope="module")
def leak_plan(tmp_path_factory, repo):
    """The prod stack with a known NGC key and HF token set as `secure:` config values."""
    tmp = tmp_path_factory.mktemp("leak")
    doc = copy.deepcopy(yaml.safe_load((repo / "stacks" / "Pulumi.prod.yaml").read_text()))
    doc["config"]["inference-platform:ngcApiKey"] = {"secure": "v1:ciphertext-from-pulumi-config-set-secret"}
    doc["config"]["inference-platform:hfToken"] = {"secure": "v1:another-ciphertext"}
    # Triton checks its own key too, on a header the gateway does not strip: the API keys reach its pods.
    doc["config"]["inference-platform:serving"]["auth"] = {"enabled": True, "header": "x-triton-key"}
    stack_file = tmp / "Pulumi.prod.yaml"
    stack_file.write_text(yaml.safe_dump(doc))
    plan = make_plan(repo, "prod", stack_file=stack_file, secret_values={"ngcApiKey": NGC_KEY, "hfToken": HF_TOKEN})
    manifests = write_manifests(plan.run.resources, tmp / "manifests")
    return plan, manifests


def _known_secrets(plan) -> list[str]:
    passwords = by_type(plan.run.resources, "random:index/randomPassword:RandomPassword")
    platform = ("inference:edge:", "inference:observability:")
    keys = [r.outputs["result"] for r in passwords if not any(p in (r.parent or "") for p in platform)]
    assert len(keys) == 2 and all(len(k) == 48 for k in keys)
    # Grafana's generated admin password (Secrets Manager, read through the CSI driver).
    grafana = [r.outputs["result"] for r in passwords if "inference:observability:" in (r.parent or "")]
    assert len(grafana) == 1 and len(grafana[0]) == 32
    # The edge's generated values (one key per gateway client, the rate-limit Redis AUTH token) too.
    edge = [r.outputs["result"] for r in passwords if "inference:edge:" in (r.parent or "")]
    assert len(edge) == 3 and all(len(k) >= 48 for k in edge)
    return [NGC_KEY, HF_TOKEN, *keys, *edge, *grafana]


def test_injected_secrets_reach_secrets_manager_as_secrets(leak_plan):
    plan, _ = leak_plan
    versions = {r.name: r for r in by_type(plan.run.resources, "aws:secretsmanager/secretVersion:SecretVersion")}
    assert versions["secrets-ngc-api-key-value"].inputs["secretString"] == {
        SECRET_SIG_KEY: SECRET_SIG,
        "value": NGC_KEY,
    }
    assert versions["secrets-hf-token-value"].inputs["secretString"]["value"] == HF_TOKEN
    sync = [
        c
        for c in by_type(plan.run.resources, "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass")
        if "inference:verification:" not in c.urn  # one edge client's key: tests/infra/test_verification_stacks.py
    ]
    files = {
        c.inputs["metadata"]["namespace"]: [
            o["objectAlias"] for o in yaml.safe_load(c.inputs["spec"]["parameters"]["objects"])
        ]
        for c in sync
    }
    assert files == {
        "inference": ["api-key", "api-key-2"],
        "model-sync": ["hf-token", "ngc-api-key"],
        "envoy-gateway-system": ["batch", "chat", "redis-auth"],  # the gateway's clients and Redis AUTH
        "monitoring": ["admin-password"],  # Grafana's admin password
        "batch": ["api-key"],  # the batch workers' one serving key (components/batch/workloads.py)
    }


def test_no_secret_appears_in_the_plan_json(leak_plan):
    plan, _ = leak_plan
    text = json.dumps(to_json(plan))
    for secret in _known_secrets(plan):
        assert secret not in text
    assert "[secret]" in text


def test_no_secret_appears_in_any_input_not_marked_secret_or_in_stack_outputs(leak_plan):
    plan, _ = leak_plan
    secrets = _known_secrets(plan)
    for r in plan.run.resources:
        clear = json.dumps(_without_secrets(r.inputs))
        assert not [s for s in secrets if s in clear], r.urn
    clear_outputs = json.dumps(_without_secrets(plan.run.outputs))
    assert not [s for s in secrets if s in clear_outputs]


def test_no_secret_appears_in_a_rendered_manifest(leak_plan):
    plan, manifests = leak_plan
    assert len(manifests) >= 8
    secrets = _known_secrets(plan)
    for path in manifests:
        text = Path(path).read_text()
        assert not [s for s in secrets if s in text], path


def test_the_leak_plan_passes_every_policy(leak_plan):
    plan, _ = leak_plan
    assert plan.violations == []


# --- what build_storage hands the workloads' rollouts ----------------------------------------------


def _build(settings, *, storage=True):
    found = {}

    def program():
        foundation = build_foundation(settings)
        compute = build_cluster(settings, foundation)
        if storage:
            found["storage"] = build_storage(settings, foundation, compute)

    return program, found


def test_rollouts_get_the_model_claim_the_secret_classes_and_the_roles(run_components, cached_prod_file):
    program, found = _build(load_stack_settings("prod", stack_file=cached_prod_file))
    run_components(program, region="us-east-1")
    storage = found["storage"]
    # serving.auth is off in prod (the gateway checks keys): Triton gets no secret class.
    assert storage.model_claim == "models" and storage.secret_classes == {}
    assert storage.cache is not None and storage.store.model_prefix == "models/"
    assert (storage.inference, storage.model_sync) == (INFERENCE, MODEL_SYNC)
    assert {account: ns.namespace for account, ns in storage.namespaces.items()} == {
        INFERENCE: "inference",
        MODEL_SYNC: "model-sync",
    }
    assert storage.namespaces[INFERENCE].service_accounts == ["triton"]


@pytest.mark.parametrize("stack", STACKS)
def test_every_inference_object_waits_for_the_namespace_and_its_service_account(stack_plan, stack):
    resources = stack_plan(stack).run.resources
    namespace = one(resources, "workload-inference-namespace")
    account = one(resources, "workload-inference-triton")
    rollout = [r for r in resources if r.custom and r.parent and "InferenceService::inference" in r.parent]
    assert len(rollout) >= 6
    for resource in rollout:
        assert {namespace.urn, account.urn} <= set(resource.dependencies), resource.urn


def test_a_cache_zone_the_network_does_not_have_stops_before_any_storage_resource(run_components, cached_prod_file):
    settings = load_stack_settings("prod", stack_file=cached_prod_file)
    settings = dataclasses.replace(settings, fsx=settings.fsx.model_copy(update={"availability_zone": "us-east-1f"}))
    before_storage = len(run_components(_build(settings, storage=False)[0], region="us-east-1").resources)
    with pytest.raises(ProgramError, match=re.escape("fsx.availabilityZone: 'us-east-1f'")) as err:
        run_components(_build(settings)[0], region="us-east-1")
    assert err.value.registered == before_storage


def test_unset_optional_secrets_create_nothing(stack_plan):
    """Pulumi.yaml's empty default for ngcApiKey and hfToken means unset: no secret, no plain-text error."""
    names = {r.name for r in by_type(stack_plan("prod").run.resources, "aws:secretsmanager/secret:Secret")}
    assert names and not {n for n in names if "ngc" in n or "hf-token" in n}
