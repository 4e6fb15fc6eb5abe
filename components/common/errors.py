"""The one error a component raises for bad Args: every problem at once, each naming its field."""

from __future__ import annotations

from collections.abc import Iterable

from inference_platform.redaction import scrub


class ComponentArgsError(ValueError):
    """A component's Args were refused: every problem at once (``problems``), each naming its field."""

    def __init__(self, component: str, problems: Iterable[str]) -> None:
        # A problem quotes the value it refuses: never a credential in it (inference_platform.redaction).
        self.problems = tuple(scrub(p) for p in problems)
        super().__init__(f"invalid {component} arguments: " + "; ".join(self.problems))


def raise_if(component: str, problems: list[str]) -> None:
    if problems:
        raise ComponentArgsError(component, problems)
