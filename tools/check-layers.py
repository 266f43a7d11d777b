#!/usr/bin/env python3
"""Fails, naming file and line, when an import in src/ goes against the
layers docs/ARCHITECTURE.md declares, or closes a circle.

It reads every `use crate::…`, `use super::…` and `crate::…` path in
src/ (comments, strings and `pub(in crate::…)` left out), resolves each to
the file it names, and checks two things:

1. The layer order: the fenced ```layers block of docs/ARCHITECTURE.md
   lists src/'s top-level modules from the top down; a module may import
   only those listed below it. A module missing from the block fails too.
2. No circle between files of different folders: over every import,
   parents' uses of their children included, no strongly connected group
   of files spans two folders.

Usage: tools/check-layers.py   (SSQ_CHECKOUT=dir checks another copy of the
tree)

A file's `#[cfg(test)]` module is left out: tests use what they test with.
"""

import collections
import os
import re
import sys

ROOT = os.environ.get("SSQ_CHECKOUT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SRC = os.path.join(ROOT, "src")
MAP = os.path.join(ROOT, "docs", "ARCHITECTURE.md")


def rel(path):
    return os.path.relpath(path, ROOT)


def module_of(path):
    """src/a/b.rs and src/a/b/mod.rs are module a::b; src/lib.rs is the root."""
    parts = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return tuple(parts)


def file_of(parts):
    """The file of the longest prefix of `parts` that is a module."""
    for n in range(len(parts), 0, -1):
        base = os.path.join(SRC, *parts[:n])
        for candidate in (base + ".rs", os.path.join(base, "mod.rs")):
            if os.path.isfile(candidate):
                return candidate
    return None


def without_comments_and_strings(text):
    """Blanks comments and string literals, keeping line numbers."""
    keep_lines = lambda m: "\n" * m.group(0).count("\n")
    text = re.sub(r"/\*.*?\*/", keep_lines, text, flags=re.S)
    text = re.sub(r'r(#*)".*?"\1', keep_lines, text, flags=re.S)
    text = re.sub(r'"(?:\\.|[^"\\])*"', keep_lines, text, flags=re.S)
    text = re.sub(r"'(?:\\.|[^'\\])'", "' '", text)
    return re.sub(r"//[^\n]*", "", text)


def use_paths(tree):
    """`a::{b, c::{d, e as f}}` -> ['a::b', 'a::c::d', 'a::c::e']."""
    tree = re.sub(r"\s+", "", tree)
    brace = tree.find("{")
    if brace < 0:
        return [re.sub(r"as\w+$", "", tree) if "as" in tree.split("::")[-1] else tree]
    prefix, inner = tree[:brace], tree[brace + 1 :].rsplit("}", 1)[0]
    items, depth, current = [], 0, ""
    for ch in inner:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(current)
            current = ""
        else:
            current += ch
    items.append(current)
    return [prefix + sub for item in items if item for sub in use_paths(item)]


def imports(path):
    """(line, file imported) for each path in `path` that names another file."""
    text = without_comments_and_strings(open(path, encoding="utf-8").read())
    # A file's tests (a `#[cfg(test)]` module, at its end by this crate's
    # habit) use what they test with; only the code itself is checked.
    tests = re.search(r"^#\[cfg\(test\)\]\s*mod \w+ \{", text, re.M)
    if tests:
        text = text[: tests.start()]
    here = module_of(path)
    found = []

    def add(offset, parts):
        target = file_of(parts)
        line = text.count("\n", 0, offset) + 1
        if target and target != path and (line, target) not in found:
            found.append((line, target))

    uses = list(re.finditer(r"\buse\s+([^;]+);", text))
    for m in uses:
        for used in use_paths(m.group(1)):
            parts = [p for p in used.split("::") if p]
            if not parts:
                continue
            if parts[0] == "crate":
                add(m.start(), parts[1:])
            elif parts[0] in ("self", "super"):
                base = list(here)
                while parts and parts[0] in ("self", "super"):
                    if parts.pop(0) == "super":
                        base = base[:-1]
                add(m.start(), base + parts)
    in_use = [(m.start(), m.end()) for m in uses]
    for m in re.finditer(r"(?<!in )(?<![\w:])crate((?:::\w+)+)", text):
        if not any(a <= m.start() < b for a, b in in_use):
            add(m.start(), m.group(1).split("::")[1:])
    return found


def declared_layers():
    text = open(MAP, encoding="utf-8").read()
    block = re.search(r"```layers\n(.*?)```", text, re.S)
    if not block:
        sys.exit(f"{rel(MAP)} has no ```layers block to check against")
    order = {}
    for line in block.group(1).splitlines():
        words = line.split()
        if words:
            order[words[0].rstrip("/")] = len(order)
    return order


def circles(graph):
    """Strongly connected groups of more than one node (Tarjan, iterative)."""
    index, low, stack, on_stack, groups, counter = {}, {}, [], set(), [], [0]
    for start in list(graph):
        if start in index:
            continue
        work = [(start, iter(graph.get(start, ())))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(graph.get(child, ()))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    groups.append(sorted(group))
    return groups


def main():
    files = sorted(
        os.path.join(d, f) for d, _, fs in os.walk(SRC) for f in fs if f.endswith(".rs")
    )
    edges = {f: imports(f) for f in files}
    order = declared_layers()
    failures = []

    # 1. Layers.
    tops = {module_of(f)[0] for f in files if module_of(f)}
    for missing in sorted(tops - order.keys()):
        failures.append(f"src/{missing} is not in the ```layers block of docs/ARCHITECTURE.md: place it there")
    for f, found in edges.items():
        source = module_of(f)
        for line, target in found:
            into = module_of(target)
            if not source or not into or source[0] == into[0]:
                continue
            if source[0] in order and into[0] in order and order[into[0]] < order[source[0]]:
                failures.append(
                    f"{rel(f)}:{line}: {source[0]} imports {rel(target)}, but {into[0]} is a layer above it "
                    f"(docs/ARCHITECTURE.md's ```layers)"
                )

    # 2. Circles between files of different folders.
    file_graph = {f: {t for _, t in found} for f, found in edges.items()}
    for group in circles(file_graph):
        folders = {os.path.dirname(f) for f in group}
        if len(folders) > 1:
            steps = sorted(
                {f"{rel(f)} -> {rel(t)} (line {line})" for f in group for line, t in edges[f] if t in set(group)}
            )
            failures.append(
                "files of different folders in a circle: " + ", ".join(rel(f) for f in group) + "\n    "
                + "\n    ".join(steps)
            )

    if failures:
        print(f"{len(failures)} import(s) against docs/ARCHITECTURE.md's layers or in a circle:", file=sys.stderr)
        for failure in failures:
            print("  " + failure, file=sys.stderr)
        sys.exit(1)
    print(f"layers: {len(files)} files of src/ import down the layers, with no circle")


if __name__ == "__main__":
    main()
