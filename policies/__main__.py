"""Entry point for `pulumi preview --policy-pack policies`: builds the pack and serves it."""

from pulumi_policy import PolicyPack

from inference_platform.policies.pack import ENFORCEMENT_LEVEL, PACK_NAME, POLICIES

PolicyPack(name=PACK_NAME, policies=POLICIES, enforcement_level=ENFORCEMENT_LEVEL)
