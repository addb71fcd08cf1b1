#!/usr/bin/env python3
"""The plots of docs/benchmarks.md, written as SVG by hand (no plotting library needed), and
the tables beside them.

    plot.py growth TSV SVG [PAGE]   benches/growth.sh's rows: time and anonymous memory against
                                    the input's size (log-log), one line per command, a dashed
                                    line for linear growth; with PAGE, also the table between
                                    its growth-table markers
    plot.py speed TABLE SVG         benches/speed.sh's markdown table: each ratio as a bar
                                    beside its target (log scale)
    plot.py page PAGE NAME FILE     FILE's text between PAGE's NAME-table markers
                                    (`<!-- NAME table: benches/NAME.sh -->` and
                                    `<!-- end of NAME table -->`)
"""

import csv
import math
import re
import sys
from html import escape

COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#7f7f7f", "#bcbd22"]
FONT = 'font-family="sans-serif" font-size="11"'


class Svg:
    """An SVG document built line by line."""

    def __init__(self, width, height):
        self.width, self.height = width, height
        self.parts = []

    def add(self, text):
        self.parts.append(text)

    def text(self, x, y, words, anchor="start", extra=""):
        self.add(f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" {FONT} {extra}>'
                 f"{escape(words)}</text>")

    def line(self, x1, y1, x2, y2, style):
        self.add(f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" {style}/>')

    def write(self, path):
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.width}" '
                f'height="{self.height}" viewBox="0 0 {self.width} {self.height}">\n'
                f'<rect width="100%" height="100%" fill="white"/>\n')
        with open(path, "w") as out:
            out.write(head + "\n".join(self.parts) + "\n</svg>\n")


def log_range(values):
    """Powers of ten around the positive values."""
    positive = [v for v in values if v > 0] or [1]
    low = math.floor(math.log10(min(positive)))
    high = math.ceil(math.log10(max(positive)))
    return 10.0 ** low, 10.0 ** max(high, low + 1)


def ticks(low, high):
    """(value, labelled) for 1, 2 and 5 times each power of ten between low and high: the
    powers of ten are labelled, and the 2s and 5s too over two decades or fewer."""
    out, power = [], low
    few = high / low <= 100.0001
    while power <= high * 1.0001:
        out += [(power * m, m == 1 or few) for m in (1, 2, 5) if power * m <= high * 1.0001]
        power *= 10
    return out


def short(value):
    """A tick label: 0.01, 2, 500, 10k, 1M."""
    if value >= 1e6:
        return f"{value / 1e6:g}M"
    if value >= 1e3:
        return f"{value / 1e3:g}k"
    return f"{value:g}"


class Panel:
    """A log-log plotting area inside an Svg."""

    def __init__(self, svg, box, xs, ys, title, xlabel, ylabel):
        self.svg, (self.x, self.y, self.w, self.h) = svg, box
        self.xr, self.yr = log_range(xs), log_range(ys)
        svg.text(self.x + self.w / 2, self.y - 8, title, "middle", 'font-weight="bold"')
        svg.add(f'<rect x="{self.x}" y="{self.y}" width="{self.w}" height="{self.h}" '
                'fill="none" stroke="#444"/>')
        for value, labelled in ticks(*self.xr):
            px = self.px(value)
            svg.line(px, self.y, px, self.y + self.h, 'stroke="#e4e4e4"')
            if labelled:
                svg.text(px, self.y + self.h + 14, short(value), "middle")
        for value, labelled in ticks(*self.yr):
            py = self.py(value)
            svg.line(self.x, py, self.x + self.w, py, 'stroke="#e4e4e4"')
            if labelled:
                svg.text(self.x - 4, py + 4, short(value), "end")
        svg.text(self.x + self.w / 2, self.y + self.h + 30, xlabel, "middle")
        svg.text(self.x - 38, self.y + self.h / 2, ylabel, "middle",
                 f'transform="rotate(-90 {self.x - 38:.1f} {self.y + self.h / 2:.1f})"')

    def px(self, value):
        low, high = self.xr
        return self.x + self.w * math.log(value / low) / math.log(high / low)

    def py(self, value):
        low, high = self.yr
        return self.y + self.h - self.h * math.log(value / low) / math.log(high / low)

    def polyline(self, points, colour, dashed=False):
        points = [(x, y) for x, y in points if x > 0 and y > 0]
        coords = " ".join(f"{self.px(x):.1f},{self.py(y):.1f}" for x, y in points)
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        self.svg.add(f'<polyline points="{coords}" fill="none" stroke="{colour}" '
                     f'stroke-width="1.6"{dash}/>')
        if not dashed:
            for x, y in points:
                self.svg.add(f'<circle cx="{self.px(x):.1f}" cy="{self.py(y):.1f}" r="2.5" '
                             f'fill="{colour}"/>')


# Anonymous peaks under this (a run too short to be sampled, or a few pages) are drawn here.
FLOOR_MIB = 1.0


def growth_panels(svg, top, rows, input_name, xlabel):
    """The time and memory panels of one kind of input, side by side; returns the commands."""
    rows = [r for r in rows if r["input"] == input_name]
    commands = list(dict.fromkeys(r["command"] for r in rows))
    xs = [float(r["step"]) for r in rows]
    series = {c: [(float(r["step"]), float(r["seconds"]), max(float(r["anonymous_mib"]),
                                                             FLOOR_MIB))
                  for r in rows if r["command"] == c] for c in commands}
    first, last = min(xs), max(xs)
    # The dashed line: linear growth from the median first-step time (and from the largest
    # first-step memory), so that a command's line bending above it grows faster than its input.
    times0 = sorted(s[0][1] for s in series.values() if s)
    t0 = times0[len(times0) // 2]
    m0 = max(s[0][2] for s in series.values() if s)
    times = [p[1] for s in series.values() for p in s] + [t0, t0 * last / first]
    mems = [p[2] for s in series.values() for p in s] + [m0, m0 * last / first]
    kind = "programs" if input_name == "program" else "trees"
    time = Panel(svg, (70, top, 380, 260), xs, times, f"Time, synthetic {kind}", xlabel,
                 "seconds")
    memory = Panel(svg, (540, top, 380, 260), xs, mems,
                   f"Anonymous peak, synthetic {kind}", xlabel, "MiB")
    for i, command in enumerate(commands):
        colour = COLOURS[i % len(COLOURS)]
        time.polyline([(x, t) for x, t, _ in series[command]], colour)
        memory.polyline([(x, m) for x, _, m in series[command]], colour)
    time.polyline([(first, t0), (last, t0 * last / first)], "#000", dashed=True)
    memory.polyline([(first, m0), (last, m0 * last / first)], "#000", dashed=True)
    # The legend, right of the memory panel.
    for i, name in enumerate(commands + ["linear"]):
        y = top + 10 + 16 * i
        colour = "#000" if name == "linear" else COLOURS[i % len(COLOURS)]
        dash = ' stroke-dasharray="6 4"' if name == "linear" else ""
        svg.add(f'<line x1="935" y1="{y}" x2="960" y2="{y}" stroke="{colour}" '
                f'stroke-width="1.6"{dash}/>')
        svg.text(966, y + 4, name)
    return commands


def growth_table(rows, input_name, unit):
    """A markdown table: one row per command, one column per step, then how it grew."""
    rows = [r for r in rows if r["input"] == input_name]
    steps = list(dict.fromkeys(r["step"] for r in rows))
    commands = list(dict.fromkeys(r["command"] for r in rows))
    cell = {(r["command"], r["step"]): r for r in rows}
    head = ["command"] + [f"{s} {unit}" for s in steps] + ["time, last / first",
                                                            "time, last / the step before",
                                                            "anonymous, first → last"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for command in commands:
        cells = []
        for step in steps:
            r = cell.get((command, step))
            cells.append(f"{float(r['seconds']):.2f} s, {r['anonymous_mib']} / "
                         f"{r['resident_mib']} MiB" if r else "")
        ends = [cell[(command, s)] for s in steps if (command, s) in cell]
        def grew(a, b, digits):
            """How much the time grew from run a to run b, beside how much the input did."""
            if float(a["seconds"]) <= 0:
                return ""
            ratio = float(b["seconds"]) / float(a["seconds"])
            size = float(b["step"]) / float(a["step"])
            return f"{ratio:.{digits}f}x (input {size:.{digits}f}x)"

        whole = grew(ends[0], ends[-1], 0) if len(ends) > 1 else ""
        last = grew(ends[-2], ends[-1], 2) if len(ends) > 1 else ""
        memory = (f"{ends[0]['anonymous_mib']} → {ends[-1]['anonymous_mib']} MiB"
                  if ends else "")
        lines.append("| " + " | ".join([command] + cells + [whole, last, memory]) + " |")
    return "\n".join(lines) + "\n"


def growth(tsv, out, page=None):
    with open(tsv) as f:
        # A run that failed has no figures (growth.sh printed why): it is left out.
        rows = [r for r in csv.DictReader(f, delimiter="\t") if r["seconds"]]
    inputs = [(name, label, unit) for name, label, unit in
              [("program", "size of the program (MB)", "MB"),
               ("tree", "files in the tree", "files")]
              if any(r["input"] == name for r in rows)]
    svg = Svg(1080, 40 + 330 * len(inputs))
    for i, (name, label, _) in enumerate(inputs):
        growth_panels(svg, 30 + 330 * i, rows, name, label)
    svg.write(out)
    if page:
        tables = "\n".join(growth_table(rows, name, unit) for name, _, unit in inputs)
        replace_table(page, "growth", tables)


def replace_table(page, name, text):
    """Replaces what lies between the markers of the table `name` in the file page."""
    start, end = f"<!-- {name} table: benches/{name}.sh -->\n", f"<!-- end of {name} table -->"
    whole = open(page).read()
    head, rest = whole.split(start, 1)
    _, tail = rest.split(end, 1)
    with open(page, "w") as f:
        f.write(head + start + text + end + tail)


def leading_number(text):
    """The first number of a cell ("1.5x, anonymous under 128 MiB" gives 1.5), or None."""
    found = re.search(r"(\d+(?:\.\d+)?)x", text)
    return float(found.group(1)) if found else None


def speed(table, out):
    rows = []
    for line in open(table):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 6 or cells[0] in ("work", "---"):
            continue
        ratio, target = leading_number(cells[4]), leading_number(cells[5])
        if ratio is not None:
            rows.append((cells[0], ratio, target))
    bar, left, width = 22, 330, 520
    svg = Svg(left + width + 40, 70 + bar * len(rows))
    values = [r[1] for r in rows] + [r[2] for r in rows if r[2]]
    low, high = 0.1, 10.0
    while min(values, default=1) < low:
        low /= 10
    while max(values, default=1) > high:
        high *= 10

    def px(value):
        return left + width * math.log(value / low) / math.log(high / low)

    top = 30
    svg.text(left + width / 2, 16, "offload's time over the reference's (log scale): bar, "
             "the ratio; black tick, the target", "middle", 'font-weight="bold"')
    for value, labelled in ticks(low, high):
        svg.line(px(value), top, px(value), top + bar * len(rows),
                 'stroke="#222"' if value == 1 else 'stroke="#e4e4e4"')
        if labelled:
            svg.text(px(value), top + bar * len(rows) + 14, f"{short(value)}x", "middle")
    for i, (work, ratio, target) in enumerate(rows):
        y = top + bar * i
        met = target is None or ratio <= target
        colour = "#2ca02c" if met else "#d62728"
        start = px(min(ratio, 1.0))
        svg.add(f'<rect x="{start:.1f}" y="{y + 4}" width="{abs(px(ratio) - px(1.0)):.1f}" '
                f'height="{bar - 8}" fill="{colour}"/>')
        svg.text(left - 6, y + bar / 2 + 4, work, "end")
        svg.text(px(max(ratio, 1.0, target or 0)) + 5, y + bar / 2 + 4, f"{ratio:.2f}x")
        if target:
            svg.line(px(target), y + 1, px(target), y + bar - 1,
                     'stroke="#000" stroke-width="2.5"')
    svg.write(out)


def main(args):
    if len(args) >= 3 and args[0] == "growth":
        growth(*args[1:4])
    elif len(args) == 3 and args[0] == "speed":
        speed(args[1], args[2])
    elif len(args) == 4 and args[0] == "page":
        with open(args[3]) as f:
            replace_table(args[1], args[2], f.read())
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
