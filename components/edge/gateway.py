"""Envoy Gateway in the cluster: the pinned controller, the Gateway API objects rendered from the edge
policy (inference_platform.components.edge.gateway_api), the client credentials, and the NetworkPolicy that admits
the serving pods' OpenAI port only from the gateway's Envoy proxies.

The controller's global rate limits keep their counters in Redis (inference_platform.components.edge.rate_limit_store),
set at install (``config.envoyGateway.rateLimit.backend``). Everything the proxies serve comes from
typed objects whose custom resources are checked offline (tests/components/edge).

The controller's install values (Redis backend, ``failClosed``, the rate-limit service timeout, the extension APIs
the gateway's objects need) are ``components.edge.controller_config.controller_values``, which the local Envoy
is held to as well.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from inference_platform.catalog import edge_charts as charts
from inference_platform.catalog.edge_policy import RATE_LIMIT_SERVICE_TIMEOUT_MS, EdgePolicy
from inference_platform.catalog.endpoint_picker import SERVER_POD_LABELS
from inference_platform.catalog.envoy_gateway_gates import features_used
from inference_platform.components.common.errors import raise_if
from inference_platform.components.edge.client_credentials import ClientCredentials, ClientCredentialsArgs

# Re-exported: the controller's values lived here before they moved to the Pulumi-free module.
from inference_platform.components.edge.controller_config import REDIS_CERTS_VOLUME as REDIS_CERTS_VOLUME
from inference_platform.components.edge.controller_config import controller_values
from inference_platform.components.edge.endpoint_picker import EndpointPicker, EndpointPickerArgs
from inference_platform.components.edge.gateway_api import PROXY_LABEL, GatewayTarget, render_gateway_objects
from inference_platform.components.edge.model_routing import ModelRouting, with_model_routing

NAMESPACE = "envoy-gateway-system"
GATEWAY_CLASS = "envoy-gateway"
CONTROLLER_NAME = "gateway.envoyproxy.io/gatewayclass-controller"
CREDENTIALS_SECRET = "inference-api-keys"


@dataclass(frozen=True, kw_only=True)
class EdgeGatewayArgs:
    """What the gateway needs: the cluster's provider, the edge policy, its target and the rate-limit Redis."""

    provider: k8s.Provider
    """Required. The cluster's Kubernetes provider."""
    cluster: pulumi.Input[str]
    """Required. The cluster resource's name output."""
    policy: EdgePolicy
    """Required. Clients, tiers, timeouts, circuit breaker (from the edge settings)."""
    target: GatewayTarget
    """Required. Where the gateway runs and the serving Service."""
    inference_pod_labels: Mapping[str, str]
    """Required. Labels selecting the serving pods (the NetworkPolicy's subject)."""
    redis_url: pulumi.Input[str]
    """Required. ``host:port`` of the rate-limit Redis."""
    model_routing: ModelRouting | None = None
    """Default none (one model). Several models behind the URL (components/edge/model_routing.py): rules by the
    body's model, the canary's weights, fallbacks, the edge's /v1/models; each rollout's pods admitted from the
    proxies."""
    redis_tls: bool = False
    """Default ``False``. The rate-limit service talks TLS to Redis (ElastiCache requires it)."""
    neuron_replicas: bool = False
    """Default ``False``. The serving pods are Neuron's (``serving.backend: neuron``): ``edge.routing:
    inference-pool``'s picker scores them on the ``neuron_llm`` step's gauges (``catalog.endpoint_picker``)."""
    rate_limit_fail_closed: bool = False
    """Default ``False`` (Envoy Gateway's default: fail open). ``True`` refuses requests (HTTP 500) while
    the rate-limit service does not answer, instead of letting them through unlimited."""
    rate_limit_timeout_ms: int = RATE_LIMIT_SERVICE_TIMEOUT_MS
    """Default 100. How long the proxies wait for the rate-limit service (Envoy Gateway's own default is Envoy's
    20 ms); with ``rate_limit_fail_closed`` a later answer is a 500."""
    redis_auth_secret_arn: pulumi.Input[str] | None = None
    """Default none. Secrets Manager secret of the Redis AUTH token (ElastiCache), synced to the
    rate-limit pods through the credentials' CSI sync."""
    name_prefix: str
    """Required."""
    kms_key_arn: pulumi.Input[str]
    """Required. Encrypts the client keys."""
    region: str
    """Required."""
    partition: str = "aws"
    """Default ``aws``."""
    protect: bool = False
    """Default ``False``; production."""
    depends_on: Sequence[pulumi.Resource] = ()
    """Default none. What must exist first (system nodes, the inference namespace and Service)."""


class EdgeGateway(pulumi.ComponentResource):
    """Envoy Gateway in the cluster: the pinned controller, the Gateway API objects of the edge policy, the client
    credentials."""

    proxy_service: str
    namespace: str
    release: k8s.helm.v3.Release
    client_secret_arns: dict[str, pulumi.Output[str]]
    """Client id -> ARN of its API-key secret (empty without auth): the verification Job mounts one."""

    def __init__(self, name: str, args: EdgeGatewayArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:edge:EdgeGateway", name, None, opts)
        target = args.target
        self.namespace = target.namespace
        self.proxy_service = target.envoy_service
        objects = render_gateway_objects(args.policy, target)
        # With the picker scheduling, the routing script also names each request's rollout profile (issue 32).
        routing = (
            dataclasses.replace(args.model_routing, picker_profiles=args.policy.routing.mode == "inference-pool")
            if args.model_routing is not None
            else None
        )
        if routing is not None:
            objects = with_model_routing(objects, routing, gateway=target.name, namespace=target.namespace)
        self.release = k8s.helm.v3.Release(
            f"{name}-controller",
            name="envoy-gateway",
            **charts.ENVOY_GATEWAY.release_source(),
            namespace=target.namespace,
            create_namespace=True,
            # The URL nested as an input: during a preview only it is unknown, the switches the pack reads are not.
            values=controller_values(
                args.redis_url,
                tls=args.redis_tls,
                auth=args.redis_auth_secret_arn is not None,
                fail_closed=args.rate_limit_fail_closed,
                rate_limit_timeout_ms=args.rate_limit_timeout_ms,
                features=features_used(objects),
            ),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on)),
        )
        after = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[self.release])
        gateway_class = k8s.apiextensions.CustomResource(
            f"{name}-class",
            api_version="gateway.networking.k8s.io/v1",
            kind="GatewayClass",
            metadata={"name": target.gateway_class},
            spec={"controllerName": CONTROLLER_NAME},
            opts=after,
        )
        credentials = None
        if args.policy.auth_enabled:
            credentials = ClientCredentials(
                f"{name}-credentials",
                ClientCredentialsArgs(
                    provider=args.provider,
                    cluster=args.cluster,
                    namespace=target.namespace,
                    secret_name=target.credentials_secret,
                    clients=[c.client_id for c in args.policy.clients],
                    name_prefix=args.name_prefix,
                    kms_key_arn=args.kms_key_arn,
                    region=args.region,
                    partition=args.partition,
                    protect=args.protect,
                    redis_auth_secret_arn=args.redis_auth_secret_arn,
                    depends_on=[self.release],
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.client_secret_arns = dict(credentials.secret_arns) if credentials else {}
        crd_opts = pulumi.ResourceOptions(
            parent=self,
            provider=args.provider,
            depends_on=[self.release, gateway_class, *([credentials] if credentials else [])],
        )
        for manifest in objects:
            meta = manifest["metadata"]
            k8s.apiextensions.CustomResource(
                f"{name}-{manifest['kind'].lower()}-{meta['name']}",
                api_version=manifest["apiVersion"],
                kind=manifest["kind"],
                metadata=meta,
                spec=manifest["spec"],
                opts=crd_opts,
            )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-inference-ingress",
            metadata={"name": "from-edge-gateway", "namespace": target.service_namespace},
            spec=inference_network_policy_spec(args.inference_pod_labels, target),
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on)),
        )
        for service in _other_rollouts(args):
            k8s.networking.v1.NetworkPolicy(
                f"{name}-inference-ingress-{service}",
                metadata={"name": f"from-edge-gateway-{service}", "namespace": target.service_namespace},
                spec=inference_network_policy_spec({"app.kubernetes.io/name": service}, target),
                opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on)),
            )
        if args.policy.routing.mode == "inference-pool":
            # The picker the gateway's ext_proc calls (issue 29; components/edge/endpoint_picker.py). Several
            # rollouts: one profile each, over every serving pod of the stack (issue 32).
            profiles = routing.rollout_profiles() if routing is not None else ()
            per_rollout = len(profiles) > 1
            EndpointPicker(
                f"{name}-endpoint-picker",
                EndpointPickerArgs(
                    provider=args.provider,
                    namespace=target.service_namespace,
                    serving_labels=SERVER_POD_LABELS if per_rollout else args.inference_pod_labels,
                    serving_port=target.port,
                    gateway_namespace=target.namespace,
                    proxy_labels={PROXY_LABEL: target.name},
                    neuron=args.neuron_replicas,
                    profiles=profiles if per_rollout else (),
                    depends_on=list(args.depends_on),
                ),
                opts=pulumi.ResourceOptions(parent=self),
            )
        self.register_outputs({"proxy_service": self.proxy_service, "namespace": self.namespace})


def inference_network_policy_spec(pod_labels: Mapping[str, str], target: GatewayTarget) -> dict[str, Any]:
    """The serving pods' OpenAI port from the gateway's Envoy pods only: Triton's KServe v2 ports are not
    the gateway's to reach (NetworkPolicies add up: the rollout's own policy must then admit no load-balancer
    CIDRs, which infra/inference.py ensures)."""
    return {
        "podSelector": {"matchLabels": dict(pod_labels)},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": target.namespace}},
                        "podSelector": {"matchLabels": {PROXY_LABEL: target.name}},
                    }
                ],
                "ports": [{"port": target.port, "protocol": "TCP"}],
            }
        ],
    }


def _other_rollouts(args: EdgeGatewayArgs) -> list[str]:
    """The Services of the rollouts beside the stack's own (another model, a canary), in routing order."""
    if args.model_routing is None:
        return []
    out: list[str] = []
    for model in args.model_routing.models:
        for b in (model.current, *([model.canary] if model.canary else [])):
            if b.service != args.target.service and b.service not in out:
                out.append(b.service)
    return out


def _validate(args: EdgeGatewayArgs) -> None:
    problems = []
    if args.policy.auth_enabled and not args.policy.clients:
        problems.append("policy: authentication is on but there are no clients")
    if not args.inference_pod_labels:
        problems.append("inference_pod_labels: required (an empty selector would admit every pod)")
    raise_if("EdgeGateway", problems)
