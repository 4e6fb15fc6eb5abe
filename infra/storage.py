"""Model storage and secrets: the model bucket and its log bucket, the optional FSx cache, the access
roles, the Secrets Manager secrets and, once a cluster exists, their delivery into pods.

Two workloads use them: the inference servers (read-only models, the API keys) and the model-sync /
engine-build jobs (read-write models, the NGC key and the Hugging Face token).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import pulumi

from inference_platform.components.batch.bucket import BUCKET_ROLE as BATCH_BUCKET_ROLE
from inference_platform.components.edge.public_endpoint import DEFAULT_ACCESS_LOG_PREFIX
from inference_platform.components.secrets.delivery import SecretDelivery, SecretDeliveryArgs
from inference_platform.components.secrets.secrets_manager import HF_TOKEN, NGC_API_KEY, Secrets, SecretsArgs
from inference_platform.components.secrets.secrets_store_csi import SecretsStoreCsi, SecretsStoreCsiArgs
from inference_platform.components.serving.workload_namespace import WorkloadNamespace, WorkloadNamespaceArgs
from inference_platform.components.storage.fsx_csi import FsxCsi, FsxCsiArgs
from inference_platform.components.storage.model_access import ModelAccess, ModelAccessArgs, ServiceAccount
from inference_platform.components.storage.model_cache import ModelCache, ModelCacheArgs
from inference_platform.components.storage.model_store import LifecycleArgs, ModelStore, ModelStoreArgs, bucket_prefix
from inference_platform.infra.config_source import secret_value
from inference_platform.infra.foundation import Foundation
from inference_platform.settings import Settings

INFERENCE = ServiceAccount("inference", "triton")
MODEL_SYNC = ServiceAccount("model-sync", "model-sync")
# The file the inference servers read their API key from (serving.auth.keyFile's default,
# /mnt/secrets/inference/api-key): the first key. The others mount as api-key-<i> for rotation.
PRIMARY_API_KEY_FILE = "api-key"


class ClusterHandle(Protocol):
    """What storage needs from the cluster (read-only: the cluster's own record holds them)."""

    @property
    def cluster_name(self) -> pulumi.Output[str]: ...

    @property
    def provider(self) -> pulumi.ProviderResource: ...


@dataclass(frozen=True)
class Storage:
    """What the workloads' rollouts need: where models are, which roles pods get, what they mount."""

    store: ModelStore
    access: ModelAccess
    secrets: Secrets
    cache: ModelCache | None
    inference: ServiceAccount
    model_sync: ServiceAccount
    model_claim: str | None = None
    """The read-only model-cache PersistentVolumeClaim in the inference namespace (with FSx and a cluster)."""
    secret_classes: dict[ServiceAccount, str] = field(default_factory=dict)
    """SecretProviderClass name per workload that has secrets to mount (with a cluster)."""
    namespaces: dict[ServiceAccount, WorkloadNamespace] = field(default_factory=dict)
    """Each workload's namespace and service account (with a cluster): what its rollout depends on, so
    the plan orders them explicitly instead of relying on the Kubernetes API's retries."""
    secrets_store: SecretsStoreCsi | None = None
    """The Secrets Store CSI driver (with a cluster): it installs the SecretProviderClass CRD, so every
    SecretProviderClass, in any area, is ordered after it."""


def build_storage(settings: Settings, foundation: Foundation, cluster: ClusterHandle | None = None) -> Storage:
    subnet_id = _cache_subnet(settings, foundation) if settings.fsx.enabled else None
    store = _model_store(settings, foundation)
    access = ModelAccess(
        "model-access",
        ModelAccessArgs(
            bucket_arn=store.bucket_arn,
            model_prefix=settings.storage.model_prefix,
            kms_key_arn=foundation.keys.storage_key_arn,
            region=settings.region.name,
            cluster_name=cluster.cluster_name if cluster else None,
            readers=[INFERENCE] if cluster else [],
            writers=[MODEL_SYNC] if cluster else [],
        ),
    )
    secrets = _secrets(settings, foundation)
    cache = _model_cache(settings, foundation, store, subnet_id) if subnet_id is not None else None
    claim: str | None = None
    classes: dict[ServiceAccount, str] = {}
    namespaces: dict[ServiceAccount, WorkloadNamespace] = {}
    csi: SecretsStoreCsi | None = None
    if cluster is not None:
        claim, classes, namespaces, csi = _deliver(
            settings, foundation.keys.storage_key_arn, access, secrets, cache, cluster
        )
    _export(store, access, secrets, cache)
    return Storage(store, access, secrets, cache, INFERENCE, MODEL_SYNC, claim, classes, namespaces, csi)


def _model_store(settings: Settings, foundation: Foundation) -> ModelStore:
    cfg, life = settings.storage, settings.storage.lifecycle
    return ModelStore(
        "model-store",
        ModelStoreArgs(
            name_prefix=settings.name_prefix,
            account_id=foundation.account_id,
            kms_key_arn=foundation.keys.storage_key_arn,
            model_prefix=cfg.model_prefix,
            lifecycle=LifecycleArgs(
                noncurrent_version_transition_days=life.noncurrent_version_transition_days,
                noncurrent_version_expiration_days=life.noncurrent_version_expiration_days,
                abort_incomplete_multipart_upload_days=life.abort_incomplete_multipart_upload_days,
                cold_prefix=life.cold_prefix,
                cold_tag=(life.cold_tag.key, life.cold_tag.value) if life.cold_tag else None,
                cold_storage_class=life.cold_storage_class,
                cold_transition_days=life.cold_transition_days,
            ),
            access_log_retention_days=cfg.access_logs.retention_days,
            force_destroy=cfg.force_destroy,
            protect=settings.production,
            # The edge's ALB writes its access logs here.
            load_balancer_log_prefix=DEFAULT_ACCESS_LOG_PREFIX if settings.edge.domain is not None else None,
            region=settings.region.name,
            partition=foundation.partition,
            # The asynchronous lane's bucket logs here too (infra/batch.py).
            log_sources=[_batch_log_source(settings, foundation.partition)] if settings.batch.enabled else [],
        ),
    )


def _batch_log_source(settings: Settings, partition: str) -> str:
    """The lane's bucket as an ``aws:SourceArn`` pattern: its name is the provider's, after the prefix."""
    return f"arn:{partition}:s3:::{bucket_prefix(settings.name_prefix, BATCH_BUCKET_ROLE)}*"


def _secrets(settings: Settings, foundation: Foundation) -> Secrets:
    api = settings.secrets.api_keys
    return Secrets(
        "secrets",
        SecretsArgs(
            name_prefix=settings.name_prefix,
            kms_key_arn=foundation.keys.storage_key_arn,
            api_key_count=api.count,
            api_key_length=api.length,
            api_key_alphabet=api.alphabet,
            ngc_api_key=secret_value("ngcApiKey"),
            hf_token=secret_value("hfToken"),
            recovery_window_days=settings.secrets.recovery_window(settings.environment),
            protect=settings.production,
        ),
    )


def _model_cache(
    settings: Settings, foundation: Foundation, store: ModelStore, subnet_id: pulumi.Output[str]
) -> ModelCache:
    fsx, keys = settings.fsx, foundation.keys
    return ModelCache(
        "model-cache",
        ModelCacheArgs(
            name_prefix=settings.name_prefix,
            account_id=foundation.account_id,
            partition=foundation.partition,
            vpc_id=foundation.network.vpc_id,
            subnet_id=subnet_id,
            node_security_group_id=foundation.security_groups.node_sg_id,
            kms_key_arn=keys.storage_key_arn,
            log_kms_key_arn=keys.logs_key_arn,
            bucket_name=store.bucket_name,
            bucket_arn=store.bucket_arn,
            model_prefix=settings.storage.model_prefix,
            storage_capacity_gib=fsx.storage_capacity_gib,
            per_unit_storage_throughput=fsx.per_unit_storage_throughput,
            file_system_path=fsx.file_system_path,
            auto_import_events=fsx.auto_import_events,
            protect=settings.production,
        ),
    )


def _export(store: ModelStore, access: ModelAccess, secrets: Secrets, cache: ModelCache | None) -> None:
    pulumi.export(
        "modelStore",
        {"bucket": store.bucket_name, "logBucket": store.log_bucket_name, "modelPrefix": store.model_prefix},
    )
    pulumi.export("modelAccessRoleArns", {"reader": access.reader_role_arn, "writer": access.writer_role_arn})
    pulumi.export("secretArns", secrets.secret_arns)
    if cache is not None:
        pulumi.export(
            "modelCache",
            {"fileSystemId": cache.file_system_id, "dnsName": cache.dns_name, "mountName": cache.mount_name},
        )


def _deliver(
    settings: Settings,
    key_arn: pulumi.Input[str],
    access: ModelAccess,
    secrets: Secrets,
    cache: ModelCache | None,
    cluster: ClusterHandle,
) -> tuple[str | None, dict[ServiceAccount, str], dict[ServiceAccount, WorkloadNamespace], SecretsStoreCsi]:
    """Kubernetes side: workload namespaces, the CSI drivers, the read-only model volume and the
    secret mounts of each workload."""
    k8s = cluster.provider
    region = settings.region.name
    namespaces = {
        account: WorkloadNamespace(
            f"workload-{account.namespace}",
            WorkloadNamespaceArgs(k8s_provider=k8s, namespace=account.namespace, service_accounts=[account.name]),
        )
        for account in (INFERENCE, MODEL_SYNC)
    }
    csi = SecretsStoreCsi("secrets-store-csi", SecretsStoreCsiArgs(k8s_provider=k8s, region=region))
    arns = secrets.secret_arns
    # Triton reads the API keys only when it checks them itself (serving.auth); behind a gateway that
    # authenticates, its role gets no access to them at all.
    api_files = (
        {(PRIMARY_API_KEY_FILE if i == 0 else name): arns[name] for i, name in enumerate(secrets.api_key_names)}
        if settings.serving.auth.enabled
        else {}
    )
    sync_files = {name: arns[name] for name in (NGC_API_KEY, HF_TOKEN) if name in arns}
    classes: dict[ServiceAccount, str] = {}
    for account, role_name, files in (
        (INFERENCE, access.reader_role_name, api_files),
        (MODEL_SYNC, access.writer_role_name, sync_files),
    ):
        if not files:
            continue
        delivery = SecretDelivery(
            f"{account.namespace}-secrets",
            SecretDeliveryArgs(
                k8s_provider=k8s,
                namespace=account.namespace,
                service_account=account.name,
                role_name=role_name,
                files=files,
                kms_key_arn=key_arn,
                region=region,
            ),
            opts=pulumi.ResourceOptions(depends_on=[csi, namespaces[account]]),
        )
        classes[account] = delivery.class_name
    if cache is None:
        return None, classes, namespaces, csi
    volume = FsxCsi(
        "fsx-csi",
        FsxCsiArgs(
            k8s_provider=k8s,
            file_system_id=cache.file_system_id,
            dns_name=cache.dns_name,
            mount_name=cache.mount_name,
            storage_capacity_gib=cache.storage_capacity_gib,
            namespace=INFERENCE.namespace,
        ),
        opts=pulumi.ResourceOptions(depends_on=[namespaces[INFERENCE]]),
    )
    return volume.claim_name, classes, namespaces, csi


def _cache_subnet(settings: Settings, foundation: Foundation) -> pulumi.Output[str]:
    """The private subnet of the cache's zone; checked before any storage resource is registered."""
    zone = settings.fsx.availability_zone or foundation.zones[0]
    subnets = foundation.network.private_subnet_ids_by_zone
    if zone not in subnets:
        raise pulumi.RunError(
            f"fsx.availabilityZone: {zone!r} is not one of the stack's zones ({', '.join(foundation.zones)})"
        )
    return subnets[zone]
