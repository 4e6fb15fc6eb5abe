"""What every facade shares: the keys a caller set, as keyword arguments of the real Args, and the
Kubernetes provider resource option."""

from collections.abc import Mapping
from enum import Enum
from typing import Any

import pulumi

from inference_platform.components.common.errors import ComponentArgsError
from inference_platform.components.common.resource_options import own_depends_on

KUBERNETES_PACKAGE = "kubernetes"


def supplied(args: Mapping[str, Any], *keys: str, **renamed: str) -> dict[str, Any]:
    """The keys of ``args`` the caller set (the provider passes no others), as keyword arguments for the
    component's own Args: ``keys`` keep their name, ``renamed`` maps a facade key to the Args field. A key
    left out takes the default the component's Args declare, so every default has one definition."""
    fields = {**{key: key for key in keys}, **renamed}
    return {field: plain(args[key]) for key, field in fields.items() if args.get(key) is not None}


def plain(value: Any) -> Any:
    """An enum member as its value, a whole number as an ``int``, a list as a tuple (the Args are frozen
    dataclasses). The engine sends every number as a double, so a TypeScript ``900`` arrives as ``900.0``,
    and components render numbers into strings (an ALB attribute ``900.0``, a Duration ``900.0s``) that the
    Python program, given ``900``, renders without the fraction."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, list):
        return tuple(plain(v) for v in value)
    return value


def inner_options(parent: pulumi.Resource, opts: pulumi.ResourceOptions | None) -> pulumi.ResourceOptions:
    """Options of the component a facade builds: its child, waiting on what the caller's ``dependsOn``
    names (a component's children do not inherit its ``depends_on``; the component itself reads it)."""
    return pulumi.ResourceOptions(parent=parent, depends_on=own_depends_on(opts) or None)


def kubernetes_provider(component: str, opts: pulumi.ResourceOptions | None) -> pulumi.ProviderResource:
    """The ``kubernetes`` provider of the ``providers`` resource option, as a multi-language component
    receives it (the engine hands the caller's providers to Construct)."""
    providers = (opts.providers if opts else None) or {}
    if isinstance(providers, Mapping):
        found = providers.get(KUBERNETES_PACKAGE)
    else:
        found = next((p for p in providers if getattr(p, "package", None) == KUBERNETES_PACKAGE), None)
    if found is None:
        raise ComponentArgsError(
            component,
            [
                "providers: the cluster's Kubernetes provider is required as the resource option "
                "`providers: {kubernetes: <provider>}` (a kubernetes.Provider built from the Cluster's kubeconfig)"
            ],
        )
    return found
