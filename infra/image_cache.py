"""Preflight of ``coldStart.imagePull: cached``: the snapshot the serving nodes' cache volumes are restored from.

A volume restored from a snapshot takes the snapshot's encryption, and the launch template may not set any (EC2 API,
LaunchTemplateEbsBlockDeviceRequest ``Encrypted``: "If you are creating a volume from a snapshot, you can't specify an
encryption value"). So the node-volume rule (every node volume on the stack's storage key) holds only if the snapshot
itself is encrypted with that key, which the plan cannot see: the preview reads the snapshot and fails, naming the
key, when it is missing, unfinished, unencrypted or on another key (Auto Scaling launches with the storage key's
grant only: another key would fail every launch), larger than the volume, or tagged with another image than the
stack serves (a stale cache would be counted as no pull). ``inferctl image-cache build --kms-key-id`` makes it right.
"""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from inference_platform.catalog import image_cache
from inference_platform.settings import Settings

KEY = "coldStart.imageCache.snapshotId"


def image_cache_preflight(settings: Settings) -> None:
    cache = settings.cold_start.image_cache
    if settings.cold_start.image_pull != "cached" or cache is None:
        return
    alias = f"alias/{settings.name_prefix}/storage"
    build = (
        f"inferctl image-cache build --kms-key-id {alias} --image <the serving image by digest> "
        f"--kubernetes-version {settings.cluster.kubernetes_version} --accelerator <nvidia|neuron> "
        "--instance-profile <a profile of the node role> --subnet-id <a private subnet>"
    )
    try:
        snapshot = aws.ebs.get_snapshot(snapshot_ids=[cache.snapshot_id])
    except Exception as err:
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} cannot be read in {settings.region.name} ({err}); build "
                              f"one with `{build}`") from None  # fmt: skip
    if snapshot.state != "completed":
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} is {snapshot.state}, not completed; wait for it or rebuild")
    if not snapshot.encrypted:
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} is not encrypted, and its volumes would not be (a volume "
                              f"restored from a snapshot takes its encryption): rebuild with `{build}`")  # fmt: skip
    try:
        storage_key = aws.kms.get_alias(name=alias).target_key_arn
    except Exception:
        raise pulumi.RunError(f"{KEY}: the stack's storage key ({alias}) does not exist yet, so no cache can be built "
                              "with it: deploy once with coldStart.imagePull parallel or full, then build the cache "
                              f"with `{build}`") from None  # fmt: skip
    if snapshot.kms_key_id != storage_key:
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} is encrypted with {snapshot.kms_key_id}, not the stack's "
                              f"storage key {storage_key} ({alias}), whose grant Auto Scaling launches with: rebuild "
                              f"with `{build}`")  # fmt: skip
    if snapshot.volume_size > cache.size_gib:
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} is {snapshot.volume_size} GiB and "
                              f"coldStart.imageCache.sizeGib is {cache.size_gib}: a volume is never smaller than its "
                              "snapshot; set sizeGib to at least the snapshot's size")  # fmt: skip
    held = dict(snapshot.tags or {}).get(image_cache.IMAGE_TAG_KEY, "")
    served = settings.inference.image.digest
    if served is None:
        return  # a stack that references its image by tag alone: nothing to compare (production cannot)
    if not held.endswith(f"@{served}"):
        # A stale cache would be counted as no pull, and the new image pulled onto a volume sized for one image.
        raise pulumi.RunError(f"{KEY}: {cache.snapshot_id} holds {held or 'an image it does not name'} (its "
                              f"{image_cache.IMAGE_TAG_KEY} tag), not the stack's inference.image.digest {served}: "
                              f"rebuild it for this image with `{build}`")  # fmt: skip
