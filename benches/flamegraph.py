#!/usr/bin/env python3
"""A small flame graph from `perf script` output (no inferno or FlameGraph
scripts on this machine): `perf script -i perf.data | benches/flamegraph.py
TITLE > out.svg`. Stacks are folded per sample (root first), frames whose
share is under 0.5 % are dropped; hover a box for its name and share. Also
prints the top self-time frames to stderr."""

import html
import re
import sys
from collections import Counter, defaultdict

MIN_SHARE = 0.005


def fold(lines):
    stacks, cur = Counter(), []
    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            if cur:
                stacks[tuple(reversed(cur))] += 1
            cur = []
            continue
        if line[0] not in " \t":
            continue  # the sample's header line
        m = re.match(r"\s+[0-9a-f]+\s+(.+?)\s+\((.*)\)$", line)
        if not m:
            continue
        name = re.sub(r"\+0x[0-9a-f]+$", "", m.group(1))
        name = re.sub(r"::h[0-9a-f]{16}$", "", name)
        if name == "[unknown]":
            name = "[" + m.group(2).rsplit("/", 1)[-1] + "]"
        cur.append(name)
    if cur:
        stacks[tuple(reversed(cur))] += 1
    return stacks


def tree(stacks):
    root = {"n": 0, "kids": defaultdict(lambda: None)}
    for stack, n in stacks.items():
        root["n"] += n
        node = root
        for f in stack:
            kid = node["kids"].get(f)
            if kid is None:
                kid = {"n": 0, "kids": {}}
                node["kids"][f] = kid
            kid["n"] += n
            node = kid
    return root


def svg(root, title, width=1200, row=16):
    total = max(root["n"], 1)
    boxes, depth_max = [], 0

    def walk(node, x, depth):
        nonlocal depth_max
        for name, kid in sorted(node["kids"].items(), key=lambda kv: -kv[1]["n"]):
            share = kid["n"] / total
            if share >= MIN_SHARE:
                boxes.append((x, depth, share, name))
                depth_max = max(depth_max, depth)
                walk(kid, x, depth + 1)
            x += share

    walk(root, 0.0, 0)
    height = (depth_max + 3) * row
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="monospace" '
           f'font-size="11"><text x="4" y="12">{html.escape(title)} ({total} samples)</text>']
    for x, depth, share, name in boxes:
        px, w = x * width, share * width
        y = height - (depth + 1) * row
        hue = 20 + (hash(name) % 40)
        label = html.escape(name)
        text = label[: int(w / 7)] if w > 21 else ""
        out.append(f'<g><title>{label} ({share * 100:.1f}%)</title><rect x="{px:.1f}" y="{y}" width="{w:.1f}" '
                   f'height="{row - 1}" fill="hsl({hue},80%,60%)"/><text x="{px + 2:.1f}" y="{y + 11}">{text}</text></g>')
    out.append("</svg>")
    return "\n".join(out)


def main():
    title = sys.argv[1] if len(sys.argv) > 1 else "profile"
    stacks = fold(sys.stdin)
    total = sum(stacks.values()) or 1
    selfs = Counter()
    for stack, n in stacks.items():
        selfs[stack[-1]] += n
    for name, n in selfs.most_common(25):
        print(f"{n * 100 / total:5.1f}%  {name}", file=sys.stderr)
    print(svg(tree(stacks), title))


if __name__ == "__main__":
    main()
