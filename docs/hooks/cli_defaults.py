"""MkDocs hook: mkdocs-click 0.9 prints click 8.3's "no default given" sentinel as
``Sentinel.UNSET`` in the CLI reference's default column; the real default of those options is
none, shown as mkdocs-click shows one: None."""

from __future__ import annotations


def on_page_content(html: str, page, config, files) -> str:
    return html.replace("<code>Sentinel.UNSET</code>", "None")
