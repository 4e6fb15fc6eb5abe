"""Offline outputs of the inference rollout's AWS resources: what ECR computes for a repository and
its lifecycle policy, deterministically, in ECR's formats."""

from __future__ import annotations

from typing import Any

from inference_platform.offline_plan.mock_context import MockContext, Outputs


def _repository(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    repository = str(inputs.get("name") or name)
    region = ctx.region.name
    return {
        "id": repository,
        "name": repository,
        "arn": f"arn:{ctx.partition}:ecr:{region}:{ctx.account_id}:repository/{repository}",
        "registryId": ctx.account_id,
        "repositoryUrl": f"{ctx.account_id}.dkr.ecr.{region}.{ctx.region.dns_suffix}/{repository}",
    }


def _lifecycle_policy(name: str, inputs: dict[str, Any], ctx: MockContext, _: str) -> dict[str, Any]:
    return {"id": str(inputs.get("repository") or name), "registryId": ctx.account_id}


OUTPUTS: dict[str, Outputs] = {
    "aws:ecr/repository:Repository": _repository,
    "aws:ecr/lifecyclePolicy:LifecyclePolicy": _lifecycle_policy,
}
