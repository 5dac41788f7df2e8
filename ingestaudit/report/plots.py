"""Static plots of the HTML report, drawn with matplotlib as SVG text.

Deterministic: the object-oriented API only (no pyplot, no global backend), a fixed ``svg.hashsalt`` so element
ids do not change from run to run, no date or creator metadata, and text kept as text (``svg.fonttype = "none"``).
Every function returns the SVG document as a string, or ``""`` when there is nothing to draw: no value, or values
all equal (`constant`). Each plot is one figure laid out with fixed margins in inches and drawn once (no
``tight_layout`` nor ``bbox_inches="tight"``, which measure every artist in one more draw: issue 27). Labels come
from the report (pipeline and class names); matplotlib escapes them as XML text, and the page embeds each SVG as an
``<img>`` (a data: URI), where no script could run anyway.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

RC = {"svg.hashsalt": "ingestaudit", "svg.fonttype": "none", "font.size": 12, "axes.titlesize": 12,
      "axes.labelsize": 11, "xtick.labelsize": 10.5, "ytick.labelsize": 10.5, "legend.fontsize": 10.5,
      "figure.titlesize": 13, "font.family": "DejaVu Sans", "axes.spines.top": False, "axes.spines.right": False}
"""Fonts sized for reading at the page's width (an SVG scaled to fit a 1280-pixel window keeps them legible)."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h", "<")

OUTCOME_COLOURS = {"label_unmatched": "#67001f", "lost_in_parsing": "#b2182b", "lost_in_cleaning": "#d6604d",
                   "split_by_chunking": "#f4a582",
                   "excluded_by_enrichment": "#fee090", "excluded_by_filter": "#fddbc7", "missed_by_ranking": "#92c5de",
                   "missed_by_ann": "#4393c3",
                   "retrieved": "#1a9850"}
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
           "#17becf")


def _short(text: str, limit: int = 28) -> str:
    """``text`` cut to ``limit`` characters, its control characters shown as ``\\xNN`` (no font has a glyph for
    them)."""
    text = "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def constant(values: Iterable[float | None]) -> bool:
    """True when the finite numbers of ``values`` are all equal, or there are none: a plot of them shows nothing
    the tables do not (an empty or flat plot is not drawn, issue 27)."""
    return len({float(v) for v in values if v is not None and math.isfinite(v)}) <= 1


_GEOMETRY = re.compile(r'( (?:d|x|y|x1|x2|y1|y2|transform)=")([^"]*)(")')
"""An SVG attribute that holds coordinates (a path's ``d``, a text's ``transform``...); never text content, whose
numbers (tick labels, titles) are kept as written."""
_DECIMALS = re.compile(r"(\d\.\d{2})\d+")
"""A number with more than two decimals: matplotlib writes six; two (a hundredth of a point) are far below a
pixel, and cut the SVG's size by about a third."""


def _svg(fig: Any) -> str:
    """``fig`` as SVG text, drawn once (its layout is fixed when built: no ``tight_layout`` nor ``bbox_inches=
    "tight"``, each of which draws the figure once more to measure it), coordinates rounded to two decimals."""
    import matplotlib

    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    return _GEOMETRY.sub(lambda m: m.group(1) + _DECIMALS.sub(r"\1", m.group(2)) + m.group(3), buf.getvalue())


def _figure(width: float, height: float) -> Any:
    import matplotlib
    from matplotlib.figure import Figure

    with matplotlib.rc_context(RC):
        return Figure(figsize=(width, height), dpi=96)


def _text_inches(texts: Iterable[str], size: float) -> float:
    """The width of the longest of ``texts`` at ``size`` points, in inches, from DejaVu Sans' widest common
    advance (0.62 em; an estimate that errs wide: nothing is measured, so the figure is drawn once)."""
    return max((len(t) for t in texts), default=0) * 0.62 * size / 72


def _margins(fig: Any, *, left: float, right: float, bottom: float, top: float, **spacing: float) -> None:
    """Fix ``fig``'s axes area by margins in inches (``spacing``: ``wspace``/``hspace`` as fractions of an axes)."""
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height,
                        **spacing)


def interval_plot(title: str, panels: Sequence[tuple[str, str, list[tuple[str, float | None, float | None,
                                                                          float | None, bool]]]]) -> str:
    """Small multiples, one panel per key metric: each pipeline's value (dot) and interval (bar), the best one
    (significant) filled in black.

    Args:
        panels: ``(metric name, direction arrow, [(pipeline, value, low, high, best)])``.
    """
    import matplotlib

    panels = [p for p in panels if not constant(x for pt in p[2] for x in pt[1:4])]
    if not panels:
        return ""
    cols = min(2, len(panels))  # two per row: the figure is drawn near its own size beside the table
    rows = (len(panels) + cols - 1) // cols
    n_pipes = max(len(p[2]) for p in panels)
    # inches: pipeline labels, an axes, the x tick labels under a panel and the title over the next one
    label = max(0.5, _text_inches((_short(pt[0], 16) for p in panels for pt in p[2]), 10.5) + 0.15)
    axes_w, axes_h, gap_h, top = 2.1, 0.42 * n_pipes + 0.1, 0.75, 0.7
    width, height = cols * (label + axes_w) + 0.25, rows * axes_h + (rows - 1) * gap_h + top + 0.4
    with matplotlib.rc_context(RC):
        fig = _figure(width, height)
        _margins(fig, left=label, right=0.25, bottom=0.4, top=top, wspace=label / axes_w, hspace=gap_h / axes_h)
        for i, (name, arrow, points) in enumerate(panels):
            ax = fig.add_subplot(rows, cols, i + 1)
            labels = [_short(p[0], 16) for p in points]
            for y, (_, v, lo, hi, best) in enumerate(points):
                if v is None:
                    continue
                if lo is not None and hi is not None:
                    ax.plot([lo, hi], [y, y], color="#555555", linewidth=2, solid_capstyle="butt")
                ax.plot([v], [y], marker="o", markersize=6, color="black" if best else PALETTE[y % len(PALETTE)],
                        markeredgecolor="black")
            ax.set_yticks(range(len(points)), labels)
            ax.set_ylim(-0.6, len(points) - 0.4)
            ax.invert_yaxis()
            ax.set_title(f"{_short(name, 30)} {arrow}".strip(), loc="left")
            ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        fig.suptitle(_short(title, 70), x=0.05 / width, y=1 - 0.05 / height, ha="left", va="top")
        return _svg(fig)


def waterfall_plot(title: str, bars: Sequence[tuple[str, Sequence[tuple[str, float]]]]) -> str:
    """The loss waterfall as horizontal stacked bars: one bar per pipeline, one segment per outcome (chain order,
    shares summing to 1), the segment's percentage written inside when it is wide enough."""
    import matplotlib

    bars = [(pipe, shares) for pipe, shares in bars if any(share for _, share in shares)]
    if not bars:
        return ""
    names = [_short(b[0], 24) for b in bars]
    outcomes = list(dict.fromkeys(o for _, shares in bars for o, _ in shares))
    left = max(0.5, _text_inches(names, 10.5) + 0.15)  # inches: the pipelines' labels, the legend beside the axes
    legend = _text_inches(outcomes, 10.5) + 0.6
    axes_h = max(0.55 * len(bars) + 0.3, 0.25 * len(outcomes))
    with matplotlib.rc_context(RC):
        fig = _figure(left + 4.6 + legend, axes_h + 1.05)
        _margins(fig, left=left, right=legend, bottom=0.65, top=0.4)
        ax = fig.add_subplot(1, 1, 1)
        seen: set[str] = set()
        for y, (pipe, shares) in enumerate(bars):
            left = 0.0
            for outcome, share in shares:
                colour = OUTCOME_COLOURS.get(outcome, PALETTE[len(seen) % len(PALETTE)])
                ax.barh(y, share, left=left, color=colour, edgecolor="white", linewidth=0.5,
                        label=outcome if outcome not in seen else None)
                seen.add(outcome)
                if share >= 0.07:
                    ax.text(left + share / 2, y, f"{share * 100:.0f}%", ha="center", va="center", fontsize=10,
                            color="white" if outcome in ("lost_in_parsing", "retrieved", "missed_by_ann") else "black")
                left += share
        ax.set_yticks(range(len(bars)), names)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of evidence items")
        ax.set_title(_short(title, 70), loc="left")
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), ncol=1, frameon=False)
        return _svg(fig)


def curve_plot(title: str, xlabel: str, ylabel: str,
               series: Sequence[tuple[str, Sequence[tuple[Any, ...]]]],
               log_x: bool = False, xticks: Sequence[tuple[float, str]] = (),
               hline: tuple[float, str] | None = None, note: str = "", sort_x: bool = True,
               x_is_value: bool = False) -> str:
    """Lines with markers: ``series`` of ``(name, [(x, y, low, high[, label])])``, joined in x order (or in the
    given order when not ``sort_x``: a trade-off curve along a parameter); intervals as error bars when given, a
    point's ``label`` written under it; ``hline`` = ``(y, text)`` draws a dashed reference line (a target);
    ``note`` is a line of small text under the axes. Each series has its own colour and marker, so overlapping
    series stay visible; a log x axis is labelled in plain numbers. Not drawn (``""``) when every y value
    (and interval end) is the same, unless ``x_is_value`` (x is a measurement, e.g. queries per second, not a
    setting or a run's position) and the x values differ."""
    import matplotlib

    series = [(n, pts) for n, pts in series if pts]
    if constant(y for _, pts in series for p in pts for y in p[1:4]) and not (
            x_is_value and not constant(p[0] for _, pts in series for p in pts)):  # a flat line (or none)
        return ""
    import textwrap

    note_lines = textwrap.wrap(_short(note, 200), 90)  # about 6 inches at 9.5 points: inside the figure's width
    under = 0.65 + 0.2 * len(note_lines) + 0.1 * bool(note_lines)  # inches: x ticks and label, then the note
    with matplotlib.rc_context(RC):
        fig = _figure(7.2, 3.55 + under)
        _margins(fig, left=0.95, right=0.25, bottom=under, top=0.4)  # inches
        ax = fig.add_subplot(1, 1, 1)
        for i, (name, pts) in enumerate(series):
            pts = sorted(pts, key=lambda p: (p[0], p[1])) if sort_x else list(pts)
            xs, ys = [p[0] for p in pts], [p[1] for p in pts]
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(xs, ys, marker=MARKERS[i % len(MARKERS)], markersize=7, linewidth=1.6, color=colour,
                    alpha=0.85, label=_short(name, 30))
            lows = [p[2] for p in pts]
            if all(v is not None for v in lows):
                err = [[y - p[2] for y, p in zip(ys, pts)], [p[3] - y for y, p in zip(ys, pts)]]  # type: ignore[operator]
                ax.errorbar(xs, ys, yerr=err, fmt="none", ecolor=colour, elinewidth=1, capsize=2)
            for p in pts:
                if len(p) > 4 and p[4]:
                    ax.annotate(_short(str(p[4]), 12), (p[0], p[1]), textcoords="offset points",
                                xytext=(3, -15 - 11 * (i % 3)), fontsize=9, color=colour)
        if hline is not None:
            ax.axhline(hline[0], color="#b2182b", linestyle="--", linewidth=1.2)
            ax.annotate(hline[1], (0.0, hline[0]), xycoords=("axes fraction", "data"), textcoords="offset points",
                        xytext=(3, -13), fontsize=9.5, color="#b2182b")
        if log_x:
            import math

            from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

            ax.set_xscale("log")
            xs_all = [p[0] for _, pts in series for p in pts]
            decades = math.log10(max(xs_all) / min(xs_all)) if min(xs_all) > 0 else 0.0
            # plain numbers at 1-2-5 steps over more than a decade, at every digit within one: never crowded
            ax.xaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0) if decades > 1 else
                                                  tuple(float(d) for d in range(1, 10))))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if v >= 10 else f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
        if xticks:
            ax.set_xticks([t[0] for t in xticks], [_short(t[1], 14) for t in xticks])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(_short(title, 70), loc="left")
        ax.grid(color="#dddddd", linewidth=0.6)
        ax.margins(x=0.08, y=0.12)
        if len(series) > 1:
            ax.legend(frameon=False)
        if note:  # under the x label (about 32 points under the axes)
            ax.annotate("\n".join(note_lines), (0, 0), xycoords="axes fraction", textcoords="offset points",
                        xytext=(0, -40), fontsize=9.5, color="#555555", ha="left", va="top")
        return _svg(fig)


def data_uri(svg: str) -> str:
    """The SVG as a ``data:image/svg+xml;base64,...`` URI for an ``<img src>``."""
    import base64

    return "data:image/svg+xml;base64," + base64.b64encode(svg.encode("utf-8")).decode("ascii")
