"""Secret sync rule: a SecretProviderClass that syncs Kubernetes Secrets needs a driver allowed to write them.

- ``secret-sync-allowed``: every SecretProviderClass with ``spec.secretObjects`` is matched by a
  secrets-store-csi-driver Helm Release in the same stack with ``syncSecret.enabled: true`` (the chart
  itself, or the AWS provider chart's bundled driver with ``install: true``).

Why: in chart 1.6.0 ``syncSecret.enabled`` (default false) is the only switch for the ClusterRole and
ClusterRoleBinding that let the driver write Secrets (``templates/role-syncsecret.yaml``,
``role-syncsecret_binding.yaml``). Without them the mount succeeds, the pod runs, the driver only logs
``SyncSecretForbiddenWarning`` (``controllers/secretproviderclasspodstatus_controller.go``), and whatever
reads the Secret fails: Envoy Gateway v1.9.0 answers every route of a SecurityPolicy whose
``credentialRefs`` Secret is missing with a 500 (``internal/gatewayapi/securitypolicy.go``). Pinned in
tests/components/secrets/test_secrets_store_csi_upstream.py.
"""

from __future__ import annotations

from typing import Any

from pulumi_policy import EnforcementLevel, StackValidationArgs

from inference_platform.policies.callbacks import ReportViolation, StackValidationPolicy
from inference_platform.policies.props import as_list, get
from inference_platform.policies.rules.helm import HELM_INSTALLS

SECRET_PROVIDER_CLASS = "kubernetes:secrets-store.csi.x-k8s.io/v1:SecretProviderClass"
RELEASE = "kubernetes:helm.sh/v3:Release"
DRIVER_CHART = "secrets-store-csi-driver"
PROVIDER_AWS_CHART = "secrets-store-csi-driver-provider-aws"
SYNC_SWITCH = "syncSecret.enabled"


def _chart_name(props: Any) -> str:
    """``secrets-store-csi-driver`` from a repository chart name or an ``oci://.../<name>`` reference."""
    return str(get(props, "chart") or "").rstrip("/").rsplit("/", 1)[-1]


def syncing_driver_releases(resources: list[Any]) -> list[str]:
    """Names of the Releases in ``resources`` that install the driver with its sync RBAC."""
    found = []
    for resource in resources:
        if resource.resource_type not in HELM_INSTALLS:
            continue
        values = get(resource.props, "values") or {}
        chart = _chart_name(resource.props)
        if chart == DRIVER_CHART and get(values, SYNC_SWITCH) is True:
            found.append(str(get(resource.props, "name") or resource.name))
        elif chart == PROVIDER_AWS_CHART:
            bundled = get(values, DRIVER_CHART) or {}
            if get(bundled, "install") is True and get(bundled, SYNC_SWITCH) is True:
                found.append(str(get(resource.props, "name") or resource.name))
    return found


def _sync_allowed(args: StackValidationArgs, report: ReportViolation) -> None:
    classes = [
        r
        for r in args.resources
        if r.resource_type == SECRET_PROVIDER_CLASS and as_list(get(r.props, "spec.secretObjects"))
    ]
    if not classes or syncing_driver_releases(args.resources):
        return
    for resource in classes:
        namespace = get(resource.props, "metadata.namespace", "default")
        name = get(resource.props, "metadata.name") or resource.name
        secrets = ", ".join(str(get(s, "secretName")) for s in as_list(get(resource.props, "spec.secretObjects")))
        report(
            f"SecretProviderClass {namespace}/{name} syncs Kubernetes Secrets ({secrets}) but no "
            f"{DRIVER_CHART} Release in the stack sets {SYNC_SWITCH}: true; without it the chart creates no "
            "RBAC to write Secrets, so they never appear (and Envoy Gateway answers 500 for a missing "
            "credentialRefs Secret)",
            resource.urn,
        )


POLICIES = [
    StackValidationPolicy(
        name="secret-sync-allowed",
        description="A SecretProviderClass with secretObjects needs a secrets-store-csi-driver Release with "
        "syncSecret.enabled: true in the stack.",
        validate=_sync_allowed,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
