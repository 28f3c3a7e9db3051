"""Charts as inline SVG, drawn here on the server: stacked bars and lines over the buckets
of a window. No JavaScript and no file from elsewhere: the page works without internet
and without scripts, and the exact numbers are in the tables under each chart. Each bar
and point carries a <title> (the browser's tooltip) with its value.
"""
import math

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

HEIGHT = 220
WIDE, NARROW = 1200, 600  # viewBox widths: a chart across the page, or in half of it
LEFT, RIGHT, TOP, BOTTOM = 48, 12, 10, 26
X_LABELS = 8  # at most this many bucket labels under the axis


def nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten at least `value` (1 for 0)."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 2.5, 5, 10) if step * power >= value)


def short(value: float) -> str:
    """A tick label: 950, 1.5k, 2M."""
    for size, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= size:
            return f"{value / size:g}{suffix}"
    return f"{value:g}"


def _frame(labels: list[str], top: float, width: int) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = []
    for i in range(5):
        y = TOP + plot_h - plot_h * i / 4
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{y:.1f}" '
                     f'y2="{y:.1f}"/><text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" '
                     f'text-anchor="end">{escape(short(top * i / 4))}</text>')
    every = max(1, math.ceil(len(labels) / (X_LABELS * width // NARROW)))
    for i, label in enumerate(labels):
        if i % every == 0:
            x = LEFT + _slot(len(labels), width) * (i + 0.5)
            parts.append(f'<text class="tick" x="{x:.1f}" y="{HEIGHT - 8}" '
                         f'text-anchor="middle">{escape(label)}</text>')
    return parts


def _slot(count: int, width: int) -> float:
    return (width - LEFT - RIGHT) / max(count, 1)


def _svg(name: str, parts: list[str], width: int) -> SafeString:
    return mark_safe(f'<svg class="chart" viewBox="0 0 {width} {HEIGHT}" role="img" '
                     f'aria-label="{escape(name)}" xmlns="http://www.w3.org/2000/svg">'
                     + "".join(parts) + "</svg>")


def stacked_bars(name: str, labels: list[str], series: list[tuple[str, str, list]],
                 width: int = WIDE) -> SafeString:
    """Bars per bucket, `series` (name, css class, values) stacked bottom up."""
    totals = [sum(values[i] for _, _, values in series) for i in range(len(labels))]
    top = nice_ceiling(max(totals, default=0))
    plot_h, slot = HEIGHT - TOP - BOTTOM, _slot(len(labels), width)
    parts = _frame(labels, top, width)
    for i, label in enumerate(labels):
        base = 0
        for series_name, css, values in series:
            if values[i]:
                y0, y1 = (TOP + plot_h * (1 - (base + values[i]) / top),
                          TOP + plot_h * (1 - base / top))
                parts.append(f'<rect class="{css}" x="{LEFT + slot * i + slot * 0.1:.1f}" '
                             f'y="{y0:.1f}" width="{slot * 0.8:.1f}" height="{y1 - y0:.1f}">'
                             f'<title>{escape(label)}: {values[i]:,} {escape(series_name)}'
                             f'</title></rect>')
                base += values[i]
    return _svg(name, parts, width)


def lines(name: str, labels: list[str], series: list[tuple[str, str, list]],
          unit: str = "", width: int = NARROW) -> SafeString:
    """A line per series (name, css class, values; None: no value, a gap in the line)."""
    values = [v for _, _, vs in series for v in vs if v is not None]
    top = nice_ceiling(max(values, default=0))
    plot_h, slot = HEIGHT - TOP - BOTTOM, _slot(len(labels), width)
    parts = _frame(labels, top, width)
    for series_name, css, series_values in series:
        points, path = [], []
        for i, value in enumerate(series_values):
            if value is None:
                path.append(None)
                continue
            x, y = LEFT + slot * (i + 0.5), TOP + plot_h * (1 - value / top)
            path.append((x, y))
            points.append(f'<circle class="{css}" cx="{x:.1f}" cy="{y:.1f}" r="2.5"><title>'
                          f'{escape(labels[i])}: {value:,g}{escape(unit)} {escape(series_name)}'
                          f'</title></circle>')
        commands, pen_down = [], False
        for point in path:
            if point is None:
                pen_down = False
                continue
            commands.append(f'{"L" if pen_down else "M"}{point[0]:.1f},{point[1]:.1f}')
            pen_down = True
        if commands:
            parts.append(f'<path class="{css}" d="{" ".join(commands)}"/>')
        parts += points
    return _svg(name, parts, width)
