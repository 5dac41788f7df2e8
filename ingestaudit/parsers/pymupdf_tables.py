"""Tables of a PDF page with PyMuPDF's table finder (``Page.find_tables``), written as HTML for TEDS.

What PyMuPDF gives: per detected table, the bounding boxes of its cells (``Table.cells``; a merged cell is one box
covering several grid rows or columns) and the page's text (``Table.textpage``). What this module writes:

- **Grid and spans from the cell geometry.** The grid lines are the distinct cell edges (x and y separately; edges
  closer than `EDGE_TOLERANCE_PT` are one line). A cell spanning grid columns c0..c1 and rows r0..r1 gets
  ``colspan = c1 - c0`` and ``rowspan = r1 - r0`` (written only when > 1). A grid position no cell covers becomes an
  empty ``<td></td>`` so every row keeps the grid's width. Cells are placed smallest first: a box overlapping an
  already placed (smaller) cell, typically a frame PyMuPDF also reports around a group of cells, is left out, as is
  a degenerate box (zero width or height on the grid); both are counted in a warning.
- **Markup.** ``<table><tbody><tr><td>...</td></tr>...</tbody></table>``: every cell is ``td`` (PyMuPDF's header
  guess is not used, so no ``thead``/``th``), rows inside one ``tbody`` (as a browser's DOM has them).
- **Cell text.** From the characters of ``Table.textpage`` (MuPDF's structured text, with its own inter-word
  spaces; the table finder creates it with ``pymupdf.table.FLAGS``): a character belongs to the cell containing the
  centre of its box. Within a cell the characters of each MuPDF line form a fragment; fragments whose vertical
  centres lie within half a fragment height of each other form one visual line, ordered left to right and joined
  with a space; each fragment's outer white space is stripped; visual lines are joined with ``"\\n"`` (empty ones
  dropped). The text is HTML-escaped (``<``, ``>``, ``&``).

Finder settings (`TableFinderSettings`) are passed to ``Page.find_tables`` and recorded in the parser settings.
``use_layout`` is off by default here although PyMuPDF's own default is on: with the optional ``pymupdf_layout``
package installed, layout analysis runs an ONNX model on every page (about 1 to 3 s per page on one core here) and
finds many borderless tables the line-based finder misses; without the package the option does nothing. Off, the
numbers do not depend on whether that package happens to be installed.

Reference: PyMuPDF documentation, ``Page.find_tables`` and ``Table`` (https://pymupdf.readthedocs.io/en/latest/
page.html#Page.find_tables); behaviour checked on PyMuPDF 2.0.
"""

from __future__ import annotations

import importlib.metadata
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from html import escape
from typing import Any

#: ``strategy`` values of ``Page.find_tables`` accepted here.
TABLE_STRATEGIES = ("lines", "lines_strict", "text")
#: Cell edges closer than this (PDF points) are the same grid line.
EDGE_TOLERANCE_PT = 1.0


@dataclass(frozen=True)
class TableFinderSettings:
    """Options of ``Page.find_tables`` used by the pymupdf parser.

    Attributes:
        strategy: ``"lines"`` (PyMuPDF's default: vector lines and rectangle borders), ``"lines_strict"`` (lines
            only, no rectangle fills) or ``"text"`` (word alignment).
        use_layout: PyMuPDF's ``use_layout``: gate and complete the line-based candidates with the ``pymupdf_layout``
            analyzer when that package is installed (see the module docstring).
        refine: PyMuPDF's ``refine``: split rows and columns the line grid merged, using the page text (the refined
            cell boxes are used; PyMuPDF's header tags are not).

    Raises:
        ValueError: an unknown strategy, or a non-boolean flag.
    """

    strategy: str = "lines"
    use_layout: bool = False
    refine: bool = False

    def __post_init__(self) -> None:
        if self.strategy not in TABLE_STRATEGIES:
            raise ValueError(f"table_strategy must be one of {TABLE_STRATEGIES}, not {self.strategy!r}")
        for name in ("use_layout", "refine"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"table_{name.replace('use_', '')} must be true or false, "
                                 f"not {getattr(self, name)!r}")

    def describe(self) -> dict[str, Any]:
        """JSON-serialisable record for the parser settings (finder call, layout package, conventions)."""
        out: dict[str, Any] = {
            "finder": "pymupdf Page.find_tables",
            "strategy": self.strategy,
            "use_layout": self.use_layout,
            "refine": self.refine,
            "edge_tolerance_pt": EDGE_TOLERANCE_PT,
            "html": "<table><tbody>, every cell td, spans from the cell geometry, holes as empty td",
            "cell_text": "Table.textpage characters by box centre; MuPDF lines -> visual lines joined by \\n",
        }
        if self.use_layout:
            out["layout_analyzer"] = layout_analyzer() or "not installed (line-based finder only)"
        try:
            import pymupdf
            import pymupdf.table

            from ingestaudit.parsers.pymupdf_flags import flag_names

            out["cell_text_flags"] = flag_names(int(pymupdf.table.FLAGS), pymupdf)
        except (ImportError, AttributeError, TypeError, ValueError):
            out["cell_text_flags"] = "unknown (pymupdf.table.FLAGS not found)"
        return out


def layout_analyzer() -> str | None:
    """``"pymupdf_layout <version>"`` when the optional layout package is installed, else None."""
    for dist in ("pymupdf_layout", "pymupdf-layout"):
        try:
            return f"pymupdf_layout {importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@dataclass(frozen=True)
class GridCell:
    """One cell placed on the table grid: top-left slot ``(row, col)``, spans >= 1, and its box in points."""

    row: int
    col: int
    rowspan: int
    colspan: int
    bbox: tuple[float, float, float, float]


@dataclass(frozen=True)
class Grid:
    """Cells on a grid of ``n_rows`` x ``n_cols`` slots; ``xs``/``ys`` are the grid lines (points, ascending);
    ``dropped`` counts degenerate or overlapping cells left out."""

    cells: tuple[GridCell, ...]
    n_rows: int
    n_cols: int
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    dropped: int = 0


def _grid_lines(values: list[float], tol: float) -> list[float]:
    """Sorted values merged into lines: a value within ``tol`` of the current line's first value joins it; each
    line is the mean of its values."""
    lines: list[list[float]] = []
    for v in sorted(values):
        if lines and v - lines[-1][0] < tol:
            lines[-1].append(v)
        else:
            lines.append([v])
    return [sum(g) / len(g) for g in lines]


def _nearest(lines: list[float], v: float) -> int:
    i = bisect_left(lines, v)
    if i == 0:
        return 0
    if i == len(lines):
        return len(lines) - 1
    return i if lines[i] - v < v - lines[i - 1] else i - 1


def _place(boxes: list[tuple[float, float, float, float]], tol: float) -> tuple[Grid, list[int]]:
    """One placement pass: the grid lines of ``boxes``, the boxes placed smallest first, and the indices of the
    boxes left out (degenerate or overlapping)."""
    xs = _grid_lines([v for b in boxes for v in (b[0], b[2])], tol)
    ys = _grid_lines([v for b in boxes for v in (b[1], b[3])], tol)
    taken: set[tuple[int, int]] = set()
    placed: list[GridCell] = []
    left_out: list[int] = []
    # smallest first: a box that contains other cells (a frame drawn around a group of cells) loses to them
    for i in sorted(range(len(boxes)), key=lambda i: (boxes[i][2] - boxes[i][0]) * (boxes[i][3] - boxes[i][1])):
        b = boxes[i]
        c0, c1 = _nearest(xs, b[0]), _nearest(xs, b[2])
        r0, r1 = _nearest(ys, b[1]), _nearest(ys, b[3])
        slots = {(r, c) for r in range(r0, r1) for c in range(c0, c1)}
        if not slots or slots & taken:
            left_out.append(i)
            continue
        taken |= slots
        placed.append(GridCell(r0, c0, r1 - r0, c1 - c0, b))
    placed.sort(key=lambda g: (g.row, g.col))
    return Grid(tuple(placed), len(ys) - 1, len(xs) - 1, tuple(xs), tuple(ys)), left_out


def cells_to_grid(boxes: list[tuple[float, float, float, float]], tol: float = EDGE_TOLERANCE_PT) -> Grid:
    """Place cell boxes on the grid formed by their edges (see the module docstring).

    When boxes are left out (degenerate or overlapping a smaller cell), the grid lines are computed again from the
    boxes kept, so a left-out box adds no grid line, and the kept boxes are placed again.

    Args:
        boxes: ``(x0, y0, x1, y1)`` per cell, in points; None entries are ignored.
        tol: edges closer than this are one grid line.

    Returns:
        The `Grid`; cells in reading order (row, then column). Empty input gives a 0 x 0 grid.

    Worked example: boxes (0,0,20,10) and (0,10,10,20), (10,10,20,20) -> xs (0,10,20), ys (0,10,20), the first
    cell at (0,0) with colspan 2, the others at (1,0) and (1,1).
    """
    clean = [tuple(float(v) for v in b) for b in boxes if b is not None]
    if not clean:
        return Grid((), 0, 0, (), ())
    grid, left_out = _place(clean, tol)  # type: ignore[arg-type]
    if not left_out:
        return grid
    out = set(left_out)
    kept = [b for i, b in enumerate(clean) if i not in out]
    grid, again = _place(kept, tol)  # type: ignore[arg-type]
    return Grid(grid.cells, grid.n_rows, grid.n_cols, grid.xs, grid.ys, dropped=len(left_out) + len(again))


def grid_html(grid: Grid, texts: list[str]) -> str:
    """The grid as an HTML table (see the module docstring); ``texts[i]`` is the text of ``grid.cells[i]``.

    Raises:
        ValueError: ``texts`` and ``grid.cells`` differ in length.
    """
    if len(texts) != len(grid.cells):
        raise ValueError(f"{len(texts)} texts for {len(grid.cells)} cells")
    start = {(g.row, g.col): (g, t) for g, t in zip(grid.cells, texts)}
    covered = {(r, c) for g in grid.cells for r in range(g.row, g.row + g.rowspan)
               for c in range(g.col, g.col + g.colspan)}
    rows = []
    for r in range(grid.n_rows):
        parts = []
        for c in range(grid.n_cols):
            if (r, c) in start:
                g, text = start[r, c]
                attrs = (f' colspan="{g.colspan}"' if g.colspan > 1 else "") + \
                        (f' rowspan="{g.rowspan}"' if g.rowspan > 1 else "")
                parts.append(f"<td{attrs}>{escape(text, quote=False)}</td>")
            elif (r, c) not in covered:
                parts.append("<td></td>")
        rows.append("<tr>" + "".join(parts) + "</tr>")
    return "<table><tbody>" + "".join(rows) + "</tbody></table>"


def _fragments(raw: dict[str, Any]) -> list[list[tuple[str, tuple[float, float, float, float]]]]:
    """Per MuPDF text line of a ``extractRAWDICT()`` result: its characters with their boxes, in MuPDF order."""
    out = []
    for block in raw.get("blocks", ()):
        if block.get("type", 0) != 0:
            continue
        for line in block.get("lines", ()):
            chars = [(ch["c"], tuple(ch["bbox"])) for span in line.get("spans", ()) for ch in span.get("chars", ())]
            if chars:
                out.append(chars)
    return out


def cell_texts(grid: Grid, lines: list[list[tuple[str, tuple[float, float, float, float]]]]) -> list[str]:
    """The text of every grid cell from the page's characters (rules in the module docstring).

    Args:
        grid: from `cells_to_grid`.
        lines: MuPDF text lines, each a list of ``(character, (x0, y0, x1, y1))`` in points.

    Returns:
        One string per ``grid.cells`` entry.
    """
    owner: dict[tuple[int, int], int] = {}
    for i, g in enumerate(grid.cells):
        for r in range(g.row, g.row + g.rowspan):
            for c in range(g.col, g.col + g.colspan):
                owner[r, c] = i
    # per cell: fragments as [text, x0, y0, x1, y1]
    frags: list[list[list[Any]]] = [[] for _ in grid.cells]
    xs, ys = grid.xs, grid.ys
    for line in lines:
        current: dict[int, list[Any]] = {}
        for ch, (x0, y0, x1, y1) in line:
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            if not (xs and xs[0] <= cx < xs[-1] and ys[0] <= cy < ys[-1]):
                continue
            i = owner.get((bisect_right(ys, cy) - 1, bisect_right(xs, cx) - 1))
            if i is None:
                continue
            f = current.get(i)
            if f is None:
                f = current[i] = [ch, x0, y0, x1, y1]
                frags[i].append(f)
            else:
                f[0] += ch
                f[1], f[2], f[3], f[4] = min(f[1], x0), min(f[2], y0), max(f[3], x1), max(f[4], y1)
    texts = []
    for cell in frags:
        visual: list[list[list[Any]]] = []
        for f in sorted((f for f in cell if f[0].strip()), key=lambda f: ((f[2] + f[4]) / 2, f[1])):
            centre = (f[2] + f[4]) / 2
            if visual:
                head = visual[-1][0]
                if abs(centre - (head[2] + head[4]) / 2) <= (head[4] - head[2]) / 2:
                    visual[-1].append(f)
                    continue
            visual.append([f])
        texts.append("\n".join(" ".join(f[0].strip() for f in sorted(v, key=lambda f: f[1])) for v in visual))
    return texts


def finder_kwargs(page: Any, settings: TableFinderSettings) -> dict[str, Any]:
    """Keyword arguments for ``page.find_tables``: ``strategy``, and ``use_layout`` / ``refine`` where the installed
    PyMuPDF has them (both appeared after 1.24; without them the finder behaves as with both off).

    Raises:
        RuntimeError: ``use_layout`` or ``refine`` is on and the installed PyMuPDF lacks it.
    """
    import inspect

    import pymupdf.table

    # Page.find_tables(**kwargs) forwards to pymupdf.table.find_tables, whose signature lists the options
    params = inspect.signature(pymupdf.table.find_tables).parameters
    kwargs: dict[str, Any] = {"strategy": settings.strategy}
    for name, value in (("use_layout", settings.use_layout), ("refine", settings.refine)):
        if name in params:
            kwargs[name] = value
        elif value:
            raise RuntimeError(f"this PyMuPDF's find_tables has no {name!r} (table_{name.replace('use_', '')} "
                               "needs a newer PyMuPDF)")
    return kwargs


def page_tables(page: Any, settings: TableFinderSettings) -> tuple[list[str], list[str]]:
    """Find the tables of one PyMuPDF page and write each as HTML.

    Returns:
        ``(tables, warnings)``: HTML strings in PyMuPDF's order, and problems worth reporting (cells left out).

    Raises:
        RuntimeError: the table finder failed on this page (PyMuPDF returns None after printing its exception).
    """
    import pymupdf

    quiet = getattr(pymupdf, "no_recommend_layout", None)
    if quiet is not None:  # PyMuPDF prints an advertisement for pymupdf_layout to stdout on first use otherwise
        quiet()
    finder = page.find_tables(**finder_kwargs(page, settings))
    if finder is None:
        raise RuntimeError("pymupdf find_tables failed (it printed the exception)")
    tables: list[str] = []
    warnings: list[str] = []
    lines_of: dict[int, list] = {}
    for k, table in enumerate(finder.tables):
        grid = cells_to_grid(list(table.cells))
        if grid.dropped:
            warnings.append(f"table {k}: {grid.dropped} degenerate or overlapping cell(s) left out of the grid")
        tp = table.textpage
        if id(tp) not in lines_of:
            lines_of[id(tp)] = _fragments(tp.extractRAWDICT()) if tp is not None else []
        tables.append(grid_html(grid, cell_texts(grid, lines_of[id(tp)])))
    return tables, warnings
