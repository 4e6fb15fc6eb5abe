"""What ``inferctl image-cache build`` does, given AWS clients: check the inputs, write the script the throwaway
instance runs, and drive launch -> SSM -> pull -> stop -> snapshot, terminating the instance whatever happens.

The flow is aws-samples/bottlerocket-images-cache ``snapshot.sh`` (HEAD) adapted to the AL2023 EKS AMI
(awslabs/amazon-eks-ami v20260724): a blank data volume instead of Bottlerocket's data partition, ``ctr`` on the host
instead of ``apiclient exec admin sheltie ctr``, and containerd started by hand, since the AMI leaves it to nodeadm
(templates/al2023/runtime/rootfs/etc/systemd/system/nodeadm-run.service) and a plain instance runs no nodeadm.
The ECR login is the AMI's own (templates/al2023/runtime/bin/cache-pause-container).

No boto3 import here: the command creates the clients; tests hand in moto's, and their own ``wait_online``.
"""

from __future__ import annotations

import math
import re
import shlex
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from inference_platform.catalog.image_cache import (
    CONTAINERD_ROOT,
    CRI_MANAGED_LABEL,
    FS_LABEL,
    IMAGE_TAG_KEY,
    SNAPSHOT_ID,
    SNAPSHOTTER,
    SNAPSHOTTER_TAG_KEY,
)
from inference_platform.errors import CommandError

DATA_DEVICE: Final = "/dev/sdf"
"""The blank volume's device name in the launch request; the script finds it by volume id, not by this name."""
PURPOSE_TAG: Final = ("inference.platform/purpose", "image-cache-build")
BUILD_TAG_KEY: Final = "inference.platform/image-cache-build-id"
"""One build's instance, found again by this tag when run_instances was interrupted before it answered."""
DOCKER_HUB: Final = "docker.io"
PLATFORM: Final = "linux/amd64"
"""The AMI parameter below is the x86_64 one, and so is the default instance type."""
AMI_PARAMETER: Final = "/aws/service/eks/optimized-ami/{k8s}/amazon-linux-2023/x86_64/{variant}/recommended/image_id"
AMI_VARIANTS: Final = {"nvidia": "nvidia", "neuron": "neuron", "none": "standard"}
DEVICE_WAIT_SECONDS: Final = 60
TAG_VALUE_MAX: Final = 256
"""EC2 tag values hold at most 256 characters: the image reference goes into one (IMAGE_TAG_KEY)."""
SELF_TERMINATE_MARGIN_MINUTES: Final = 15
DELAYS: Final = {"instance_running": 5, "instance_stopped": 5, "snapshot_completed": 15, "command_executed": 5}
"""Seconds between a waiter's polls; the number of polls comes from --timeout-minutes."""
SSM_POLL_SECONDS: Final = 5
STDERR_TAIL_LINES: Final = 20

# The reference grammar of distribution/reference (reference.go), registry required: "registry/repo[:tag]@digest".
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST = r"(?:localhost|[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)+)"
IMAGE_REF = re.compile(
    rf"^(?P<registry>{_HOST}(?::[0-9]{{1,5}})?)/(?P<repository>{_COMPONENT}(?:/{_COMPONENT})*)"
    r"(?::(?P<tag>[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}))?@(?P<digest>sha256:[0-9a-f]{64})$"
)
ECR_REGISTRY = re.compile(
    r"^[0-9]{12}\.dkr\.ecr(?:-fips)?\.(?P<region>[a-z]{2}(?:-[a-z]+)+-[0-9])\.amazonaws\.com(?:\.cn)?$"
)
AMI_ID = re.compile(r"^ami-[0-9a-f]{8}(?:[0-9a-f]{9})?$")
VOLUME_ID = re.compile(r"^vol-[0-9a-f]{8}(?:[0-9a-f]{9})?$")

WaitOnline = Callable[[Any, str, float], None]
Log = Callable[[str], None]


@dataclass(frozen=True)
class Image:
    ref: str
    """As given: what the snapshot's IMAGE_TAG_KEY says."""
    registry: str
    repository: str
    tag: str | None
    digest: str

    @property
    def pull_ref(self) -> str:
        """``registry/repo@digest``: the name containerd's CRI gives the image when it pulls this reference itself,
        and the one it looks a pod's image up by (distribution/reference normalize.go ``ParseDockerRef`` drops the
        tag of a tag+digest reference), so the cached image is found under the name the kubelet asks for. Docker
        Hub's one-component names take ``library/`` as ParseDockerRef gives them (normalize.go ``splitDockerDomain``)."""
        repository = self.repository
        if self.registry == DOCKER_HUB and "/" not in repository:
            repository = f"library/{repository}"
        return f"{self.registry}/{repository}@{self.digest}"

    @property
    def ecr_region(self) -> str | None:
        match = ECR_REGISTRY.match(self.registry)
        return match["region"] if match else None


def parse_image(ref: str) -> Image:
    match = IMAGE_REF.match(ref)
    if match is None:
        raise CommandError(
            f"--image: got {ref!r}; expected a full reference pinned by digest, registry/repository[:tag]@sha256:<64 "
            "hex> (a tag alone can move: the snapshot would hold another image than the one deployed)",
            exit_code=2,
        )
    if len(ref) > TAG_VALUE_MAX:
        raise CommandError(f"--image: {len(ref)} characters; the snapshot's tag holds at most {TAG_VALUE_MAX}", 2)
    return Image(ref, match["registry"], match["repository"], match["tag"], match["digest"])


def ami_parameter(kubernetes_version: str, accelerator: str) -> str:
    """The public SSM parameter of the EKS AL2023 AMI the serving nodes run (the same containerd writes the store)."""
    return AMI_PARAMETER.format(k8s=kubernetes_version, variant=AMI_VARIANTS[accelerator])


def device_path(volume_id: str) -> str:
    """The udev link of an EBS volume on a Nitro instance: the NVMe serial is the volume id without its dash."""
    if not VOLUME_ID.match(volume_id):
        raise ValueError(f"not an EBS volume id: {volume_id!r}")
    return f"/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_{volume_id.replace('-', '')}"


def pull_script(image: Image, volume_id: str) -> str:
    """The script SSM runs on the instance (AWS-RunShellScript; AL2023's sh is bash): format the blank volume
    with FS_LABEL (the node's mount_script finds it by that label), make it containerd's root, pull the image with
    the CRI's ``managed`` label into the ``overlayfs`` snapshotter, check it is there, and leave the volume clean
    (containerd stopped, synced, unmounted) for the snapshot. No ``-f`` on mkfs: it refuses a device that already
    holds a filesystem, so a wrong device cannot be wiped."""
    q = shlex.quote
    link, ref = device_path(volume_id), image.pull_ref
    login = ""
    user = ""
    if image.ecr_region is not None:
        # Its own line: errexit stops on a failed login; inside the pull's arguments it would not.
        login = f'password="$(aws ecr get-login-password --region {q(image.ecr_region)})"\n'
        user = ' --user "AWS:${password}"'
    return f"""#!/usr/bin/env bash
# inferctl image-cache build (inferctl/image_cache/build.py): the serving image onto a blank EBS volume.
set -o errexit -o nounset -o pipefail
device=""
for _ in $(seq 1 {DEVICE_WAIT_SECONDS}); do
  udevadm settle || true
  if [ -e {q(link)} ]; then device="$(readlink -f {q(link)})"; break; fi
  sleep 1
done
if [ -z "$device" ]; then echo "image cache: no device for the blank volume:" {q(link)} >&2; exit 1; fi
systemctl stop containerd
mkfs.xfs -L {q(FS_LABEL)} "$device"
mkdir -p {q(CONTAINERD_ROOT)}
mount -o noatime "$device" {q(CONTAINERD_ROOT)}
systemctl start containerd
{login}ctr --namespace k8s.io images pull --label {q(CRI_MANAGED_LABEL)} --snapshotter {q(SNAPSHOTTER)} \\
  --platform {q(PLATFORM)}{user} {q(ref)} >/dev/null
images="$(ctr --namespace k8s.io images ls -q)"
if ! grep -qxF -- {q(ref)} <<<"$images"; then echo "image cache: missing after the pull:" {q(ref)} >&2; exit 1; fi
systemctl stop containerd
sync
umount {q(CONTAINERD_ROOT)}
echo "image cache: pulled onto $device:" {q(ref)}
"""


@dataclass(frozen=True)
class Request:
    image: Image
    ami: str
    instance_profile: str
    kms_key_arn: str
    size_gib: int
    instance_type: str
    timeout_s: float
    subnet_id: str | None = None
    security_group_id: str | None = None


@dataclass(frozen=True)
class Result:
    snapshot_id: str
    image: str
    size_gib: int
    encrypted: bool
    kms_key_id: str

    def as_json(self) -> dict[str, Any]:
        return {"snapshotId": self.snapshot_id, "image": self.image, "sizeGib": self.size_gib,
                "encrypted": self.encrypted, "kmsKeyId": self.kms_key_id}  # fmt: skip

    def stack_setting(self) -> str:
        return (f"inference-platform:coldStart: {{imagePull: cached, imageCache: {{snapshotId: {self.snapshot_id}, "
                f"sizeGib: {self.size_gib}}}}}")  # fmt: skip


def launch_request(request: Request, build_id: str) -> dict[str, Any]:
    """run_instances' arguments: IMDSv2 only, the encrypted blank volume, and a self-terminating shutdown
    (user data + InstanceInitiatedShutdownBehavior) in case this process dies without its ``finally``; the AMI's
    nodeadm finds no NodeConfig in that user data and starts nothing, as with none."""
    tags = [
        {"Key": "Name", "Value": f"inferctl image-cache build {request.image.repository}"[:TAG_VALUE_MAX]},
        {"Key": PURPOSE_TAG[0], "Value": PURPOSE_TAG[1]},
        {"Key": BUILD_TAG_KEY, "Value": build_id},
    ]
    # Both waits that run while the instance runs (SSM, the pull) are bounded by the timeout; then it is stopped.
    minutes = math.ceil(2 * request.timeout_s / 60) + SELF_TERMINATE_MARGIN_MINUTES
    out: dict[str, Any] = {
        "ImageId": request.ami,
        "InstanceType": request.instance_type,
        "MinCount": 1,
        "MaxCount": 1,
        "ClientToken": build_id,
        "IamInstanceProfile": (
            {"Arn": request.instance_profile}
            if request.instance_profile.startswith("arn:")
            else {"Name": request.instance_profile}
        ),
        "MetadataOptions": {"HttpTokens": "required", "HttpEndpoint": "enabled"},
        "BlockDeviceMappings": [
            {
                "DeviceName": DATA_DEVICE,
                "Ebs": {
                    "VolumeSize": request.size_gib,
                    "VolumeType": "gp3",
                    "Encrypted": True,
                    "KmsKeyId": request.kms_key_arn,
                    "DeleteOnTermination": True,
                },
            }
        ],
        "InstanceInitiatedShutdownBehavior": "terminate",
        "UserData": f"#!/bin/bash\nshutdown -h +{minutes} 'inferctl image-cache build: time is up'\n",
        "TagSpecifications": [{"ResourceType": "instance", "Tags": tags}, {"ResourceType": "volume", "Tags": tags}],
    }
    if request.subnet_id:
        out["SubnetId"] = request.subnet_id
    if request.security_group_id:
        out["SecurityGroupIds"] = [request.security_group_id]
    return out


def snapshot_tags(image: Image) -> list[dict[str, str]]:
    return [
        {"Key": IMAGE_TAG_KEY, "Value": image.ref},
        {"Key": SNAPSHOTTER_TAG_KEY, "Value": SNAPSHOTTER},
        {"Key": "Name", "Value": f"image cache {image.repository}"[:TAG_VALUE_MAX]},
    ]


def check_encryption(what: str, resource: dict[str, Any], key_arn: str) -> None:
    """``resource`` (describe_volumes' or describe_snapshots' entry) is encrypted with the stack's key: a node's volume
    restored from the snapshot takes the snapshot's encryption."""
    if not resource.get("Encrypted"):
        raise CommandError(f"{what} is not encrypted; expected the key {key_arn}")
    if resource.get("KmsKeyId") != key_arn:
        raise CommandError(f"{what} is encrypted with {resource.get('KmsKeyId')}, not {key_arn}")


def resolve_ami(ssm: Any, kubernetes_version: str, accelerator: str) -> str:
    from botocore.exceptions import ClientError

    name = ami_parameter(kubernetes_version, accelerator)
    try:
        value = ssm.get_parameter(Name=name)["Parameter"]["Value"]
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") == "ParameterNotFound":
            raise CommandError(f"--kubernetes-version: no EKS AL2023 AMI parameter {name} in this region", 2) from None
        raise
    if not AMI_ID.match(value):
        raise CommandError(f"{name} holds {value!r}, not an AMI id")
    return str(value)


def resolve_key(kms: Any, key_id: str) -> str:
    """The key's ARN, which EC2 reports on the volume and the snapshot (an alias or a key id would not compare)."""
    from botocore.exceptions import ClientError

    try:
        return str(kms.describe_key(KeyId=key_id)["KeyMetadata"]["Arn"])
    except ClientError as err:
        if err.response.get("Error", {}).get("Code") in ("NotFoundException", "InvalidArnException"):
            raise CommandError(f"--kms-key-id: {err.response['Error'].get('Message') or 'no such key'}", 2) from None
        raise


def wait_ssm_online(ssm: Any, instance_id: str, timeout_s: float, *, poll_s: float = SSM_POLL_SECONDS,
                    clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:  # fmt: skip
    """Until the instance's SSM agent reports Online (snapshot.sh's loop, bounded). No boto3 waiter exists for it,
    and moto 5.2.5 does not implement DescribeInstanceInformation: the command takes this function as a parameter,
    so its tests hand in their own."""
    deadline = clock() + timeout_s
    while True:
        found = ssm.describe_instance_information(Filters=[{"Key": "InstanceIds", "Values": [instance_id]}])
        infos = found.get("InstanceInformationList", [])
        if infos and infos[0].get("PingStatus") == "Online":
            return
        if clock() >= deadline:
            raise CommandError(
                f"{instance_id} did not come online in SSM within {timeout_s / 60:g} min: the instance profile needs "
                "AmazonSSMManagedInstanceCore and the subnet a route to the SSM endpoints"
            )
        sleep(poll_s)


def _waiter_config(name: str, timeout_s: float) -> dict[str, int]:
    delay = DELAYS[name]
    return {"Delay": delay, "MaxAttempts": max(1, math.ceil(timeout_s / delay))}


def _wait(client: Any, name: str, what: str, timeout_s: float, **params: Any) -> None:
    from botocore.exceptions import WaiterError

    try:
        client.get_waiter(name).wait(WaiterConfig=_waiter_config(name, timeout_s), **params)
    except WaiterError as err:
        raise CommandError(f"{what}: {err}") from None


def _stderr_tail(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[-STDERR_TAIL_LINES:]) or "(no stderr)"


def run_pull(ssm: Any, instance_id: str, script: str, timeout_s: float, log: Log) -> None:
    """One AWS-RunShellScript command; its failure (or no end within the timeout) is the build's, with the
    script's stderr tail, as snapshot.sh reports a failed pull."""
    from botocore.exceptions import WaiterError

    seconds = max(30, math.ceil(timeout_s))
    command_id = ssm.send_command(
        InstanceIds=[instance_id],
        DocumentName="AWS-RunShellScript",
        Comment="inferctl image-cache build: pull the serving image",
        TimeoutSeconds=seconds,
        Parameters={"commands": [script], "executionTimeout": [str(seconds)]},
    )["Command"]["CommandId"]
    log(f"pulling on {instance_id} (SSM command {command_id})")
    try:
        ssm.get_waiter("command_executed").wait(
            CommandId=command_id, InstanceId=instance_id, WaiterConfig=_waiter_config("command_executed", timeout_s)
        )
    except WaiterError:
        result = ssm.get_command_invocation(CommandId=command_id, InstanceId=instance_id)
        raise CommandError(
            f"the pull on {instance_id} ended {result.get('Status')} ({result.get('StatusDetails')}); its stderr:\n"
            + _stderr_tail(result.get("StandardErrorContent", ""))
        ) from None


def _data_volume(ec2: Any, instance_id: str) -> str:
    instance = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
    for mapping in instance.get("BlockDeviceMappings", []):
        if mapping.get("DeviceName") == DATA_DEVICE:
            return str(mapping["Ebs"]["VolumeId"])
    raise CommandError(f"{instance_id} has no volume at {DATA_DEVICE}")


def _wait_running(ec2: Any, instance_id: str, timeout_s: float) -> None:
    """Wait until running; a launch that fails (e.g. the key refuses EBS: Client.InvalidKMSKey) says why."""
    try:
        _wait(ec2, "instance_running", f"{instance_id} did not reach running", timeout_s, InstanceIds=[instance_id])
    except CommandError as err:
        instance = ec2.describe_instances(InstanceIds=[instance_id])["Reservations"][0]["Instances"][0]
        reason = instance.get("StateReason", {}).get("Message")
        raise CommandError(f"{err}" + (f" ({reason})" if reason else "")) from None


def build(ec2: Any, ssm: Any, request: Request, *, wait_online: WaitOnline, log: Log) -> Result:
    """Launch, pull, stop, snapshot; the instance is terminated in every case (its volume goes with it:
    DeleteOnTermination). A failed termination fails a build that succeeded, and only warns beside a failure."""
    build_id = uuid.uuid4().hex
    launched: list[str] = []
    ok = False
    try:
        result = _build(ec2, ssm, request, build_id, launched, wait_online, log)
        ok = True
        return result
    finally:
        _terminate(ec2, launched, build_id, log, must_succeed=ok)


def _build(ec2: Any, ssm: Any, request: Request, build_id: str, launched: list[str], wait_online: WaitOnline,
           log: Log) -> Result:  # fmt: skip
    timeout = request.timeout_s
    instance_id = ec2.run_instances(**launch_request(request, build_id))["Instances"][0]["InstanceId"]
    launched.append(instance_id)
    log(f"launched {instance_id} ({request.instance_type}, {request.ami}) with a {request.size_gib} GiB volume")
    _wait_running(ec2, instance_id, timeout)
    volume_id = _data_volume(ec2, instance_id)
    check_encryption(f"volume {volume_id}", ec2.describe_volumes(VolumeIds=[volume_id])["Volumes"][0],
                     request.kms_key_arn)  # fmt: skip
    log(f"waiting for {instance_id} in SSM")
    wait_online(ssm, instance_id, timeout)
    run_pull(ssm, instance_id, pull_script(request.image, volume_id), timeout, log)
    log(f"stopping {instance_id}")
    ec2.stop_instances(InstanceIds=[instance_id])
    _wait(ec2, "instance_stopped", f"{instance_id} did not stop", timeout, InstanceIds=[instance_id])
    snapshot_id = ec2.create_snapshot(
        VolumeId=volume_id,
        Description=f"inferctl image-cache build: {request.image.ref}"[:255],
        TagSpecifications=[{"ResourceType": "snapshot", "Tags": snapshot_tags(request.image)}],
    )["SnapshotId"]
    log(f"snapshotting {volume_id} as {snapshot_id}")
    _wait(ec2, "snapshot_completed", f"{snapshot_id} did not complete (it may still: aws ec2 describe-snapshots)",
          timeout, SnapshotIds=[snapshot_id])  # fmt: skip
    snapshot = ec2.describe_snapshots(SnapshotIds=[snapshot_id])["Snapshots"][0]
    # EC2 reports the key of every encrypted snapshot; moto 5.2.5 does not copy the volume's to it. A snapshot
    # takes its volume's key (EBS User Guide, encryption of snapshots), and the volume's was checked above.
    check_encryption(f"snapshot {snapshot_id}", {"KmsKeyId": request.kms_key_arn, **snapshot}, request.kms_key_arn)
    if not SNAPSHOT_ID.match(snapshot_id):
        raise CommandError(f"EC2 answered {snapshot_id!r}, which the stack settings would refuse as a snapshot id")
    return Result(snapshot_id, request.image.ref, request.size_gib, bool(snapshot["Encrypted"]), request.kms_key_arn)


def _terminate(ec2: Any, launched: list[str], build_id: str, log: Log, *, must_succeed: bool) -> None:
    try:
        ids = launched or _find_by_build_id(ec2, build_id)
        if ids:
            ec2.terminate_instances(InstanceIds=ids)
            log(f"terminated {', '.join(ids)} (its volume goes with it)")
    except BaseException as err:  # Ctrl-C too: the operator must learn the instance may still run
        message = (f"could not terminate the build instance {', '.join(launched) or f'tagged {BUILD_TAG_KEY}={build_id}'} "
                   f"({type(err).__name__}: {err}): terminate it by hand")  # fmt: skip
        if must_succeed:
            raise CommandError(message) from None
        print(f"inferctl image-cache: {message}", file=sys.stderr)


def _find_by_build_id(ec2: Any, build_id: str) -> list[str]:
    """The instance of an interrupted run_instances call, if EC2 made it (the client token is this build's id)."""
    found = ec2.describe_instances(Filters=[{"Name": f"tag:{BUILD_TAG_KEY}", "Values": [build_id]}])
    return [i["InstanceId"] for r in found.get("Reservations", []) for i in r.get("Instances", [])
            if i.get("State", {}).get("Name") not in ("terminated", "shutting-down")]  # fmt: skip
