"""Errors that end an inferctl command with one clear line and a chosen exit code (never a traceback)."""

from inference_platform.redaction import scrub


class CommandError(Exception):
    """A failure the user can act on. ``str(err)`` is the whole message; ``exit_code`` is returned."""

    exit_code: int = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        # The message goes to a terminal or a CI log: credentials in it never do (inference_platform.redaction).
        super().__init__(scrub(message))
        if exit_code is not None:
            self.exit_code = exit_code
