"""ModelStore for other Pulumi languages, mapped onto components.storage.ModelStore."""

# Annotations stay real types (no ``from __future__ import annotations``): the provider's analyzer reads them.
from enum import Enum
from typing import NotRequired, TypedDict

import pulumi

from inference_platform.components.multilang.options import inner_options, supplied
from inference_platform.components.storage import LifecycleArgs
from inference_platform.components.storage import ModelStore as _ModelStore
from inference_platform.components.storage import ModelStoreArgs as _ModelStoreArgs


class ColdStorageClass(Enum):
    """Where cold objects move."""

    STANDARD_IA = "STANDARD_IA"
    """S3 Standard-Infrequent Access (at least 30 days)."""
    INTELLIGENT_TIERING = "INTELLIGENT_TIERING"
    """S3 Intelligent-Tiering."""


class ModelStoreLifecycle(TypedDict):
    """Lifecycle rules of the model bucket."""

    noncurrent_version_transition_days: NotRequired[int]
    """Default 30. Replaced versions move to STANDARD_IA after this many days (at least 30)."""
    noncurrent_version_expiration_days: NotRequired[int]
    """Default 90. Replaced or deleted versions are removed after this many days."""
    abort_incomplete_multipart_upload_days: NotRequired[int]
    """Default 7. Parts of unfinished multipart uploads are discarded after this many days."""
    cold_prefix: NotRequired[str]
    """Default ``archive/``. Objects under it move to ``coldStorageClass``."""
    cold_storage_class: NotRequired[ColdStorageClass]
    """Default ``STANDARD_IA``."""
    cold_transition_days: NotRequired[int]
    """Default 30. Object age before a cold object moves."""


class ModelStoreArgs(TypedDict):
    """A versioned, KMS-encrypted, private S3 bucket for model artifacts and its access-log bucket."""

    name_prefix: str
    """Start of both bucket names (lower-cased, cut to S3's bucket-prefix limit)."""
    account_id: str
    """The AWS account id: only its buckets may deliver access logs to the log bucket."""
    kms_key_arn: pulumi.Input[str]
    """Customer-managed KMS key for SSE-KMS (with an S3 bucket key)."""
    model_prefix: NotRequired[str]
    """Default ``models/``. Where model artifacts live."""
    lifecycle: NotRequired[ModelStoreLifecycle]
    """Default: 30-day transition and 90-day expiry of replaced versions, 7-day multipart clean-up, ``archive/`` cold."""
    access_log_retention_days: NotRequired[int]
    """Default 365. Access logs are removed after this many days."""
    force_destroy: NotRequired[bool]
    """Default false. Let a destroy delete non-empty buckets; excludes ``protect``."""
    protect: NotRequired[bool]
    """Default false. Protect and retain both buckets and all their configuration (production)."""
    region: NotRequired[str]
    """Default none. The region (needed with ``loadBalancerLogPrefix``)."""
    load_balancer_log_prefix: NotRequired[str]
    """Default none. Prefix under which Elastic Load Balancing may write this account's ALB access logs."""
    partition: NotRequired[str]
    """Default ``aws``."""


class ModelStore(pulumi.ComponentResource):
    """The model bucket and its access-log bucket (components.storage.ModelStore): public access blocked,
    ACLs off, TLS only, versioned; protected and retained in production."""

    bucket_name: pulumi.Output[str]
    """The model bucket's name."""
    bucket_arn: pulumi.Output[str]
    """The model bucket's ARN."""
    log_bucket_name: pulumi.Output[str]
    """The access-log bucket's name."""
    model_prefix: pulumi.Output[str]
    """Where model artifacts live in the bucket."""

    def __init__(self, name: str, args: ModelStoreArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("inference-platform:index:ModelStore", name, {}, opts)
        store = _ModelStore(
            name,
            _ModelStoreArgs(
                lifecycle=LifecycleArgs(
                    **supplied(
                        args.get("lifecycle") or {},
                        "noncurrent_version_transition_days",
                        "noncurrent_version_expiration_days",
                        "abort_incomplete_multipart_upload_days",
                        "cold_prefix",
                        "cold_storage_class",
                        "cold_transition_days",
                    )
                ),
                **supplied(
                    args,
                    "name_prefix",
                    "account_id",
                    "kms_key_arn",
                    "model_prefix",
                    "access_log_retention_days",
                    "force_destroy",
                    "protect",
                    "region",
                    "load_balancer_log_prefix",
                    "partition",
                ),
            ),
            inner_options(self, opts),
        )
        self.bucket_name = store.bucket_name
        self.bucket_arn = store.bucket_arn
        self.log_bucket_name = store.log_bucket_name
        self.model_prefix = pulumi.Output.from_input(store.model_prefix)
        self.register_outputs({})
