"""The two cleaners that involve no algorithm: ``none`` (the baseline that removes nothing) and ``precomputed``
(the ``clean_text`` an external pipeline wrote next to its parsed output)."""

from __future__ import annotations

from typing import Any

from ingestaudit import __version__
from ingestaudit.stages.cleaners.base import Cleaner, CleanerInput, CleanResult


class NoneCleaner(Cleaner):
    """Returns its input text unchanged: the baseline. Its span recall is 0 and its span precision undefined (nothing
    removed); its content retention is the parser's own, and its removal recall shows how much boilerplate the
    parser already left out."""

    name = "none"
    reads = "text"

    def clean(self, inp: CleanerInput) -> CleanResult:
        """``inp.text`` as it is (the identity map)."""
        return CleanResult(inp.text, pieces=((0, 0, len(inp.text)),) if inp.text else ())

    def version(self) -> str:
        """ingestaudit's version."""
        return __version__


class PrecomputedCleaner(Cleaner):
    """Reads ``extras["clean_text"]``: the main content an external pipeline wrote in its precomputed JSON output
    (``--outputs DIR``; DESIGN.md, "What flows through")."""

    name = "precomputed"
    reads = "extras"
    KEY = "clean_text"

    def supports(self, inp: CleanerInput) -> str | None:
        """Runs when the input carries a ``clean_text`` string."""
        if not isinstance(inp.extras.get(self.KEY), str):
            return f"no precomputed {self.KEY!r} in the output"
        return None

    def clean(self, inp: CleanerInput) -> CleanResult:
        """``inp.extras["clean_text"]``.

        Raises:
            UnsupportedInput: there is none.
        """
        self._check(inp)
        return CleanResult(inp.extras[self.KEY])

    def version(self) -> str:
        """``"external"``: the pipeline that wrote it is not known here."""
        return "external"

    def settings(self) -> dict[str, Any]:
        """The key read."""
        return {"key": self.KEY}

