"""Stack-wide default tags, applied by one resource transform to every taggable AWS resource.

A transform (not provider ``default_tags``) puts the tags into each resource's own inputs, so policies,
previews and the offline plan see them on the resource itself.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import typing
from collections.abc import Mapping

import pulumi
from pulumi.runtime.rpc import get_resource_module


@functools.cache
def is_taggable(type_token: str) -> bool:
    """True when an AWS resource type takes a ``tags`` map input (``aws:ec2/vpc:Vpc`` does)."""
    pkg, _, rest = type_token.partition(":")
    module, _, _cls = rest.rpartition(":")
    if pkg != "aws" or not module:
        return False
    resource_module = get_resource_module(pkg, module, "")
    mod_info = getattr(resource_module, "mod_info", None)
    if mod_info is None:
        importlib.import_module("pulumi_aws")  # registers every module of the package
        mod_info = getattr(get_resource_module(pkg, module, ""), "mod_info", None)
    class_name = (mod_info or {}).get("classes", {}).get(type_token)
    if mod_info is None or class_name is None:
        return False
    cls = getattr(importlib.import_module(mod_info["fqn"]), class_name)
    param = inspect.signature(cls._internal_init).parameters.get("tags")
    # Auto Scaling groups take a *list* of tag blocks named `tags`: not a tag map.
    return param is not None and "Mapping" in str(param.annotation)


def merge_tags(defaults: Mapping[str, str], existing: typing.Any) -> dict[str, typing.Any]:
    """Defaults first, so a resource's own tags (Name, kubernetes.io/...) win on conflicts."""
    own = existing if isinstance(existing, Mapping) else {}
    return {**defaults, **own}


def default_tags_transform(tags: Mapping[str, str]) -> pulumi.ResourceTransform:
    """A stack transform that merges ``tags`` into every taggable AWS resource's ``tags`` input."""
    frozen = dict(tags)

    def transform(args: pulumi.ResourceTransformArgs) -> pulumi.ResourceTransformResult | None:
        if not args.custom or not is_taggable(args.type_):
            return None
        props = dict(args.props)
        props["tags"] = merge_tags(frozen, props.get("tags"))
        return pulumi.ResourceTransformResult(props=props, opts=args.opts)

    return transform
