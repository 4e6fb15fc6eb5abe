"""The rules' callbacks, typed as pulumi_policy calls them: every rule takes :class:`ReportViolation` from here.

pulumi_policy 1.21 declares ``ReportViolation = Callable[[str, Optional[str]], None]``, a URN always required,
while the function it hands a rule (``_PolicyAnalyzerServicer._create_report_violation``: ``report_violation(
message, urn=None)``) takes the URN as optional, as its own docstring of ``ResourceValidation`` says: a resource
policy reports with the message alone, the resource's URN is implied. The offline runner's callback
(offline_plan/policy_runner.py) does the same. The Protocol below says so (positional: the two callbacks name their
parameters differently); tests/policies/test_callbacks.py calls pulumi_policy's own callback both ways.

A rule typed with it does not fit pulumi_policy's declared ``validate`` parameter, so for the type checker only the
two policy classes are pulumi_policy's with ``validate`` retyped (and only the keywords the rules use; add one
here when a rule needs it). At run time they are pulumi_policy's classes themselves, not subclasses:
pulumi_policy tells a subclass from a direct instance (``type(self) is ResourceValidationPolicy``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol, TypeAlias

from pulumi_policy import EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, StackValidationArgs


class ReportViolation(Protocol):
    """Reports one violation: the message, and for a stack policy the URN of the resource at fault."""

    def __call__(self, message: str, urn: str | None = None, /) -> None: ...


ResourceValidation: TypeAlias = Callable[[ResourceValidationArgs, ReportViolation], Awaitable[object] | None]
StackValidation: TypeAlias = Callable[[StackValidationArgs, ReportViolation], Awaitable[object] | None]

if TYPE_CHECKING:
    import pulumi_policy

    class ResourceValidationPolicy(pulumi_policy.ResourceValidationPolicy):
        def __init__(
            self,
            name: str,
            description: str,
            validate: ResourceValidation | list[ResourceValidation] | None = None,
            enforcement_level: EnforcementLevel | None = None,
            config_schema: PolicyConfigSchema | None = None,
        ) -> None: ...

    class StackValidationPolicy(pulumi_policy.StackValidationPolicy):
        def __init__(
            self,
            name: str,
            description: str,
            validate: StackValidation | None = None,
            enforcement_level: EnforcementLevel | None = None,
            config_schema: PolicyConfigSchema | None = None,
        ) -> None: ...

else:
    from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

__all__ = [
    "ReportViolation",
    "ResourceValidation",
    "ResourceValidationPolicy",
    "StackValidation",
    "StackValidationPolicy",
]
