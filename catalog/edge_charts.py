"""Helm charts and images of the edge, each pinned: pure data (the ``Chart`` of inference_platform.catalog.charts).

Sources
- AWS Load Balancer Controller chart 3.5.0 (app v3.5.0), repository https://aws.github.io/eks-charts
  (kubernetes-sigs/aws-load-balancer-controller helm/aws-load-balancer-controller/Chart.yaml at v3.5.0).
- Envoy Gateway v1.9.0, ``oci://docker.io/envoyproxy/gateway-helm`` (gateway.envoyproxy.io install docs).
- ExternalDNS chart 1.21.1 (app 0.21.0), repository https://kubernetes-sigs.github.io/external-dns/
  (kubernetes-sigs/external-dns charts/external-dns/Chart.yaml, 2026-08-22).
- Redis 7.4 (official image, Alpine variant) for the development rate-limit store.
"""

from __future__ import annotations

from typing import Final

from inference_platform.catalog.charts import Chart

LOAD_BALANCER_CONTROLLER: Final = Chart("aws-load-balancer-controller", "3.5.0", "https://aws.github.io/eks-charts")
ENVOY_GATEWAY: Final = Chart("oci://docker.io/envoyproxy/gateway-helm", "v1.9.0")
EXTERNAL_DNS: Final = Chart("external-dns", "1.21.1", "https://kubernetes-sigs.github.io/external-dns/")
REDIS_IMAGE: Final = "docker.io/library/redis:7.4.5-alpine"
