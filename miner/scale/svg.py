"""Small inline SVG charts (bars, stacked bars, histograms) for the HTML report: no library, no network."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence

PALETTE = ["#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6", "#9D755D",
           "#BAB0AC"]
OUTCOME_COLORS = {"passed": "#54A24B", "ok": "#54A24B", "failed": "#E45756", "error": "#B279A2",
                  "timeout": "#F58518", "crashed": "#9D755D", "cuda_error": "#FF9DA6", "build_failed": "#EECA3B",
                  "skipped": "#BAB0AC", "not built": "#DDDDDD", "not validated": "#DDDDDD", "none": "#BAB0AC"}


def _esc(s: object) -> str:
    return html.escape(str(s), quote=True)


def _label_width(labels: Iterable[object]) -> int:
    """Room for the longest label (at most 28 characters are drawn) at about 7.5 px a character."""
    return max(60, int(7.5 * min(28, max((len(str(x)) for x in labels), default=0))) + 12)


def empty(title: str, why: str) -> str:
    return (f'<svg class="chart" role="img" aria-label="{_esc(title)}" width="460" height="60" '
            f'xmlns="http://www.w3.org/2000/svg">'
            f'<text x="10" y="35" fill="#777" font-size="13">{_esc(why)}</text></svg>')


def hbars(title: str, items: Sequence[tuple[str, float]], width: int = 460, color: str = PALETTE[0],
          fmt: str = "{:g}") -> str:
    """Horizontal bars, one per (label, value), in the given order."""
    if not items:
        return empty(title, "nothing recorded")
    row, label_w = 20, _label_width(k for k, _ in items)
    top = max(v for _, v in items) or 1
    bar_w = width - label_w - 60
    h = row * len(items) + 10
    out = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" width="{width}" height="{h}" '
           f'xmlns="http://www.w3.org/2000/svg" font-size="12">']
    for i, (k, v) in enumerate(items):
        y = 5 + i * row
        w = max(1.0, bar_w * v / top)
        label = str(k) if len(str(k)) <= 28 else str(k)[:27] + "…"
        out.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{_esc(label)}</text>'
                   f'<rect x="{label_w}" y="{y + 2}" width="{w:.1f}" height="{row - 6}" fill="{color}">'
                   f'<title>{_esc(k)}: {_esc(fmt.format(v))}</title></rect>'
                   f'<text x="{label_w + w + 4:.1f}" y="{y + 13}">{_esc(fmt.format(v))}</text>')
    out.append("</svg>")
    return "".join(out)


def stacked(title: str, rows: Sequence[tuple[str, dict[str, int]]], width: int = 460) -> str:
    """One horizontal 100% bar per row (e.g. build, validation), segments coloured by outcome, with a legend."""
    rows = [(k, d) for k, d in rows if sum(d.values())]
    if not rows:
        return empty(title, "nothing recorded")
    keys = list(dict.fromkeys(k for _, d in rows for k in sorted(d, key=lambda x: -d[x])))
    colors = {k: OUTCOME_COLORS.get(k, PALETTE[i % len(PALETTE)]) for i, k in enumerate(keys)}
    label_w, row = _label_width(k for k, _ in rows), 28
    bar_w = width - label_w - 10
    legend_rows = math.ceil(len(keys) / 4)
    h = row * len(rows) + 18 * legend_rows + 12
    out = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" width="{width}" height="{h}" '
           f'xmlns="http://www.w3.org/2000/svg" font-size="12">']
    for i, (name, d) in enumerate(rows):
        y, x, total = 5 + i * row, float(label_w), sum(d.values())
        out.append(f'<text x="{label_w - 6}" y="{y + 15}" text-anchor="end">{_esc(name)}</text>')
        for k in keys:
            if not d.get(k):
                continue
            w = bar_w * d[k] / total
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{row - 8}" fill="{colors[k]}">'
                       f'<title>{_esc(name)} {_esc(k)}: {d[k]} ({100 * d[k] / total:.0f} %)</title></rect>')
            if w > 24:
                out.append(f'<text x="{x + w / 2:.1f}" y="{y + 14}" text-anchor="middle" fill="#fff">{d[k]}</text>')
            x += w
    y0 = 8 + row * len(rows)
    for i, k in enumerate(keys):
        lx, ly = 10 + (i % 4) * (width // 4), y0 + 18 * (i // 4)
        out.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{colors[k]}"/>'
                   f'<text x="{lx + 14}" y="{ly + 9}">{_esc(k)}</text>')
    out.append("</svg>")
    return "".join(out)


def histogram(title: str, values: Sequence[float], bins: int = 12, width: int = 460, log2: bool = False,
              unit: str = "", color: str = PALETTE[0]) -> str:
    """Vertical bars of a value distribution; log2 bins for ratios such as speedups."""
    vals = [math.log2(v) for v in values if v > 0] if log2 else list(values)
    if not vals:
        return empty(title, "nothing measured")
    lo, hi = min(vals), max(vals)
    if hi == lo:
        hi = lo + 1
    step = (hi - lo) / bins
    counts = [0] * bins
    for v in vals:
        counts[min(bins - 1, int((v - lo) / step))] += 1
    h, base, left = 180, 150, 30
    bw = (width - left - 10) / bins
    top = max(counts)
    out = [f'<svg class="chart" role="img" aria-label="{_esc(title)}" width="{width}" height="{h}" '
           f'xmlns="http://www.w3.org/2000/svg" font-size="11">',
           f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="#999"/>']
    for i, c in enumerate(counts):
        a, b = lo + i * step, lo + (i + 1) * step
        if log2:
            a, b = 2 ** a, 2 ** b
        bh = (base - 15) * c / top
        x = left + i * bw
        out.append(f'<rect x="{x + 1:.1f}" y="{base - bh:.1f}" width="{bw - 2:.1f}" height="{bh:.1f}" '
                   f'fill="{color}"><title>{a:.3g}–{b:.3g}{unit}: {c}</title></rect>')
        if c:
            out.append(f'<text x="{x + bw / 2:.1f}" y="{base - bh - 3:.1f}" text-anchor="middle">{c}</text>')
    for i in (0, bins // 2, bins):
        v = lo + i * step
        out.append(f'<text x="{left + i * bw:.1f}" y="{base + 14}" text-anchor="middle">'
                   f'{(2 ** v if log2 else v):.3g}{_esc(unit)}</text>')
    out.append("</svg>")
    return "".join(out)
