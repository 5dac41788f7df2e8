"""How a worker builds a pipeline's parser, and which parser reads a document: one name, a precomputed-output
folder, or a routing table keyed by file extension (`ingestaudit.pipeline.parser_routes`), resolved here only.

A routed pipeline reads each document with the parser of its extension (lower case, without the dot), else with its
``default`` route. A document that no route can read (no route for its extension and no default, or a routed parser
that does not read that file type) is an `Unrouted` error of that pipeline, never a skip: every pipeline of a run is
then measured on the same items. A pipeline with one parser keeps the older rule: a file type its parser does not
read is ``skipped`` (`ingestaudit.parsers.base.UnsupportedFormat`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ingestaudit.parsers.base import Parser, ParserError

if TYPE_CHECKING:
    from ingestaudit.document import Document
    from ingestaudit.pipeline import Pipeline


class Unrouted(ParserError):
    """No route of a routed pipeline reads this document; the message names the pipeline, the document's extension
    and the routes. The runner records ``error`` rows and one failure."""


@dataclass(frozen=True)
class ParserSpec:
    """How a worker builds a parser: a registered name with options, a precomputed-output folder, or (``routes``
    non-empty) a routing table of ``(extension or "default", ParserSpec)`` pairs.

    Attributes:
        name: the parser's registered name (or ``"module:Class"``); the output folder's name for a precomputed
            pipeline; `ingestaudit.pipeline.ROUTED` for a routing table.
        options: keyword options of the parser.
        precomputed_root: the ``--outputs`` folder of a precomputed pipeline, else None.
        routes: the routing table, `ingestaudit.pipeline.DEFAULT_ROUTE` last; empty for one parser.
        pipeline: the pipeline's name, for a routing table (its `Unrouted` messages name it).
    """

    name: str
    options: dict[str, Any] = field(default_factory=dict)
    precomputed_root: Path | None = None
    routes: tuple[tuple[str, "ParserSpec"], ...] = ()
    pipeline: str = ""

    def build(self) -> Parser:
        """Instantiate the parser (raises what `load_parser` raises). A routing table builds per route
        (`route`), never as a whole.

        Raises:
            ValueError: called on a routing table.
        """
        if self.routes:
            raise ValueError(f"pipeline {self.pipeline!r} routes its parser by extension: build each route")
        if self.precomputed_root is not None:
            from ingestaudit.parsers.precomputed import PrecomputedParser

            return PrecomputedParser(self.precomputed_root, self.name)
        from ingestaudit.parsers.registry import load_parser

        return load_parser(self.name, self.options)

    @property
    def label(self) -> str:
        """The parser's name as the report names it (the ``parser`` column): ``precomputed`` for an output folder."""
        return "precomputed" if self.precomputed_root is not None else self.name

    def route(self, document: "Document") -> "ParserSpec | None":
        """The spec that reads ``document``: itself for one parser; for a routing table the route of the document's
        extension, else the default route, else None."""
        if not self.routes:
            return self
        table = dict(self.routes)
        from ingestaudit.pipeline import DEFAULT_ROUTE

        return table.get(document.suffix.lstrip(".")) or table.get(DEFAULT_ROUTE)

    def route_label(self, document: "Document") -> str:
        """`label` of the spec that reads ``document`` (`route`), ``""`` when no route does."""
        spec = self.route(document)
        return spec.label if spec is not None else ""

    def describe_routes(self) -> str:
        """The routing table as messages show it: ``pdf -> pymupdf, default -> unstructured``."""
        return ", ".join(f"{ext} -> {spec.name}" for ext, spec in self.routes)

    def unrouted(self, document: "Document", parser: Parser | None = None, reason: str = "") -> Unrouted:
        """The error of a routed pipeline that cannot read ``document``: no route for its extension (``parser``
        None) or the routed ``parser`` does not read it (``reason``: what the parser said, when it did)."""
        ext = document.suffix.lstrip(".") or "(none)"
        spec = self.route(document)
        if parser is None or spec is None:
            why = f"no route for extension {ext} and no default route"
        else:
            reads = ", ".join(sorted(e.lstrip(".") for e in parser.extensions)) or "none"
            why = (f"extension {ext} is routed to parser {spec.name!r}, which does not read it ("
                   + (reason or f"it reads: {reads}") + ")")
        return Unrouted(f"pipeline {self.pipeline!r} cannot read {document.path.name}: {why}; its routes: "
                        f"{self.describe_routes()}")

    def parser_for(self, document: "Document", build: Any = None) -> tuple["ParserSpec", Parser]:
        """The spec and parser that read ``document``; ``build`` (a spec -> `Parser` function, default
        `ParserSpec.build`) lets a worker reuse the parsers it built.

        Raises:
            Unrouted: a routing table with no route that reads ``document``.
        """
        make = build or (lambda s: s.build())
        spec = self.route(document)
        if spec is None:
            raise self.unrouted(document)
        parser = make(spec)
        if self.routes and not parser.supports(document):
            raise self.unrouted(document, parser)
        return spec, parser


def parser_spec(pipeline: "Pipeline", parser_options: dict[str, dict[str, Any]], limits: Any = None) -> ParserSpec:
    """How a worker builds ``pipeline``'s parser: the precomputed folder (its files read up to ``limits``'
    ``output_bytes``, an `ingestaudit.config.Limits`; default its default), the registered parser with its options
    (``[parser_options.<name>]`` overridden by the pipeline's own parser options), or for a routing table one such
    spec per route."""
    choice = pipeline.stage("parser")
    if pipeline.precomputed_root is not None:
        opts = {} if limits is None else {"max_bytes": limits.output_bytes}
        return ParserSpec(pipeline.source or pipeline.name, opts, pipeline.precomputed_root)
    if choice.routes:  # a route's spec equals a one-parser pipeline's: a worker builds and parses it once for both
        routes = tuple((ext, ParserSpec(name, dict(parser_options.get(name, {})))) for ext, name in choice.routes)
        return ParserSpec(choice.use, {}, routes=routes, pipeline=pipeline.name)
    return ParserSpec(choice.use, {**parser_options.get(choice.use, {}), **choice.kwargs()})
