"""Text from outside (a candidate's error, an LLM's hypothesis, a cell) made safe to print: no
control characters (an ANSI escape can clear the screen, an OSC 52 one write the clipboard) and,
for rich's console, no markup it would interpret."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls (an escape's introducers among them)."""


def plain(text: object) -> str:
    """``text`` without control characters (each replaced by ``?``)."""
    return _CONTROL.sub("?", str(text))


def plain_markup(text: object) -> str:
    """``plain(text)``, with rich's markup escaped (a ``[bold]`` in it stays text)."""
    from rich.markup import escape

    return escape(plain(text))
