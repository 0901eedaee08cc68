"""The error hierarchy every part of cocoplus raises.

Standard library only: the hook path imports this module.  Errors carry a
one-line message (naming the file and the cause where there is one) and an
optional hint; rendering belongs to the CLI or the hook runner.
"""

from __future__ import annotations


class CocoplusError(Exception):
    """A handled failure: one line for the user, exit code 1."""

    exit_code = 1

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message


class UsageError(CocoplusError):
    """The command was called wrongly (exit 2, like click's usage errors)."""

    exit_code = 2


class NotInitialized(CocoplusError):
    """No `.cocoplus/` directory was found."""


class ConfigInvalid(CocoplusError):
    """cocoplus.toml (or an environment override) is not valid."""


class StateCorrupt(CocoplusError):
    """A state file could not be read or does not match its schema.

    `path` is the damaged file; `kept_at` is where it was set aside, if it was.
    """

    def __init__(self, path: str, cause: str, kept_at: str | None = None) -> None:
        msg = f"{path}: {cause}"
        if kept_at:
            msg += f" (damaged copy kept at {kept_at})"
        super().__init__(msg)
        self.path = path
        self.cause = cause
        self.kept_at = kept_at


class LockTimeout(CocoplusError):
    """A lock could not be taken within its timeout."""

    def __init__(self, lock_path: str, timeout: float, allowed: float | None = None) -> None:
        """`timeout` is the lock's configured timeout; `allowed` the shorter wait a budget left it, if any."""
        if allowed is None or allowed >= timeout:
            waited = f"after {round(timeout, 2):g}s"
        else:
            waited = (
                f"after {round(allowed, 2):g}s "
                f"(all this process had left; the lock's timeout is {round(timeout, 2):g}s)"
            )
        super().__init__(
            f"{lock_path}: lock still held by another process {waited}",
            hint="another cocoplus process is busy; try again, or look for a hung process",
        )
        self.lock_path = lock_path
        self.timeout = timeout


class InvalidId(CocoplusError):
    """An id from outside did not pass the allow-list."""

    exit_code = 2

    def __init__(self, kind: str, value: object) -> None:
        shown = repr(value)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        super().__init__(
            f"invalid {kind} {shown}: use 1-128 characters from A-Z a-z 0-9 _ - . starting with a letter or digit"
        )


class Refused(CocoplusError):
    """An action beyond its principal's authority (docs/authority.md); the message names who may do it."""

    def __init__(self, message: str, principal: str, action: str) -> None:
        super().__init__(message)
        self.principal = principal
        self.action = action


class NotFound(CocoplusError):
    """A named thing (session, task, conversation) does not exist."""
