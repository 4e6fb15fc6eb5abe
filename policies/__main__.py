"""Entry point for `pulumi preview --policy-pack policies`: builds the pack and serves it."""

from inference_platform.policies.pack import ENFORCEMENT_LEVEL, PACK_NAME, POLICIES
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)
