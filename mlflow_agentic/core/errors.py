"""One exception root with a few meaningful leaves.

``UserInputError`` is the user's to fix (bad file, column, flag); the CLI turns it into a message
and exit code 2. ``ProposerOutputError`` is a proposer's malformed suggestion; the engine records it
as a failed attempt and carries on. ``SandboxError`` is reserved for the code-mode sandbox.
"""

from __future__ import annotations


class AgenticError(Exception):
    """Root of every error mlflow-agentic raises on purpose."""


class UserInputError(AgenticError, ValueError):
    """Bad input from the user: the message names the value and what would be valid."""


class ProposerOutputError(AgenticError, ValueError):
    """A proposer suggested something the engine cannot evaluate (unknown trainer, bad params)."""


class SandboxError(AgenticError, RuntimeError):
    """The sandbox that runs proposer-written code failed (not the candidate's own error)."""


class SearchTerminated(KeyboardInterrupt):
    """SIGTERM during a search: handled like Ctrl-C (the runs under way end KILLED)."""


def did_you_mean(value: str, choices: list[str] | tuple[str, ...]) -> str:
    """Format the valid choices, closest first, for an error message."""
    import difflib

    close = difflib.get_close_matches(value, list(choices), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return f"Valid choices: {', '.join(sorted(choices))}.{hint}"


def disk_full(error: BaseException | None) -> bool:
    """True when ``error`` (or what it was raised from) is a full disk: ``ENOSPC``, or
    sqlite's "database or disk is full". Retrying cannot help; freeing space can."""
    import errno

    seen = 0
    while error is not None and seen < 20:
        if isinstance(error, OSError) and error.errno == errno.ENOSPC:
            return True
        if "database or disk is full" in str(error) or "No space left on device" in str(error):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False
