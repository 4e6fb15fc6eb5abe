"""Offline outputs of the rollout's ECR resources: ECR's formats, per region and partition, merged."""

from __future__ import annotations

import re

from inference_platform.offline_plan import mocks
from inference_platform.offline_plan.mocks import MockContext
from inference_platform.offline_plan.mocks_inference import OUTPUTS

REPOSITORY = "aws:ecr/repository:Repository"


def test_every_inference_output_is_merged_into_the_plan_mocks():
    assert OUTPUTS and all(mocks.OUTPUTS[token] is fn for token, fn in OUTPUTS.items())


def test_a_repository_gets_its_url_arn_and_registry_in_ecr_format():
    ctx = MockContext.for_region("us-east-2")
    out = OUTPUTS[REPOSITORY]("images-repository", {"name": "inference-platform-npu/inference-neuron"}, ctx, "")
    assert (
        out["repositoryUrl"] == "123456789012.dkr.ecr.us-east-2.amazonaws.com/inference-platform-npu/inference-neuron"
    )
    assert out["arn"] == "arn:aws:ecr:us-east-2:123456789012:repository/inference-platform-npu/inference-neuron"
    assert out["registryId"] == "123456789012" and out["name"] == out["id"]
    # A digest reference built on the URL is what ECR and the kubelet accept.
    assert re.fullmatch(r"\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com/[a-z0-9./_-]+", out["repositoryUrl"])


def test_the_lifecycle_policy_names_its_repository():
    ctx = MockContext.for_region("us-west-2")
    out = OUTPUTS["aws:ecr/lifecyclePolicy:LifecyclePolicy"]("images-lifecycle", {"repository": "p/i"}, ctx, "")
    assert out == {"id": "p/i", "registryId": "123456789012"}
