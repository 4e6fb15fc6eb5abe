"""The lane's pods as rendered: the environment the running code reads (checked by that code's own readers,
inference_platform.batch.config), system nodes only, hardened, least-privilege Pod Identity roles, and the
NetworkPolicies around them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from inference_platform.batch.config import api_config, worker_config
from inference_platform.components.batch import pods
from inference_platform.components.batch.pods import LaneEnv, Shape, ShedRule, WorkerEnv
from inference_platform.components.batch.workloads import BatchWorkloads, BatchWorkloadsArgs, ServingTarget
from tests.conftest import by_type, one

KEY = "arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555"
BUCKET_ARN = "arn:aws:s3:::inference-platform-prod-batch-abc"
WORK = "arn:aws:sqs:us-east-1:123456789012:inference-platform-prod-batch-work-abc"
DEAD = "arn:aws:sqs:us-east-1:123456789012:inference-platform-prod-batch-dead-letter-abc"
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:inference-platform-prod/api-key-0-AbCdEf"
LANE = LaneEnv(
    region="us-east-1",
    bucket="inference-platform-prod-batch-abc",
    queue_url="https://sqs.us-east-1.amazonaws.com/123456789012/inference-platform-prod-batch-work-abc",
    dead_letter_url="https://sqs.us-east-1.amazonaws.com/123456789012/inference-platform-prod-batch-dead-letter-abc",
    kms_key_arn=KEY,
    completion_window_hours=24,
    request_timeout_seconds=600,
    visibility_timeout_seconds=660,
    max_receive_count=5,
    max_file_bytes=100 * 2**20,
    max_requests=50_000,
    max_output_tokens=8192,
    lines_per_message=10,
    client_id_header="x-client-id",
    quota_requests=100_000,
    quota_tokens=20_000_000,
)
WORKER = WorkerEnv(
    concurrency=8,
    prometheus_url="http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
    shed_rules=(ShedRule(expr="sum(x) / clamp_min(count(up == 1), 1)", above=2),),
)
SERVING = ServingTarget(
    namespace="inference",
    pod_labels={"app.kubernetes.io/name": "triton", "app.kubernetes.io/instance": "inference"},
    url="http://triton.inference.svc.cluster.local:9000",
    port=9000,
)


def workload_args(**overrides) -> BatchWorkloadsArgs:
    values = dict(
        k8s_provider=None,
        cluster_name="inference-platform-prod",
        image="123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-platform-prod/batch@sha256:" + "a" * 64,
        lane=LANE,
        worker=WORKER,
        serving=SERVING,
        quota_overrides={"bulk": {"queuedRequests": 500_000, "queuedTokens": 200_000_000}},
        bucket_arn=BUCKET_ARN,
        queue_arn=WORK,
        dead_letter_arn=DEAD,
        kms_key_arn=KEY,
        region="us-east-1",
        api_key_secret_arn=SECRET,
        gateway_namespace="envoy-gateway-system",
        gateway_pod_labels={"inference.platform/edge-gateway": "inference-edge"},
    )
    values.update(overrides)
    return BatchWorkloadsArgs(**values)


@pytest.fixture
def lane(run_components):
    return run_components(lambda: BatchWorkloads("batch-workloads", workload_args())).resources


def _pod(resources, name):
    return one(resources, name).inputs["spec"]["template"]["spec"]


def _env(pod) -> dict[str, str]:
    return {e["name"]: e["value"] for e in pod["containers"][0]["env"]}


def test_the_api_environment_is_what_the_lanes_api_reads(lane, tmp_path):
    pod = _pod(lane, "batch-workloads-api-deployment")
    env = _env(pod)
    quotas = tmp_path / pods.QUOTAS_FILE
    quotas.write_text(one(lane, "batch-workloads-quotas").inputs["data"][pods.QUOTAS_FILE])
    config = api_config({**env, "BATCH_QUOTAS_FILE": str(quotas)})
    assert config.port == pods.API_PORT and config.common.metrics_port == pods.METRICS_PORT
    assert config.max_requests_per_batch == 50_000 and config.max_output_tokens == 8192
    assert config.lines_per_message == 10 and config.client_id_header == "x-client-id"
    assert config.quotas["bulk"].queued_tokens == 200_000_000
    assert env["BATCH_QUOTAS_FILE"] == f"{pods.QUOTAS_DIR}/{pods.QUOTAS_FILE}"
    mounts = pod["containers"][0]["volumeMounts"]
    assert {"name": "quotas", "mountPath": pods.QUOTAS_DIR, "readOnly": True} in mounts


def test_the_worker_environment_is_what_the_lanes_worker_reads(lane, tmp_path):
    env = _env(_pod(lane, "batch-workloads-worker-deployment"))
    assert env["BATCH_API_KEY_FILE"] == f"{pods.SECRETS_DIR}/{pods.API_KEY_FILE}"
    key = tmp_path / "api-key"
    key.write_text("k" * 32)
    config = worker_config({**env, "BATCH_API_KEY_FILE": str(key)})
    assert config.serving_url == SERVING.url and config.concurrency == 8
    assert [r.above for r in config.shed_rules] == [2.0]
    assert env["BATCH_VISIBILITY_TIMEOUT_SECONDS"] == "660" and env["BATCH_MAX_RECEIVE_COUNT"] == "5"


@pytest.mark.parametrize("name", ["batch-workloads-api-deployment", "batch-workloads-worker-deployment"])
def test_both_roles_run_hardened_on_the_system_nodes_only(lane, name):
    pod = _pod(lane, name)
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchExpressions": [{"key": "node-role", "operator": "In", "values": ["system"]}]}]
    assert "tolerations" not in pod and pod["automountServiceAccountToken"] is False
    (container,) = pod["containers"]
    assert container["resources"]["requests"] == container["resources"]["limits"]
    assert not set(container["resources"]["limits"]) - {"cpu", "memory"}
    security = container["securityContext"]
    assert (
        security["readOnlyRootFilesystem"]
        and security["runAsNonRoot"]
        and security["capabilities"] == {"drop": ["ALL"]}
    )
    assert container["livenessProbe"]["httpGet"]["port"] == "metrics"


def test_the_worker_waits_out_its_longest_request_on_shutdown_and_keda_owns_its_count(lane):
    worker = one(lane, "batch-workloads-worker-deployment")
    assert worker.inputs["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 600 + pods.STOP_MARGIN_SECONDS
    assert worker.inputs["spec"]["replicas"] == 0 and "spec.replicas" in worker.ignore_changes


def test_the_worker_mounts_one_key_through_its_own_class(lane):
    pod = _pod(lane, "batch-workloads-worker-deployment")
    (volume,) = pod["volumes"]
    assert volume["csi"]["volumeAttributes"] == {"secretProviderClass": "batch-worker-secrets"}
    spc = [r for r in lane if r.type.endswith("SecretProviderClass")]
    assert len(spc) == 1 and SECRET in spc[0].inputs["spec"]["parameters"]["objects"]


def _policy(lane, role):
    return json.loads(one(lane, f"batch-workloads-{role}-identity-policy").inputs["policy"])


def test_each_role_gets_its_own_resources_only(lane):
    api = {s["Sid"]: s for s in _policy(lane, "api")["Statement"]}
    assert api["LaneObjects"]["Resource"] == [f"{BUCKET_ARN}/files/*", f"{BUCKET_ARN}/results/*"]
    assert api["EnqueueLines"]["Resource"] == [WORK] and "sqs:ReceiveMessage" not in api["EnqueueLines"]["Action"]
    assert api["WatchDeadLetters"]["Action"] == ["sqs:GetQueueAttributes"]
    worker = {s["Sid"]: s for s in _policy(lane, "worker")["Statement"]}
    assert worker["LaneObjects"]["Resource"] == [f"{BUCKET_ARN}/results/*"]
    assert worker["TakeWork"]["Resource"] == [WORK] and "sqs:SendMessage" not in worker["TakeWork"]["Action"]
    assert "WatchDeadLetters" not in worker and "ListLanePrefixes" not in worker
    for statements in (api, worker):
        key = statements["StackKeyThroughS3AndSqs"]
        assert key["Resource"] == KEY
        assert key["Condition"]["StringEquals"]["kms:ViaService"] == ["s3.us-east-1.amazonaws.com",
                                                                      "sqs.us-east-1.amazonaws.com"]  # fmt: skip
        assert all("*" not in str(s["Resource"]).replace("/*", "") for s in statements.values())


def test_network_policies_admit_the_gateway_and_monitoring_and_let_workers_reach_the_servers(lane):
    api = one(lane, "batch-workloads-api-policy").inputs["spec"]
    ports = {tuple(p["port"] for p in rule["ports"]) for rule in api["ingress"]}
    assert ports == {(pods.API_PORT,), (pods.METRICS_PORT,)}
    gateway = next(r for r in api["ingress"] if r["ports"][0]["port"] == pods.API_PORT)["from"][0]
    assert gateway["podSelector"]["matchLabels"] == {"inference.platform/edge-gateway": "inference-edge"}
    worker = one(lane, "batch-workloads-worker-policy").inputs["spec"]
    egress_ports = {p["port"] for rule in worker["egress"] for p in rule.get("ports", [])}
    assert {53, 80, 443, 9000, 9090} <= egress_ports
    to_serving = one(lane, "batch-workloads-workers-to-serving").inputs
    assert to_serving["metadata"]["namespace"] == "inference"
    assert to_serving["spec"]["ingress"][0]["ports"] == [{"protocol": "TCP", "port": 9000}]


def test_without_an_edge_nothing_outside_the_cluster_reaches_the_api(run_components):
    resources = run_components(
        lambda: BatchWorkloads("w", workload_args(gateway_namespace=None, gateway_pod_labels={}))
    ).resources
    api = one(resources, "w-api-policy").inputs["spec"]
    assert [r["ports"][0]["port"] for r in api["ingress"]] == [pods.METRICS_PORT]


def test_two_api_replicas_get_a_disruption_budget(lane, run_components):
    assert one(lane, "batch-workloads-api-disruption").inputs["spec"]["minAvailable"] == 1
    single = run_components(lambda: BatchWorkloads("w", workload_args(api_replicas=1))).resources
    assert not by_type(single, "kubernetes:policy/v1:PodDisruptionBudget")


def test_no_pulumi_module_is_needed_to_render_the_specs():
    assert Shape(cpu=0.5, memory_gib=1).run_as_user == 1000
    assert Path(pods.__file__).read_text().count("import pulumi") == 0


BUDGET_FACTS = json.loads((Path(__file__).parents[2] / "data" / "upstream" / "batch_budget.json").read_text())[
    "envoyproxy/gateway@v1.9.0"
]


def _budget_settings():
    from inference_platform.settings import load_settings

    edge = {
        "auth": {"clients": {"alpha": {"tier": "std"}, "beta": {"tier": "std"}}},
        "rateLimits": {"tiers": {"std": {}}},
        "tokenLimits": {"clients": {"alpha": {"tokensPerMonth": 9_000_000}}, "weights": {"batch": 0.5}},
    }
    return load_settings({"tags": {"owner": "t", "costCenter": "c"}, "edge": edge}, project="p", stack="s",
                         region="us-east-1")  # fmt: skip


def test_with_budgets_both_roles_read_the_edges_budget_descriptors_and_may_reach_the_rate_limit_service(
    run_components,
):
    from dataclasses import replace

    from inference_platform.components.batch.workloads import RateLimitTarget
    from inference_platform.components.edge import token_limits
    from inference_platform.infra.batch import lane_budgets
    from inference_platform.settings.derived import stack_edge_policy

    resource = BUDGET_FACTS["internal/infrastructure/kubernetes/ratelimit/resource.go"]
    assert (
        resource["InfraName"],
        resource["InfraGRPCPort"],
    ) == (token_limits.RATE_LIMIT_SERVICE, token_limits.RATE_LIMIT_GRPC_PORT)
    assert resource["rateLimitLabels"] == token_limits.RATE_LIMIT_POD_LABELS
    ports = BUDGET_FACTS["internal/infrastructure/kubernetes/ratelimit/resource_provider.go"]["Service.ports"]
    assert [p["port"] for p in ports] == [token_limits.RATE_LIMIT_GRPC_PORT]
    settings = _budget_settings()
    budgets = lane_budgets(settings)
    assert budgets is not None
    target = RateLimitTarget(
        namespace="envoy-gateway-system",
        pod_labels=token_limits.RATE_LIMIT_POD_LABELS,
        port=token_limits.RATE_LIMIT_GRPC_PORT,
    )
    resources = run_components(
        lambda: BatchWorkloads("b", workload_args(lane=replace(LANE, budgets=budgets), rate_limit_service=target))
    ).resources
    domain = token_limits.cluster_domain("envoy-gateway-system", "inference-edge")
    expected = token_limits.budget_descriptors(stack_edge_policy(settings), domain=domain)
    for role, read in (("api", api_config), ("worker", worker_config)):
        env = _env(_pod(resources, f"b-{role}-deployment"))
        env.pop("BATCH_API_KEY_FILE", None)
        env.pop("BATCH_QUOTAS_FILE", None)
        parsed = read({**env, "BATCH_SERVING_URL": "http://s:9000"}).common.budgets
        assert parsed is not None and parsed.domain == domain
        assert parsed.address == "envoy-ratelimit.envoy-gateway-system.svc.cluster.local:8081"
        assert (
            resource["GetServiceURL"]
            .replace("<InfraName>", "envoy-ratelimit")
            .replace("<namespace>", "envoy-gateway-system")
            .replace("<dnsDomain>", "cluster.local")
            .replace("<InfraGRPCPort>", "8081")
            == f"grpc://{parsed.address}"
        )
        assert {c: [list(e) for e in v] for c, v in parsed.clients.items()} == expected
        assert parsed.weights == {"input": 1000, "cached": 1000, "output": 1000, "batch": 500}
        policy = one(resources, f"b-{role}-policy").inputs["spec"]
        (rule,) = [r for r in policy["egress"] if r.get("ports") == [{"protocol": "TCP", "port": 8081}]]
        assert rule["to"] == [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "envoy-gateway-system"}},
                "podSelector": {"matchLabels": resource["rateLimitLabels"]},
            }
        ]
    assert set(expected) == {"alpha"}  # beta has no budget


def test_without_budgets_neither_role_gets_the_variable_nor_the_egress(lane):
    for role in ("api", "worker"):
        assert "BATCH_BUDGETS" not in _env(_pod(lane, f"batch-workloads-{role}-deployment"))
        egress = one(lane, f"batch-workloads-{role}-policy").inputs["spec"]["egress"]
        assert all(r.get("ports") != [{"protocol": "TCP", "port": 8081}] for r in egress)
