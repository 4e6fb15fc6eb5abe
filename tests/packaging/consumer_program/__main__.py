"""The consumer's program: its own components/ and infra/ packages beside ours, imported by the same names."""

import pulumi
from components.naming import NamePrefix
from infra.platform import build

from inference_platform.components.common import default_tags_transform

prefix = NamePrefix(team=pulumi.Config().get("teamName") or "vision", stack=pulumi.get_stack())
# The pack's required-tags rule: every taggable AWS resource carries these, put on each by one transform.
pulumi.runtime.register_resource_transform(
    default_tags_transform({"project": pulumi.get_project(), "stack": pulumi.get_stack(), "owner": prefix.team,
                            "cost-center": "vision-research"})
)  # fmt: skip
outputs = build(prefix)
pulumi.export("bucket", outputs["bucket"])
