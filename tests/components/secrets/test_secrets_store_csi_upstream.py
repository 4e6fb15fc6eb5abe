"""Upstream facts about the Secrets Store CSI driver that the edge's credentials depend on (issue 17 §1), each
read at the pinned version and written down here as data, with the file and tag it was read from.

Read from github.com/kubernetes-sigs/secrets-store-csi-driver at tag v1.6.0 (the chart and the app are both
1.6.0; ``git show v1.6.0:<path>``). Nothing of theirs is copied here, only what the files say.
"""

from __future__ import annotations

import pulumi_kubernetes as k8s

from inference_platform.catalog.storage_charts import SECRETS_STORE_CSI_DRIVER
from inference_platform.components.secrets.secrets_store_csi import SecretsStoreCsi, SecretsStoreCsiArgs
from inference_platform.policies.rules import secret_sync
from tests.conftest import one

REPOSITORY = "kubernetes-sigs/secrets-store-csi-driver"
TAG = "v1.6.0"
CHART = "charts/secrets-store-csi-driver"

# charts/secrets-store-csi-driver/values.yaml @ v1.6.0: "## Install RBAC roles and bindings required for
# K8S Secrets syncing if true" -> syncSecret.enabled: false.
SYNC_SWITCH = "syncSecret.enabled"
SYNC_SWITCH_DEFAULT = False
# templates/role-syncsecret.yaml and templates/role-syncsecret_binding.yaml @ v1.6.0: both wrapped in
# "{{ if .Values.syncSecret.enabled }}"; the only templates that grant anything on Secrets.
SYNC_RBAC = {
    f"{CHART}/templates/role-syncsecret.yaml": {
        "kind": "ClusterRole",
        "name": "secretprovidersyncing-role",
        "guard": SYNC_SWITCH,
        # apiGroups [""], resources [secrets]: cluster-wide, every namespace.
        "secrets_verbs": ("create", "delete", "get", "list", "patch", "update", "watch"),
    },
    f"{CHART}/templates/role-syncsecret_binding.yaml": {
        "kind": "ClusterRoleBinding",
        "name": "secretprovidersyncing-rolebinding",
        "guard": SYNC_SWITCH,
        "subject": ("ServiceAccount", "secrets-store-csi-driver", "{{ .Release.Namespace }}"),
    },
}
# controllers/secretproviderclasspodstatus_controller.go @ v1.6.0: the constant logged (klog.Warning) when
# creating, updating or patching a synced Secret is forbidden; the reconcile just returns, the pod keeps
# running. The reconcile skips only terminating, Succeeded and Failed pods, so a Pending pod (still
# waiting for a Secret volume) is synced too.
SYNC_FORBIDDEN_WARNING = (
    "The secret operation failed with forbidden error. If you installed the CSI driver using helm, "
    "ensure syncSecret.enabled=true is set."
)
SYNC_SKIPS_POD_PHASES = ("Succeeded", "Failed")
# cmd/secrets-store-csi-driver/main.go @ v1.6.0: the manager's cache watches Secrets labelled
# secrets-store.csi.k8s.io/managed=true in every namespace, so a namespaced Role cannot replace the chart's
# ClusterRole (the documented cost in components/secrets/secrets_store_csi.py).
MANAGED_SECRET_LABEL = "secrets-store.csi.k8s.io/managed"

# What a missing synced Secret does to the edge (a 500 on every route) is pinned with Envoy Gateway's
# facts in tests/components/edge/test_envoy_gateway_upstream.py.


def test_the_facts_were_read_at_the_pinned_chart_version():
    assert f"v{SECRETS_STORE_CSI_DRIVER.version}" == TAG
    assert all(path.startswith(CHART) for path in SYNC_RBAC)


def test_the_driver_is_installed_with_the_switch_that_grants_secret_writes(run_components):
    def program():
        SecretsStoreCsi(
            "ss", SecretsStoreCsiArgs(k8s_provider=k8s.Provider("k8s", kubeconfig="{}"), region="us-east-1")
        )

    values = one(run_components(program).resources, "ss-driver").inputs["values"]
    section, key = SYNC_SWITCH.split(".")
    # The chart's default would leave the sync RBAC out: the value must be set, and true.
    assert values[section][key] is not SYNC_SWITCH_DEFAULT and values[section][key] is True


def test_the_plan_rule_checks_the_same_switch():
    assert secret_sync.SYNC_SWITCH == SYNC_SWITCH
    assert SECRETS_STORE_CSI_DRIVER.chart == secret_sync.DRIVER_CHART
    assert "syncSecret.enabled" in secret_sync.__doc__ and "SyncSecretForbiddenWarning" in secret_sync.__doc__
    assert all(rbac["guard"] == SYNC_SWITCH for rbac in SYNC_RBAC.values())
