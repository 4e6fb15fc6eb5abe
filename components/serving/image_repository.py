"""The ECR repository of the inference image: immutable tags, scan on push, KMS, a lifecycle policy.

Immutable tags make a tag name one image forever, so a rollout by tag cannot change under a running
stack; production still references the digest. Untagged images (failed or superseded pushes) expire
quickly and only the newest ``keep_images`` images stay, so the repository never grows unbounded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from inference_platform.catalog.image_sizes import UNPACKED_GIB_TAG
from inference_platform.components.common.errors import raise_if

DEFAULT_KEEP_IMAGES = 30
DEFAULT_UNTAGGED_EXPIRE_DAYS = 7
_NAME = re.compile(r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*$")


@dataclass(frozen=True, kw_only=True)
class ImageRepositoryArgs:
    """What the image repository needs: its name, key and how many images to keep."""

    name: str
    """Required. Repository name (``<project>-<stack>/inference``); 2-256 characters, lower case."""
    kms_key_arn: pulumi.Input[str]
    """Required. Customer-managed key for image layers (the stack's storage key)."""
    keep_images: int = DEFAULT_KEEP_IMAGES
    """Default 30. Newest images kept; older ones expire (1-1000)."""
    untagged_expire_days: int = DEFAULT_UNTAGGED_EXPIRE_DAYS
    """Default 7. Days before an untagged image expires (>= 1)."""
    scan_on_push: bool = True
    """Default ``True``. ECR basic scanning of every pushed image."""
    force_delete: bool = False
    """Default ``False``. Let a destroy delete a repository that still holds images (development)."""
    protect: bool = False
    """Default ``False``. Protect and retain the repository (production); excludes ``force_delete``."""
    unpacked_gib: float | None = None
    """Default unknown. What the repository's images unpack to on a node (GiB; ``catalog.image_sizes``), recorded
    as the ``inference.platform/unpacked-gib`` tag so the pack can check that every node a pod of this image may
    land on has the root volume for it (``pod-images-fit-node-disk``)."""


class ImageRepository(pulumi.ComponentResource):
    """The ECR repository of the inference image: immutable tags, scan on push, KMS, a lifecycle policy."""

    repository_name: pulumi.Output[str]
    repository_url: pulumi.Output[str]
    repository_arn: pulumi.Output[str]

    def __init__(self, name: str, args: ImageRepositoryArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        _validate(args)
        super().__init__("inference:images:ImageRepository", name, None, opts)
        repository = aws.ecr.Repository(
            f"{name}-repository",
            name=args.name,
            image_tag_mutability="IMMUTABLE",
            image_scanning_configuration={"scan_on_push": args.scan_on_push},
            encryption_configurations=[{"encryption_type": "KMS", "kms_key": args.kms_key_arn}],
            force_delete=args.force_delete,
            **({"tags": {UNPACKED_GIB_TAG: f"{args.unpacked_gib:g}"}} if args.unpacked_gib is not None else {}),
            opts=pulumi.ResourceOptions(parent=self, protect=args.protect, retain_on_delete=args.protect),
        )
        aws.ecr.LifecyclePolicy(
            f"{name}-lifecycle",
            repository=repository.name,
            policy=json.dumps(lifecycle_policy(args.keep_images, args.untagged_expire_days)),
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.repository_name = repository.name
        self.repository_url = repository.repository_url
        self.repository_arn = repository.arn
        self.register_outputs(
            {
                "repository_name": self.repository_name,
                "repository_url": self.repository_url,
                "repository_arn": self.repository_arn,
            }
        )


def lifecycle_policy(keep_images: int, untagged_expire_days: int) -> dict[str, Any]:
    """ECR evaluates rules by priority; the ``any`` rule must carry the highest number (ECR's rule)."""
    return {
        "rules": [
            {
                "rulePriority": 1,
                "description": f"untagged images expire after {untagged_expire_days} days",
                "selection": {
                    "tagStatus": "untagged",
                    "countType": "sinceImagePushed",
                    "countUnit": "days",
                    "countNumber": untagged_expire_days,
                },
                "action": {"type": "expire"},
            },
            {
                "rulePriority": 2,
                "description": f"keep the newest {keep_images} images",
                "selection": {"tagStatus": "any", "countType": "imageCountMoreThan", "countNumber": keep_images},
                "action": {"type": "expire"},
            },
        ]
    }


def _validate(args: ImageRepositoryArgs) -> None:
    problems = []
    if not _NAME.match(args.name) or not 2 <= len(args.name) <= 256:
        problems.append(f"name={args.name!r} is not an ECR repository name (lower-case path, 2-256 characters)")
    if not 1 <= args.keep_images <= 1000:
        problems.append(f"keep_images={args.keep_images} must be 1-1000")
    if args.untagged_expire_days < 1:
        problems.append(f"untagged_expire_days={args.untagged_expire_days} must be >= 1")
    if args.force_delete and args.protect:
        problems.append("force_delete and protect exclude each other: a protected repository keeps its images")
    raise_if("ImageRepository", problems)
