"""Helm charts of the storage and secrets add-ons, each pinned to one chart version: pure data.

Sources (each repository's published Helm index, ``index.yaml`` on its gh-pages branch)
- aws-fsx-csi-driver 1.17.0 (driver v1.9.0, 2026-04-21): kubernetes-sigs/aws-fsx-csi-driver,
  repository https://kubernetes-sigs.github.io/aws-fsx-csi-driver.
- secrets-store-csi-driver 1.6.0 (2026-04-29; kubeVersion >= 1.30): kubernetes-sigs/secrets-store-csi-driver,
  repository https://kubernetes-sigs.github.io/secrets-store-csi-driver/charts.
- secrets-store-csi-driver-provider-aws 3.1.1 (provider image 3.1.1, 2026-06-02):
  aws/secrets-store-csi-driver-provider-aws, repository https://aws.github.io/secrets-store-csi-driver-provider-aws.
  Its bundled driver dependency floats (``^1``), so the driver is installed from its own pinned chart
  and the bundled copy is switched off.
"""

from __future__ import annotations

from typing import Final

from inference_platform.catalog.charts import Chart

FSX_CSI_DRIVER: Final = Chart("aws-fsx-csi-driver", "1.17.0", "https://kubernetes-sigs.github.io/aws-fsx-csi-driver")
SECRETS_STORE_CSI_DRIVER: Final = Chart(
    "secrets-store-csi-driver", "1.6.0", "https://kubernetes-sigs.github.io/secrets-store-csi-driver/charts"
)
SECRETS_STORE_PROVIDER_AWS: Final = Chart(
    "secrets-store-csi-driver-provider-aws", "3.1.1", "https://aws.github.io/secrets-store-csi-driver-provider-aws"
)
