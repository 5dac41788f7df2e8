"""The ``unstructured`` cleaner: drop the elements Unstructured categorized as Header, Footer or PageNumber.

It reads the layout blocks of the parsed document: the ``unstructured`` parser maps the categories ``Header`` and
``Page-header`` to block kind ``header``, ``Footer`` and ``Page-footer`` to ``footer`` and ``PageNumber`` to
``page_number`` (`ingestaudit.parsers.unstructured_parser.CATEGORY_KINDS`). The output joins the text of every other
non-empty block with a blank line, which is how that parser builds its text, so the output is the parsed text minus
the dropped elements; the result carries that exact offset map (`CleanResult.pieces`: each kept block maps to its own
place in the input text, located in reading order; None, so the chain aligns instead, when a block is not found).

Where Unstructured assigns these categories (0.27): the PDF ``fast`` strategy calls
``unstructured.partition.text.element_from_text`` with each element's coordinates, which returns a ``Header`` when
the element's top lies in the top 7 % of the page and a ``Footer`` when it lies below 93 %. ``partition_html`` and
``partition_text`` never produce these categories (``partition_html`` instead keeps only ``<main>`` when a page has
one, or ``<body>``), so on HTML and plain text this cleaner removes nothing.
"""

from __future__ import annotations

import importlib.metadata
from collections import Counter
from typing import Any

from ingestaudit.stages.cleaners.base import (
    Cleaner,
    CleanerInput,
    CleanerUnavailable,
    CleanResult,
    join_kept,
    locate_in_order,
)

DROP_KINDS = ("header", "footer", "page_number")
"""Block kinds removed (Unstructured categories Header/Page-header, Footer/Page-footer, PageNumber)."""

SEPARATOR = "\n\n"
"""Join of the kept blocks' texts (the unstructured parser's ``ELEMENT_SEPARATOR``)."""

MAX_LISTED = 20
"""At most this many removed block texts are listed in the detail."""


class UnstructuredCleaner(Cleaner):
    """Drops blocks of kind header, footer and page_number (see the module docstring).

    Runs on documents parsed by the ``unstructured`` parser, or on any parsed document whose blocks carry one of
    `DROP_KINDS` (a precomputed output with layout kinds); on other parsers' blocks it would silently equal
    ``none``, so it does not run there.
    """

    name = "unstructured"
    reads = "blocks"

    def supports(self, inp: CleanerInput) -> str | None:
        """Runs on the unstructured parser's output, or on blocks carrying a kind of `DROP_KINDS`."""
        if inp.parser == "unstructured":
            return None  # even without blocks: an empty parse is then an empty input, not an unsupported one
        if not inp.blocks:
            return "needs layout blocks (the unstructured parser's elements); the input has none"
        if not any(b.kind in DROP_KINDS for b in inp.blocks):
            return (f"the blocks come from parser {inp.parser!r} and carry no header/footer/page_number kind "
                    "(Unstructured's categories)")
        return None

    def version(self) -> str:
        """Unstructured's version from package metadata (the categories are its own).

        Raises:
            CleanerUnavailable: unstructured is not installed.
        """
        try:
            return importlib.metadata.version("unstructured")
        except importlib.metadata.PackageNotFoundError:
            raise CleanerUnavailable("unstructured is not installed; pip install unstructured") from None

    def settings(self) -> dict[str, Any]:
        """The dropped kinds and the separator."""
        return {"drop_kinds": list(DROP_KINDS), "separator": SEPARATOR}

    def clean(self, inp: CleanerInput) -> CleanResult:
        """The non-empty kept blocks' texts joined by `SEPARATOR`, in reading order.

        Raises:
            UnsupportedInput: see `supports`.
        """
        self._check(inp)
        blocks = [b for b in sorted(inp.blocks, key=lambda b: b.order) if b.text.strip()]
        starts = locate_in_order(inp.text, [b.text for b in blocks])  # where each block lies, for the exact map
        segments: list[tuple[str, int | None]] = []
        prev_end: int | None = None  # input end of the last kept block
        for k, b in enumerate(blocks):
            if b.kind in DROP_KINDS:
                prev_end = None
                continue
            at = starts[k] if starts else None
            if segments:  # the separator comes from the input when the two kept blocks are adjacent there
                adjacent = prev_end is not None and at == prev_end + len(SEPARATOR)
                segments.append((SEPARATOR, prev_end if adjacent else None))
            segments.append((b.text, at))
            prev_end = at + len(b.text) if at is not None else None
        text, pieces = join_kept(segments, inp.text)
        dropped = [b for b in sorted(inp.blocks, key=lambda b: b.order) if b.kind in DROP_KINDS]
        return CleanResult(text, {
            "removed_blocks": dict(sorted(Counter(b.kind for b in dropped).items())),
            "removed": [{"page": b.page, "kind": b.kind, "text": b.text[:80]} for b in dropped[:MAX_LISTED]],
        }, pieces if starts is not None else None)
