"""Errors of the artifact pipeline: one line each, with an exit code scripts can branch on.

Exit codes: 1 the store or the file system failed (retrying may help), 2 the input is wrong
(URI, metadata, flags), 3 the data does not match its manifest (retrying will not help).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from inference_platform.errors import CommandError

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTEGRITY = 3


@dataclass(frozen=True)
class Mismatch:
    """A file that is not what the manifest says; ``str()`` is the line shown to the user."""

    path: str
    problem: Literal["missing", "size", "sha256", "unlisted"]
    expected: str
    actual: str

    def __str__(self) -> str:
        if self.problem == "missing":
            return f"{self.path}: missing (expected {self.expected}, found no object at {self.actual})"
        if self.problem == "unlisted":
            return f"{self.path}: not in the manifest, yet stored at {self.actual}"
        return f"{self.path}: {self.problem} expected {self.expected}, actual {self.actual}"


class ArtifactError(CommandError):
    """Any failure of ``inferctl artifacts`` (and of its Python API) the user can act on."""

    exit_code = EXIT_FAILURE


class InvalidInputError(ArtifactError):
    """A URI, model metadata or manifest that breaks the rules; the message names every problem."""

    exit_code = EXIT_USAGE


class IntegrityError(ArtifactError):
    """Stored or downloaded bytes differ from the manifest; ``mismatches`` holds one entry per file."""

    exit_code = EXIT_INTEGRITY

    def __init__(self, message: str, mismatches: tuple[Mismatch, ...] = ()) -> None:
        super().__init__(message)
        self.mismatches = mismatches
