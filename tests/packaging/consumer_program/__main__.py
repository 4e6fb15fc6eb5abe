"""The consumer's program: its own components/ and infra/ packages beside ours, imported by the same names."""

import pulumi
from components.naming import NamePrefix
from infra.platform import build

prefix = NamePrefix(team=pulumi.Config().get("teamName") or "vision", stack=pulumi.get_stack())
outputs = build(prefix)
pulumi.export("bucket", outputs["bucket"])
