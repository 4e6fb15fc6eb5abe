"""moto's server on 127.0.0.1 for ``inferctl image-cache build``: EC2, SSM, KMS and IAM behind AWS_ENDPOINT_URL, with
fake credentials (tests/conftest.py ``aws_env``), and the SSM wait the command takes replaced by a recorder (moto
5.2.5 does not implement DescribeInstanceInformation)."""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest
from moto.server import ThreadedMotoServer

from inference_platform.inferctl.image_cache import build
from inference_platform.processes import LOOPBACK, free_port

REGION = "us-east-1"
STOP_SECONDS = 15
DIGEST = "sha256:" + "ab" * 32
IMAGE = f"123456789012.dkr.ecr.us-west-2.amazonaws.com/serving/trtllm:1.2.0@{DIGEST}"


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one access-log line per request otherwise
    port = free_port()
    server = ThreadedMotoServer(ip_address=LOOPBACK, port=port, verbose=False)
    server.start()
    yield f"http://{LOOPBACK}:{port}"
    stopper = threading.Thread(target=server.stop, daemon=True)
    stopper.start()
    stopper.join(STOP_SECONDS)
    assert not stopper.is_alive(), f"moto server did not stop within {STOP_SECONDS} s"


@pytest.fixture(scope="module")
def ami(moto_url: str) -> str:
    """One of moto's AMIs (listing them takes a second or two: once per module)."""
    ec2 = boto3.client("ec2", endpoint_url=moto_url, region_name=REGION, aws_access_key_id="testing",
                       aws_secret_access_key="testing")  # fmt: skip
    return str(ec2.describe_images(Owners=["amazon"])["Images"][0]["ImageId"])


@dataclass
class Account:
    """What a build needs in moto's account (a key, an instance profile, an AMI, a subnet) and its clients."""

    ec2: Any
    ssm: Any
    key_arn: str
    profile: str
    ami: str
    subnet: str
    online: list[tuple[str, float]] = field(default_factory=list)
    """(instance id, timeout) of each SSM wait the command made."""
    running: dict[str, Any] = field(default_factory=dict)
    """The instance as described during that wait (moto drops its volumes and profile once terminated)."""

    def argv(self, *extra: str, image: str = IMAGE) -> list[str]:
        return ["image-cache", "build", "--image", image, "--ami", self.ami, "--subnet-id", self.subnet,
                "--instance-profile", self.profile, "--kms-key-id", self.key_arn, *extra]  # fmt: skip

    @property
    def instance_id(self) -> str:
        assert len(self.online) == 1, self.online
        return self.online[0][0]

    @property
    def volume_id(self) -> str:
        """The blank data volume the build launched its instance with."""
        mappings = self.running["BlockDeviceMappings"]
        return next(m["Ebs"]["VolumeId"] for m in mappings if m["DeviceName"] == build.DATA_DEVICE)

    def instance(self, instance_id: str | None = None) -> dict[str, Any]:
        found = self.ec2.describe_instances(InstanceIds=[instance_id or self.instance_id])
        return found["Reservations"][0]["Instances"][0]

    def snapshots_of(self, volume_id: str) -> list[dict[str, Any]]:
        found = self.ec2.describe_snapshots(Filters=[{"Name": "volume-id", "Values": [volume_id]}])
        return found["Snapshots"]


@pytest.fixture
def account(aws_env: None, moto_url: str, ami: str, monkeypatch: pytest.MonkeyPatch) -> Account:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_url)
    session = boto3.Session(region_name=REGION)
    ec2 = session.client("ec2")
    profile = f"node-{uuid.uuid4().hex[:8]}"
    session.client("iam").create_instance_profile(InstanceProfileName=profile)
    found = Account(
        ec2=ec2,
        ssm=session.client("ssm"),
        key_arn=session.client("kms").create_key(Description="the stack's volume key")["KeyMetadata"]["Arn"],
        profile=profile,
        ami=ami,
        subnet=ec2.describe_subnets()["Subnets"][0]["SubnetId"],
    )

    def online(ssm: Any, instance_id: str, timeout_s: float) -> None:
        found.online.append((instance_id, timeout_s))
        found.running = found.instance(instance_id)

    monkeypatch.setattr(build, "wait_ssm_online", online)
    return found
