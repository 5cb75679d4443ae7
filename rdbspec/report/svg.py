"""Inline SVG charts for the report page: horizontal bars and a squarified treemap (Bruls,
Huizing, van Wijk, "Squarified Treemaps", 2000). Every chart is drawn in a viewBox `WIDTH` wide
and scaled to its container's width, so the page never scrolls sideways; each mark carries the
data attributes and the <title> the caller gives it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

WIDTH = 1160
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")

Rect = tuple[float, float, float, float]  # x, y, width, height


@dataclass
class Mark:
    """One bar or tile: its label, its size, the text shown beside it, its tooltip and attributes."""

    label: str
    value: float
    shown: str
    title: str
    attrs: dict[str, str | int] = field(default_factory=dict)
    children: list[Mark] = field(default_factory=list)


def attributes(attrs: dict[str, str | int]) -> str:
    return "".join(f' {name}="{escape(str(value), quote=True)}"' for name, value in attrs.items())


def color(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _svg(height: float, body: str, label: str) -> str:
    return (f'<svg role="img" aria-label="{escape(label, quote=True)}" viewBox="0 0 {WIDTH} {height:.0f}" '
            f'width="{WIDTH}" height="{height:.0f}" preserveAspectRatio="xMinYMin meet" '
            f'style="width:100%;height:auto;max-width:{WIDTH}px">{body}</svg>')


def bars(marks: Sequence[Mark], label: str, row: int = 26) -> str:
    """One horizontal bar a mark, the longest filling the space between the labels and values."""
    label_width, value_width = 220, 170
    span = WIDTH - label_width - value_width - 10
    largest = max((m.value for m in marks), default=0) or 1
    parts = []
    for i, mark in enumerate(marks):
        y = i * row
        width = max(mark.value / largest * span, 1 if mark.value else 0)
        parts.append(
            f'<g{attributes(mark.attrs)}><title>{escape(mark.title)}</title>'
            f'<text x="{label_width - 8}" y="{y + row * 0.65:.1f}" text-anchor="end" class="label">'
            f'{escape(_clip(mark.label, 30))}</text>'
            f'<rect x="{label_width}" y="{y + 3}" width="{width:.1f}" height="{row - 6}" fill="{color(i)}" rx="2"/>'
            f'<text x="{label_width + width + 6:.1f}" y="{y + row * 0.65:.1f}" class="value">'
            f'{escape(mark.shown)}</text>'
            f'</g>')
    return _svg(max(len(marks), 1) * row, "".join(parts), label)


def _clip(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[:max(chars - 1, 0)] + "…"


def _worst(row: list[float], side: float) -> float:
    total = sum(row)
    return max(max(side * side * a / (total * total), total * total / (side * side * a)) for a in row)


def squarify(values: Sequence[float], rect: Rect) -> list[Rect]:
    """Tiles for `values` (largest first, all positive) filling `rect`, as square as the order allows."""
    x, y, w, h = rect
    total = sum(values)
    if total <= 0 or w <= 0 or h <= 0:
        return [(x, y, 0.0, 0.0) for _ in values]
    areas = [v * w * h / total for v in values]
    tiles: list[Rect] = []
    i = 0
    while i < len(areas):
        side = min(w, h)
        row = [areas[i]]
        i += 1
        while i < len(areas) and _worst(row + [areas[i]], side) <= _worst(row, side):
            row.append(areas[i])
            i += 1
        thickness = sum(row) / (h if w >= h else w)
        offset = 0.0
        for area in row:
            length = area / thickness
            tiles.append((x, y + offset, thickness, length) if w >= h else (x + offset, y, length, thickness))
            offset += length
        if w >= h:
            x, w = x + thickness, w - thickness
        else:
            y, h = y + thickness, h - thickness
    return tiles


def treemap(marks: Sequence[Mark], label: str, height: int = 460, header: int = 18) -> str:
    """Nested tiles: each mark's children inside it, below a header strip with its label."""
    parts: list[str] = []

    def draw(group: Sequence[Mark], rect: Rect, level: int, hue: int | None) -> None:
        group = [m for m in group if m.value > 0]
        for i, (mark, (x, y, w, h)) in enumerate(zip(group, squarify([m.value for m in group], rect))):
            tone = i if hue is None else hue
            opacity = 1.0 if level == 0 else max(0.35, 0.8 - 0.2 * level)
            parts.append(f'<g{attributes(mark.attrs)}><title>{escape(mark.title)}</title>'
                         f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{color(tone)}" '
                         f'fill-opacity="{opacity}" stroke="#fff" stroke-width="{2 if level == 0 else 1}"/>')
            if w > 40 and h > 14:
                text = _clip(f"{mark.label} {mark.shown}", int(w / 7))
                parts.append(f'<text x="{x + 4:.1f}" y="{y + 13:.1f}" class="tile">{escape(text)}</text>')
            parts.append("</g>")
            if mark.children and w > 30 and h > header + 12:
                draw(mark.children, (x + 2, y + header, w - 4, h - header - 2), level + 1, tone)

    draw(marks, (0, 0, WIDTH, height), 0, None)
    return _svg(height, "".join(parts), label)
