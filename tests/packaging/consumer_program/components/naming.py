"""How the consumer names things."""

from dataclasses import dataclass


@dataclass(frozen=True)
class NamePrefix:
    team: str
    stack: str

    def __str__(self) -> str:
        return f"{self.team}-{self.stack}"
