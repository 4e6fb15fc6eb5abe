"""Errors that end an inferctl command with one clear line and a chosen exit code (never a traceback)."""


class CommandError(Exception):
    """A failure the user can act on. ``str(err)`` is the whole message; ``exit_code`` is returned."""

    exit_code: int = 1

    def __init__(self, message: str, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
