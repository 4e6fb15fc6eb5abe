"""``inferctl image-cache build``: the serving image pre-pulled onto an encrypted EBS snapshot that AL2023 serving
nodes mount as containerd's root (catalog/image_cache.py), so a new node starts the image without pulling it.

One throwaway instance of the node AMI pulls the image into a blank volume through SSM; the volume is snapshotted and
the instance terminated, also on failure or Ctrl-C (inferctl/image_cache/build.py). The caller needs EC2, SSM
(SendCommand) and the key's grants for EBS; the instance profile needs AmazonSSMManagedInstanceCore and ECR read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from typing import Any

from inference_platform.errors import CommandError

DEFAULT_SIZE_GIB = 100
MIN_SIZE_GIB, MAX_SIZE_GIB = 20, 16384
"""What coldStart.imageCache.sizeGib takes (settings/cold_start.py; a test holds the two equal)."""
DEFAULT_INSTANCE_TYPE = "m6i.2xlarge"
DEFAULT_TIMEOUT_MINUTES = 60
MAX_TIMEOUT_MINUTES = 2880
"""AWS-RunShellScript's executionTimeout stops at 172800 s."""
ACCELERATORS = ("nvidia", "neuron", "none")

_K8S_VERSION = re.compile(r"^1\.[0-9]{1,2}$")
_INSTANCE_TYPE = re.compile(r"^[a-z][a-z0-9-]*\.[a-z0-9-]+$")
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8}(?:[0-9a-f]{9})?$")
_SECURITY_GROUP = re.compile(r"^sg-[0-9a-f]{8}(?:[0-9a-f]{9})?$")
_PROFILE = re.compile(r"^(?:[\w+=,.@-]{1,128}|arn:aws[a-z-]*:iam::[0-9]{12}:instance-profile/[\w+=,.@/-]{1,128})$")
_KMS_KEY = re.compile(
    r"^(?:arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(?:key|alias)/[\w/+=,.@-]+|alias/[\w/+=,.@-]+|(?:mrk-)?[0-9a-f-]{32,36})$"
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "image-cache",
        help="build the EBS snapshot of the serving image that AL2023 nodes mount (coldStart.imagePull cached)",
        description=__doc__.split("\n\n")[0].replace("\n", " ")
        + " AWS settings come from the usual chain: AWS_PROFILE, AWS_REGION, AWS_ENDPOINT_URL.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    b = actions.add_parser(
        "build",
        help="pull an image on a throwaway instance into an encrypted volume, snapshot it, print the snapshot id",
        description=" ".join(__doc__.split()),
    )
    b.add_argument("--image", required=True, metavar="REF",
                   help="the serving image, pinned: registry/repository[:tag]@sha256:<64 hex>")  # fmt: skip
    b.add_argument("--ami", metavar="AMI_ID", help="the node AMI; default: the EKS AL2023 AMI of --kubernetes-version")
    b.add_argument("--kubernetes-version", metavar="X.Y",
                   help="the cluster's Kubernetes version, to look up its EKS AL2023 AMI in SSM (without --ami)")  # fmt: skip
    b.add_argument("--accelerator", choices=ACCELERATORS,
                   help="the serving nodes' AMI variant (nvidia, neuron, or none: standard), with --kubernetes-version")  # fmt: skip
    b.add_argument("--subnet-id", help="subnet of the instance, with a route to SSM, ECR and S3 (default: the "
                   "default VPC's)")  # fmt: skip
    b.add_argument("--security-group-id", help="security group of the instance (default: the VPC's default group)")
    b.add_argument("--instance-profile", required=True, metavar="NAME",
                   help="instance profile with AmazonSSMManagedInstanceCore and ECR read (e.g. the node role's)")  # fmt: skip
    b.add_argument("--kms-key-id", required=True, metavar="KEY_ARN",
                   help="the stack's volume key: the snapshot is encrypted with it, and so is each node's volume "
                   "restored from it")  # fmt: skip
    b.add_argument("--size-gib", type=int, default=DEFAULT_SIZE_GIB,
                   help=f"the volume and snapshot size in GiB, {MIN_SIZE_GIB}-{MAX_SIZE_GIB} (default "
                   f"{DEFAULT_SIZE_GIB}); coldStart.imageCache.sizeGib")  # fmt: skip
    b.add_argument("--instance-type", default=DEFAULT_INSTANCE_TYPE,
                   help=f"x86_64 instance type that pulls (default {DEFAULT_INSTANCE_TYPE})")  # fmt: skip
    b.add_argument("--region", help="AWS region (default: AWS_REGION, else the AWS settings' region)")
    b.add_argument("--timeout-minutes", type=int, default=DEFAULT_TIMEOUT_MINUTES,
                   help=f"bound of every wait: SSM, the pull, the stop, the snapshot (default {DEFAULT_TIMEOUT_MINUTES})")  # fmt: skip
    b.add_argument("--output", choices=("text", "json"), default="text",
                   help="text: the snapshot id and the stack setting to paste; json: snapshotId, image, sizeGib, "
                   "encrypted, kmsKeyId")  # fmt: skip
    b.set_defaults(handler=_build)


def _check(flag: str, value: str | None, pattern: re.Pattern[str], expected: str) -> None:
    if value is not None and not pattern.match(value):
        raise CommandError(f"{flag}: got {value!r}; expected {expected}", exit_code=2)


def _validate(args: argparse.Namespace) -> None:
    """Bad input exits 2 naming its flag, before anything is launched."""
    if not MIN_SIZE_GIB <= args.size_gib <= MAX_SIZE_GIB:
        raise CommandError(f"--size-gib: got {args.size_gib}; expected {MIN_SIZE_GIB}-{MAX_SIZE_GIB}", exit_code=2)
    if not 1 <= args.timeout_minutes <= MAX_TIMEOUT_MINUTES:
        raise CommandError(f"--timeout-minutes: got {args.timeout_minutes}; expected 1-{MAX_TIMEOUT_MINUTES}", 2)
    if args.ami is not None and (args.kubernetes_version or args.accelerator):
        raise CommandError("--ami: give it or --kubernetes-version with --accelerator, not both", exit_code=2)
    if args.ami is None and not (args.kubernetes_version and args.accelerator):
        missing = "--kubernetes-version" if not args.kubernetes_version else "--accelerator"
        raise CommandError(f"{missing}: needed to look the AMI up (or give --ami)", exit_code=2)
    from inference_platform.inferctl.image_cache.build import AMI_ID

    _check("--ami", args.ami, AMI_ID, "ami- and 8 or 17 hex digits")
    _check("--kubernetes-version", args.kubernetes_version, _K8S_VERSION, "X.Y, e.g. 1.33")
    _check("--instance-type", args.instance_type, _INSTANCE_TYPE, "an EC2 instance type, e.g. m6i.2xlarge")
    _check("--subnet-id", args.subnet_id, _SUBNET, "subnet- and 8 or 17 hex digits")
    _check("--security-group-id", args.security_group_id, _SECURITY_GROUP, "sg- and 8 or 17 hex digits")
    _check("--instance-profile", args.instance_profile, _PROFILE, "an instance profile name (or ARN)")
    _check("--kms-key-id", args.kms_key_id, _KMS_KEY, "a KMS key ARN (or key id, or alias)")


def _log(message: str) -> None:
    print(f"image-cache: {message}", file=sys.stderr, flush=True)


def _build(args: argparse.Namespace) -> int:
    from inference_platform.inferctl.image_cache import build

    image = build.parse_image(args.image)
    _validate(args)
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError, NoRegionError

    try:
        # AWS_REGION as the AWS CLI v2 reads it (before AWS_DEFAULT_REGION); botocore itself reads only the latter.
        session = boto3.Session(region_name=args.region or os.environ.get("AWS_REGION") or None)
        ec2, ssm, kms = session.client("ec2"), session.client("ssm"), session.client("kms")
    except NoRegionError:
        raise CommandError("--region: no region given and none in the AWS settings", exit_code=2) from None
    except BotoCoreError as err:
        raise CommandError(f"--region: {err}", exit_code=2) from None
    try:
        key_arn = build.resolve_key(kms, args.kms_key_id)
        ami = args.ami or build.resolve_ami(ssm, args.kubernetes_version, args.accelerator)
        request = build.Request(
            image=image, ami=ami, instance_profile=args.instance_profile, kms_key_arn=key_arn,
            size_gib=args.size_gib, instance_type=args.instance_type, timeout_s=args.timeout_minutes * 60.0,
            subnet_id=args.subnet_id, security_group_id=args.security_group_id,
        )  # fmt: skip
        # Looked up on the module at each call: the tests replace it (moto has no DescribeInstanceInformation).
        result = build.build(ec2, ssm, request, wait_online=build.wait_ssm_online, log=_log)
    except (ClientError, BotoCoreError) as err:
        raise CommandError(f"AWS refused or failed: {err}") from None
    _print(result, args.output)
    return 0


def _print(result: Any, output: str) -> None:
    if output == "json":
        print(json.dumps(result.as_json(), indent=2))
        return
    print(result.snapshot_id)
    print(f"# the stack file's config (stacks/Pulumi.<stack>.yaml):\n{result.stack_setting()}")
