#!/usr/bin/python3
"""layer_check.py: the include graph of the repository's modules, checked against a declared layer order.

A C file can only call what a header it includes declares (-Werror: no implicit declarations), so the
graph of `#include "dir/..."` lines between modules is an upper bound of the graph of calls. This script
builds that graph over the repository's source folders (tests/, build/ and bench/ left out) and fails on

  - an include from a module into a module of a higher layer (a lower layer calling up), and
  - a cycle between modules (two modules of one layer that include each other, directly or around),
  - an include of another module's private header (*_int.h: only its own module's files, and the unit
    tests, may include it; the build enforces it too: its include path has public headers only, so a
    private header is included by its short name from its own folder, tests/structure/test_private.sh),

except for the edges listed in the allow file (each one a known debt with the issue that removes it; an
allowed edge that no longer occurs is itself an error, so the list only shrinks).

Modules: each top-level folder (common, ca, ...), and inside proxy/ each sub-folder (proxy/net, ...); the
files directly in proxy/ are the module "proxy" (the gateway's top: gateway, worker, reload, admin, ...),
except the leaf files named in FILE_MODULES (metrics, sbxreg).

Usage:
  layer_check.py [--root DIR] [--allow FILE] [--stats] [--calls BUILD_DIR]
    --stats        print the module graph: modules, edges, upward edges, cycles (strongly connected
                   components with more than one module), and the file-level include cycles
    --calls DIR    also print the module call graph read from the object files under DIR (nm: what each
                   module's objects leave undefined and another module's define), and its upward calls
Exit status: 0 clean, 1 violations, 2 usage or I/O error.
"""

import argparse
import os
import re
import subprocess
import sys

# The declared order, lowest first. A module may include modules of its own or a lower layer; one layer's
# modules must not form a cycle. Why this order: see docs/architecture.md ("Layers").
LAYERS = [
    ["common"],
    ["ca", "secrets", "audit"],
    ["policy", "sandbox-glue"],
    ["proxy/codec"],
    ["proxy/core", "proxy/sbxreg"],
    ["proxy/metrics"],
    ["proxy/net", "proxy/dns", "proxy/store"],
    ["proxy/cred"],
    ["proxy/judge"],
    ["proxy/session"],
    ["proxy/h2"],
    ["proxy"],
    ["cli"],
]
# Files at the top of proxy/ that are leaf modules of their own (no folder: they were not moved, to keep
# the merges of issue 18 mechanical): every layer may count into metrics, look a sandbox up. (The audit
# writer was one of them; it is now part of module "audit", layer 1, beside the reader: it takes its
# settings as struct audit_opts instead of the policy's config, so it stays below policy.)
FILE_MODULES = [
    (re.compile(r"^proxy/metrics\.[ch]$"), "proxy/metrics"),
    (re.compile(r"^proxy/sbxreg\.[ch]$"), "proxy/sbxreg"),
]
SKIP_DIRS = {"tests", "build", "bench", "debian", "docs", "examples", "scripts", ".git"}
INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of():
    out = {}
    for i, mods in enumerate(LAYERS):
        for m in mods:
            out[m] = i
    return out


def module_of(rel):
    """The module of a repository-relative path, or None when it belongs to none."""
    for rx, mod in FILE_MODULES:
        if rx.match(rel):
            return mod
    parts = rel.split("/")
    if len(parts) < 2 or parts[0] in SKIP_DIRS:
        return None
    if parts[0] == "proxy" and len(parts) > 2:
        return "proxy/" + parts[1]
    return parts[0]


def scan(root):
    """{file: [included repo-relative paths]} for every .c/.h of a module."""
    files = {}
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        top = rel_dir.split("/")[0]
        if rel_dir != "." and (top in SKIP_DIRS or top.startswith(".")):
            dirnames[:] = []
            continue
        for fn in filenames:
            if not fn.endswith((".c", ".h")):
                continue
            rel = os.path.normpath(os.path.join(rel_dir, fn))
            if module_of(rel) is None:
                continue
            incs = []
            with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                for line in f:
                    m = INCLUDE_RE.match(line)
                    if m:
                        incs.append(m.group(1))
            files[rel] = incs
    return files


def sccs(nodes, edges):
    """Tarjan's strongly connected components of {node: set(succ)}; only those with more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def read_allow(path):
    allow = set()
    if path is None or not os.path.exists(path):
        return allow
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = re.match(r"^(\S+)\s*->\s*(\S+)$", line)
            if not m:
                print(f"{path}:{n}: not 'from -> to'", file=sys.stderr)
                sys.exit(2)
            allow.add((m.group(1), m.group(2)))
    return allow


def call_graph(build_dir, root):
    """{(from_module, to_module): set(symbols)} from nm over the object files under <build_dir>."""
    defined, undefined = {}, {}
    for dirpath, _, filenames in os.walk(build_dir):
        for fn in filenames:
            if not fn.endswith(".c.o"):
                continue
            path = os.path.join(dirpath, fn)
            # CMake names objects <target>.dir/<source path>.o
            m = re.search(r"CMakeFiles/[^/]+\.dir/(.*)\.o$", path)
            if not m:
                continue
            src = os.path.normpath(os.path.join(os.path.relpath(dirpath.split("/CMakeFiles/")[0], build_dir),
                                                m.group(1)))
            mod = module_of(src)
            if mod is None:
                continue
            res = subprocess.run(["nm", "--defined-only", "-g", path], capture_output=True, text=True)
            for line in res.stdout.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBR":
                    defined[p[2]] = mod
            res = subprocess.run(["nm", "-u", path], capture_output=True, text=True)
            for line in res.stdout.splitlines():
                p = line.split()
                if p:
                    undefined.setdefault(mod, set()).add(p[-1])
    calls = {}
    for mod, syms in undefined.items():
        for s in syms:
            to = defined.get(s)
            if to is not None and to != mod:
                calls.setdefault((mod, to), set()).add(s)
    return calls


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "..")))
    ap.add_argument("--allow", default=None)
    ap.add_argument("--stats", action="store_true")
    ap.add_argument("--calls", default=None)
    a = ap.parse_args()
    if a.allow is None:
        a.allow = os.path.join(a.root, "scripts", "layer-allow.txt")
    layer = layer_of()
    files = scan(a.root)
    if not files:
        print(f"layer_check: no module sources under {a.root}", file=sys.stderr)
        return 2
    allow = read_allow(a.allow)

    edges = {}        # module -> set(module)
    why = {}          # (from, to) -> [file:include]
    fedges = {}       # file -> set(file), headers resolved inside the tree
    problems = []
    for f, incs in sorted(files.items()):
        fm = module_of(f)
        if fm not in layer:
            problems.append(f"{f}: module {fm} has no declared layer (add it to LAYERS in {__file__})")
            continue
        for inc in incs:
            if "/" not in inc:
                # a file-local include ("foo_int.h", how a private header is reached: only from its own folder,
                # since the build's include path has public headers only): the file beside the includer
                local = os.path.normpath(os.path.join(os.path.dirname(f), inc))
                if local in files:
                    fedges.setdefault(f, set()).add(local)
                continue
            tm = module_of(inc)
            if tm is None:
                continue
            if tm not in layer:
                problems.append(f"{f}: includes {inc} of module {tm}, which has no declared layer")
                continue
            if inc in files:
                fedges.setdefault(f, set()).add(inc)
            if tm == fm:
                continue
            if re.search(r"_int\.h$", inc):
                problems.append(f"{f}: includes {inc}, a private header of {tm}: use {tm}'s own header")
            edges.setdefault(fm, set()).add(tm)
            why.setdefault((fm, tm), []).append(f"{f}: #include \"{inc}\"")

    mods = sorted({module_of(f) for f in files} & set(layer))
    allpairs = sorted((x, y) for x in edges for y in edges[x])
    upward = [(x, y) for x, y in allpairs if layer[y] > layer[x]]
    cycles = sccs(mods, edges)

    for x, y in upward:
        if (x, y) not in allow:
            for w in why[(x, y)]:
                problems.append(f"{w}: {x} (layer {layer[x]}) includes {y} (layer {layer[y]}): a lower layer "
                                "calls up; report through a callback given at set-up, or move the declaration down")
    # upward edges are reported above (or allowed): a cycle left among the others is one inside a layer
    kept = {x: {y for y in edges[x] if (x, y) not in allow and layer[y] <= layer[x]} for x in edges}
    for comp in sccs(mods, kept):
        closing = [w for x in comp for y in sorted(kept.get(x, ())) if y in comp for w in why[(x, y)][:2]]
        problems.append("cycle between modules: " + " <-> ".join(comp) + " (closed by: " + "; ".join(closing) + ")")
    for x, y in sorted(allow):
        if y not in edges.get(x, set()):
            problems.append(f"{a.allow}: allowed edge {x} -> {y} no longer occurs: remove it from the list")

    if a.stats:
        nf = len(files)
        fe = sum(len(v) for v in fedges.values())
        fcycles = sccs(list(files), fedges)
        print(f"files {nf}, file include edges {fe}, file include cycles {len(fcycles)}"
              + "".join(f"\n  file cycle ({len(c)}): " + " ".join(c) for c in fcycles))
        print(f"modules {len(mods)}, module include edges {len(allpairs)}, upward {len(upward)}, "
              f"module cycles {len(cycles)}")
        for comp in cycles:
            print(f"  module cycle ({len(comp)}): " + " ".join(comp))
        for x, y in allpairs:
            tag = " UP" if (x, y) in upward else ""
            print(f"  {x} -> {y} ({len(why[(x, y)])} includes){tag}")
        if a.calls:
            calls = call_graph(a.calls, a.root)
            cpairs = sorted(calls)
            cup = [(x, y) for x, y in cpairs if x in layer and y in layer and layer[y] > layer[x]]
            cedges = {}
            for x, y in cpairs:
                cedges.setdefault(x, set()).add(y)
            ccyc = sccs(sorted({p for pr in cpairs for p in pr}), cedges)
            print(f"call graph (nm {a.calls}): module call edges {len(cpairs)}, upward {len(cup)}, "
                  f"module call cycles {len(ccyc)}")
            for comp in ccyc:
                print(f"  call cycle ({len(comp)}): " + " ".join(comp))
            for x, y in cup:
                print(f"  {x} -> {y} UP: " + " ".join(sorted(calls[(x, y)])))
    for p in problems:
        print("layer_check: " + p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
