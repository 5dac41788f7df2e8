"""The root of every error the package raises for a user-facing problem (issue 24 point 5).

Every such exception derives from `IngestAuditError`, so the command line catches it once at its edge and exits 2
with its message (`ingestaudit.cli`). This module imports nothing else of the package: every layer, `metrics/`
included, may use it.

Each plug point of a pipeline (parser, cleaner, chunker, embedder, index, retriever) and each input the user gives
(truth labels, configuration, output location) has one family below. The plug point's own base class, in the module
that defines the plug point, derives from its family, and a plug-in raises that class (or a subclass of it):

- parser: `ingestaudit.parsers.base.ParserError` (and its `NoOutput`, `UnsupportedFormat`), family `ParsingError`;
- cleaner: `ingestaudit.stages.cleaners.base.CleanerError`, family `CleaningError`;
- chunker: `ingestaudit.stages.chunkers.base.ChunkerError` (and `ingestaudit.chain.ChunkOutputError`), family
  `ChunkingError`;
- embedder: `ingestaudit.stages.embedders.base.EmbedderError`, family `EmbeddingError`;
- index: `ingestaudit.stages.index.IndexInputError` (and `ingestaudit.auditors.index.UserIndexError`), family
  `IndexingError`;
- retriever: `ingestaudit.stages.retrievers.RetrieverUnavailable`, family `RetrievalError`;
- truth: `ingestaudit.truth.TruthError`, family `TruthFileError`;
- config: `ingestaudit.config.ConfigError`, family `ConfigurationError`;
- output: `ingestaudit.io.OutputError`, family `WritingError`.

The family is what a layer catches when it may not import the plug point's module; the runner catches the plug
point's own class, so a plug-in raises that one (a parser raising `ParsingError` itself, not `ParserError`, still
fails only that document, but its row reads ``ParsingError: ...`` as for an unexpected exception). The package's other error families (corpus, input file, report, store, history, gate,
importer, plug-in registry, pipeline, executor, TREC files, detectors, stage selection...) derive from
`IngestAuditError` directly. A class that also derived from ``ValueError``, ``KeyError`` or ``OSError`` keeps that
base, so an existing ``except ValueError`` behaves as before.

Left outside the root on purpose (control flow, never shown to a user as an error):

- `ingestaudit.executors.base.TaskTimeout` (a ``BaseException``): a task's time budget ran out; it must pass
  through a plug-in's ``except Exception`` to reach the executor, which turns it into that document's error row.
- `ingestaudit.executors.base.Interrupted` (a ``KeyboardInterrupt``): SIGINT/SIGTERM stopping the run; the command
  line maps it to exit 130/143.
- `ingestaudit.metrics.tree_edit.DeadlineExceeded`: the tree edit distance gave up at its deadline; TEDS catches it
  and records the table as over its budget.
- `ingestaudit.truth._DuplicateKey` (private): a JSON key given twice, caught inside the truth loader and turned
  into a `TruthError` problem.
"""

from __future__ import annotations

__all__ = ["ChunkingError", "CleaningError", "ConfigurationError", "EmbeddingError", "IndexingError",
           "IngestAuditError", "ParsingError", "RetrievalError", "TruthFileError", "WritingError"]


class IngestAuditError(Exception):
    """A problem the user can fix (an input, a plug-in, a setting); ``str(exc)`` names the file, field or flag."""


class ParsingError(IngestAuditError):
    """The parser plug point (``parse``): the family of `ingestaudit.parsers.base.ParserError`."""


class CleaningError(IngestAuditError):
    """The cleaner plug point (``clean``): the family of `ingestaudit.stages.cleaners.base.CleanerError`."""


class ChunkingError(IngestAuditError):
    """The chunker plug point (``chunk``): the family of `ingestaudit.stages.chunkers.base.ChunkerError` and of
    `ingestaudit.chain.ChunkOutputError` (a chunker's output that breaks the chunk contract)."""


class EmbeddingError(IngestAuditError):
    """The embedder plug point (``embed``): the family of `ingestaudit.stages.embedders.base.EmbedderError`."""


class IndexingError(IngestAuditError):
    """The ANN index plug point (``index``): vectors or a user's index that cannot be indexed or read
    (`ingestaudit.stages.index.IndexInputError`, `ingestaudit.auditors.index.UserIndexError`)."""


class RetrievalError(IngestAuditError):
    """The retriever plug point (``retrieve``): a retriever that cannot run
    (`ingestaudit.stages.retrievers.RetrieverUnavailable`)."""


class TruthFileError(IngestAuditError):
    """The truth labels of a document cannot be loaded: the family of `ingestaudit.truth.TruthError`."""


class ConfigurationError(IngestAuditError):
    """The configuration file is unreadable or invalid: the family of `ingestaudit.config.ConfigError`."""


class WritingError(IngestAuditError):
    """An output cannot be written where it was asked for: the family of `ingestaudit.io.OutputError`."""
