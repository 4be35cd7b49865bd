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
