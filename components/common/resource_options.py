"""Reading a component's own resource options."""

from __future__ import annotations

import pulumi


def own_depends_on(opts: pulumi.ResourceOptions | None) -> list[pulumi.Resource]:
    """The component's own ``depends_on`` resources as a list (a component's children do not inherit them,
    so a component that must order its children after them reads them here)."""
    found = opts.depends_on if opts is not None else None
    if found is None:
        return []
    if isinstance(found, pulumi.Resource):
        return [found]
    return [d for d in found if isinstance(d, pulumi.Resource)] if isinstance(found, list | tuple) else []
