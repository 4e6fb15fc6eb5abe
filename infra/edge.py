"""The stack's edge: internet -> ALB (TLS, WAF) -> Envoy Gateway (API keys, per-client limits, timeouts,
circuit breaking) -> Triton.

Built when ``edge.domain`` names the API hostname and the rollout has a Triton Service to route to;
otherwise the load-balancer security group stays attached to nothing and no request path exists.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import pulumi

from inference_platform.catalog.edge_policy import RouteGroup
from inference_platform.catalog.serving_contract import OPENAI_PORT
from inference_platform.components.edge.gateway import (
    CREDENTIALS_SECRET,
    GATEWAY_CLASS,
    NAMESPACE,
    EdgeGateway,
    EdgeGatewayArgs,
)
from inference_platform.components.edge.gateway_api import Backend, GatewayTarget
from inference_platform.components.edge.load_balancer_controller import (
    LoadBalancerController,
    LoadBalancerControllerArgs,
)
from inference_platform.components.edge.public_endpoint import PublicEndpoint, PublicEndpointArgs, WafRules
from inference_platform.components.edge.rate_limit_store import RateLimitStore, RateLimitStoreArgs
from inference_platform.components.serving.inference_service import InferenceService
from inference_platform.infra.cluster import Compute
from inference_platform.infra.foundation import Foundation
from inference_platform.infra.inference import Inference
from inference_platform.infra.models import Models
from inference_platform.infra.storage import Storage
from inference_platform.settings import Settings
from inference_platform.settings.derived import stack_edge_policy

GATEWAY_NAME = "inference-edge"
# Where the ALB's target groups send: the Envoy proxies' HTTP listener (TLS ends at the ALB).
GATEWAY_PORT = 8080


@dataclass(frozen=True)
class Edge:
    controller: LoadBalancerController
    gateway: EdgeGateway
    endpoint: PublicEndpoint


def build_edge(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    inference: Inference,
    routes: Sequence[tuple[RouteGroup, Backend]] = (),
    route_dependencies: Sequence[pulumi.Resource] = (),
    models: Models | None = None,
) -> Edge | None:
    """``routes``: more route groups (the batch lane's Files and Batches API), each with its backend, behind the same
    authentication and limits; ``route_dependencies`` must exist first (their namespaces take a ReferenceGrant)."""
    cfg = settings.edge
    if cfg.domain is None or inference.service is None:
        reason = "edge.domain is not set" if cfg.domain is None else "there is no Triton Service yet"
        pulumi.log.info(f"edge: no public endpoint ({reason})")
        return None
    controller = _controller(settings, foundation, compute)
    store = _rate_limit_store(settings, foundation, compute)
    gateway = _gateway(
        settings, foundation, compute, storage, inference.service, store, routes, route_dependencies, models
    )
    endpoint = _public_endpoint(settings, foundation, compute, storage, gateway, controller)
    pulumi.export(
        "edge",
        {
            "url": f"https://{cfg.domain}",
            "clients": [c.client_id for c in cfg.policy().clients],
            "webAclArn": endpoint.web_acl_arn,
            "rateLimitStore": cfg.redis.resolved_mode(settings.environment),
            # How the gateway picks a replica (issue 29): the plan and the PR comment show it.
            "routing": cfg.routing.routing(settings.environment).describe(),
        },
    )
    return Edge(controller=controller, gateway=gateway, endpoint=endpoint)


def _controller(settings: Settings, foundation: Foundation, compute: Compute) -> LoadBalancerController:
    return LoadBalancerController(
        "load-balancer-controller",
        LoadBalancerControllerArgs(
            cluster_name=foundation.cluster_name,
            cluster=compute.cluster_name,
            region=settings.region.name,
            account_id=foundation.account_id,
            vpc_id=foundation.network.vpc_id,
            provider=compute.provider,
            partition=foundation.partition,
            default_tags=settings.default_tags,
            # Its pods run on the system nodes; until one is Ready its webhooks refuse Ingresses.
            depends_on=[compute.system_nodes],
        ),
    )


def _rate_limit_store(settings: Settings, foundation: Foundation, compute: Compute) -> RateLimitStore:
    redis = settings.edge.redis
    return RateLimitStore(
        "rate-limit-store",
        RateLimitStoreArgs(
            mode=redis.resolved_mode(settings.environment),
            name_prefix=settings.name_prefix,
            namespace=NAMESPACE,
            provider=compute.provider,
            vpc_id=foundation.network.vpc_id,
            subnet_ids=foundation.network.private_subnet_ids,
            client_security_group_id=compute.node_security_group_id,
            kms_key_arn=foundation.keys.storage_key_arn,
            node_type=redis.node_type,
            protect=settings.production,
        ),
    )


def _gateway(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    service: InferenceService,
    store: RateLimitStore,
    routes: Sequence[tuple[RouteGroup, Backend]] = (),
    route_dependencies: Sequence[pulumi.Resource] = (),
    models: Models | None = None,
) -> EdgeGateway:
    cfg = settings.edge
    policy = stack_edge_policy(settings)
    if routes:
        policy = dataclasses.replace(policy, extra_routes=tuple(group for group, _ in routes))
    target = GatewayTarget(
        namespace=NAMESPACE,
        name=GATEWAY_NAME,
        service=service.service_name,
        service_namespace=storage.inference.namespace,
        port=OPENAI_PORT,
        credentials_secret=CREDENTIALS_SECRET,
        hostname=cfg.domain,
        gateway_class=GATEWAY_CLASS,
        listener_port=GATEWAY_PORT,
        backends=tuple(backend for _, backend in routes),
    )
    return EdgeGateway(
        "edge-gateway",
        EdgeGatewayArgs(
            provider=compute.provider,
            cluster=compute.cluster_name,
            policy=policy,
            target=target,
            # The rollout's pod selector (inference_platform.components.serving.inference_service): app name + instance.
            inference_pod_labels={
                "app.kubernetes.io/name": service.service_name,
                "app.kubernetes.io/instance": "inference",
            },
            # Several models (infra/models.py): routing by the body's model, the canary, fallbacks.
            model_routing=models.routing if models else None,
            redis_url=store.url,
            redis_tls=store.tls,
            neuron_replicas=settings.serving.backend == "neuron",
            rate_limit_fail_closed=cfg.rate_limits.resolved_fail_closed(settings.environment),
            rate_limit_timeout_ms=cfg.rate_limits.service_timeout_ms,
            redis_auth_secret_arn=store.auth_secret_arn,
            name_prefix=settings.name_prefix,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            partition=foundation.partition,
            protect=settings.production,
            # The credentials' SecretProviderClass needs the CSI driver's CRD; Envoy Gateway's own pods
            # (no nodeSelector) can run only on the untainted system nodes, and Helm waits for them.
            depends_on=[
                service,
                compute.system_nodes,
                *([storage.secrets_store] if storage.secrets_store else []),
                *route_dependencies,
                *(models.services.values() if models else []),
            ],
        ),
    )


def _public_endpoint(
    settings: Settings,
    foundation: Foundation,
    compute: Compute,
    storage: Storage,
    gateway: EdgeGateway,
    controller: LoadBalancerController,
) -> PublicEndpoint:
    cfg, waf = settings.edge, settings.edge.waf
    assert cfg.domain is not None  # build_edge builds none without it
    return PublicEndpoint(
        "public-endpoint",
        PublicEndpointArgs(
            provider=compute.provider,
            namespace=NAMESPACE,
            name_prefix=settings.name_prefix,
            cluster_name=foundation.cluster_name,
            cluster=compute.cluster_name,
            domain=cfg.domain,
            backend_service=gateway.proxy_service,
            backend_port=GATEWAY_PORT,
            security_group_id=foundation.security_groups.load_balancer_sg_id,
            access_log_bucket=storage.store.log_bucket_name,
            waf=WafRules(
                managed_rule_groups=list(waf.managed_rule_groups),
                ip_rate_limit=waf.ip_rate_limit,
                window_seconds=waf.window_seconds,
                api_key_rate_limit=waf.api_key_rate_limit,
                api_key_header=cfg.auth.header,
            ),
            hosted_zone_id=cfg.hosted_zone_id,
            hosted_zone_name=cfg.hosted_zone_name,
            certificate_arn=cfg.certificate_arn,
            tls_policy=cfg.tls_policy,
            idle_timeout_seconds=cfg.idle_timeout_seconds,
            redirect_http=cfg.redirect_http,
            deletion_protection=cfg.resolved_deletion_protection(settings.environment),
            partition=foundation.partition,
        ),
        opts=pulumi.ResourceOptions(depends_on=[controller.release, gateway.release]),
    )
