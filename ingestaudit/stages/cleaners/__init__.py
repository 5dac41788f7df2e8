"""Boilerplate cleaners under audit: one interface (`base.Cleaner`: a `base.CleanerInput` built from a
`ParsedDocument`, a plain text or raw HTML, in; main-content text out), the built-in cleaners ``trafilatura``,
``unstructured``, ``repeated-lines``, ``none`` and ``precomputed``, and user cleaners through the entry-point group
``ingestaudit.cleaners`` (`registry`). Modules of the built-ins are imported only when used."""

from ingestaudit.stages.cleaners.base import (
    Cleaner,
    CleanerError,
    CleanerInput,
    CleanerUnavailable,
    CleanResult,
    UnsupportedInput,
)
from ingestaudit.stages.cleaners.registry import GROUP, cleaner_names, load_cleaner

__all__ = ["Cleaner", "CleanerError", "CleanerInput", "CleanerUnavailable", "CleanResult", "UnsupportedInput",
           "GROUP", "cleaner_names", "load_cleaner"]
