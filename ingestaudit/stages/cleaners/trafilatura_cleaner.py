"""The ``trafilatura`` cleaner: main-content extraction from the raw HTML with ``trafilatura.extract``.

It reads the source page itself (`CleanerInput.raw_html`: the bytes of an ``.html``/``.htm`` source, so
trafilatura detects the encoding), never the parser's text: its numbers are the same whichever parser ran.

Default settings are those of trafilatura's own evaluation (``tests/eval_common.py`` ``EXTRACT_OPTS``, the
``fallback`` runner of ``tests/eval_gate.py``): ``include_comments=False, include_tables=True,
include_formatting=False, fast=False``; plus ``output_format="txt"``, ``with_metadata=False``, ``deduplicate=False``
(its LRU cache would make a page's output depend on the pages seen before), ``favor_precision=False``,
``favor_recall=False``, ``include_links=False``, ``include_images=False``, ``target_language=None`` and no URL.
Trafilatura's ``DEFAULT_CONFIG`` (its packaged ``settings.cfg``) is used unchanged.

Offline: ``extract`` on a string or bytes never fetches anything (only ``fetch_url`` and the spider do, and they
are not called). ``extract`` returns None when it finds no main content; the output is then ``""`` (everything
removed) and ``detail["extract_returned_none"]`` is True.

Reference: trafilatura (Barbaresi, ACL 2021 demo, https://github.com/adbar/trafilatura); checked on 2.3.1. Since
lxml 5.2 trafilatura's dependency jusText needs the separate package ``lxml_html_clean``.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import asdict, dataclass
from typing import Any, Literal

from ingestaudit.stages.cleaners.base import Cleaner, CleanerError, CleanerInput, CleanerUnavailable, CleanResult

OUTPUT_FORMATS = ("txt", "markdown")


@dataclass(frozen=True)
class TrafilaturaOptions:
    """The options of the ``trafilatura`` cleaner, with their defaults and types: the keyword arguments of
    ``trafilatura.extract`` of the same names (see the module docstring for where the defaults come from). The
    cleaner's ``option_dataclasses``, so that a misspelt or mistyped option is refused before any document is read
    (`ingestaudit.plugin_options`).

    Attributes:
        fast: skip trafilatura's fallback extractors.
        include_comments: keep the comment section.
        include_tables: keep tables' text.
        include_formatting: keep bold/italic markers (markdown output).
        include_links: keep link targets.
        include_images: keep image references.
        favor_precision: prefer less text, more surely main content.
        favor_recall: prefer more text.
        deduplicate: drop repeated segments (its cache spans pages: off by default).
        target_language: an ISO 639-1 code; pages in other languages give no output; null for any.
        output_format: ``txt`` or ``markdown``.
        with_metadata: prepend the page's metadata.
    """

    fast: bool = False
    include_comments: bool = False
    include_tables: bool = True
    include_formatting: bool = False
    include_links: bool = False
    include_images: bool = False
    favor_precision: bool = False
    favor_recall: bool = False
    deduplicate: bool = False
    target_language: str | None = None
    output_format: Literal["txt", "markdown"] = "txt"
    with_metadata: bool = False


DEFAULTS: dict[str, Any] = asdict(TrafilaturaOptions())
"""Keyword arguments passed to ``trafilatura.extract`` (every one may be overridden by an option of the same
name)."""



class TrafilaturaCleaner(Cleaner):
    """Main content of an HTML page by ``trafilatura.extract`` (see the module docstring).

    Args:
        **options: overrides of `DEFAULTS` (same names as ``trafilatura.extract``'s keyword arguments).

    Raises:
        ValueError: (at construction) an unknown option, a non-boolean flag, or an output format other than
            ``"txt"`` / ``"markdown"``.
    """

    name = "trafilatura"
    reads = "html"
    option_dataclasses = (TrafilaturaOptions,)  # the names and types behind **options

    def __init__(self, **options: Any):
        unknown = sorted(set(options) - set(DEFAULTS))
        if unknown:
            raise ValueError(f"trafilatura cleaner: unknown option(s) {', '.join(unknown)}; known: "
                             f"{', '.join(DEFAULTS)}")
        merged = {**DEFAULTS, **options}
        for key, value in merged.items():
            if isinstance(DEFAULTS[key], bool) and not isinstance(value, bool):
                raise ValueError(f"trafilatura cleaner: option {key} must be true or false, not {value!r}")
        if merged["output_format"] not in OUTPUT_FORMATS:
            raise ValueError(f"trafilatura cleaner: output_format must be one of {OUTPUT_FORMATS}")
        if merged["target_language"] is not None and not isinstance(merged["target_language"], str):
            raise ValueError("trafilatura cleaner: target_language must be an ISO 639-1 code or null")
        self.options = merged

    def supports(self, inp: CleanerInput) -> str | None:
        """Runs when raw HTML is given or the source is an HTML file."""
        if not inp.has_html():
            return "needs the raw HTML of the source (an .html/.htm document)"
        return None

    def version(self) -> str:
        """trafilatura's version from package metadata.

        Raises:
            CleanerUnavailable: trafilatura is not installed.
        """
        try:
            return importlib.metadata.version("trafilatura")
        except importlib.metadata.PackageNotFoundError:
            raise CleanerUnavailable("trafilatura is not installed; pip install trafilatura") from None

    def settings(self) -> dict[str, Any]:
        """The keyword arguments of ``extract`` and the configuration used."""
        return {"extract": dict(self.options), "config": "trafilatura.settings.DEFAULT_CONFIG", "url": None}

    def clean(self, inp: CleanerInput) -> CleanResult:
        """``trafilatura.extract(raw_html, **settings)``; None becomes ``""``.

        Raises:
            UnsupportedInput: no HTML.
            CleanerUnavailable: trafilatura (or one of its dependencies) does not import.
            CleanerError: extraction raised.
        """
        self._check(inp)
        html = inp.raw_html()
        try:
            import trafilatura
        except ImportError as exc:
            raise CleanerUnavailable(f"trafilatura does not import ({exc}); pip install trafilatura "
                                     "lxml_html_clean") from None
        try:
            out = trafilatura.extract(html, url=None, **self.options)
        except Exception as exc:  # the library's own failure on this page
            raise CleanerError(f"trafilatura.extract failed: {type(exc).__name__}: {exc}") from exc
        return CleanResult(out or "", {"extract_returned_none": out is None})
