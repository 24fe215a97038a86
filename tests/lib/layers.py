#!/usr/bin/env python3
"""The include rules of the layers and of the library's modules, no cycle
among headers or modules, and no product source file longer than
MAX_LINES.

    layers.py [-v]       (from the top of the tree)

The layers, lowest first: the library (admission/ and catalog/, one
library, build/libmemfloor.a), the fetcher (fetch/, build/libmffetch.a)
and the store (store/, build/libmfstore.a), which are apart, then the
daemon (daemon/) and the command line (cli/), which are apart.  A file
includes only from its own layer and the ones below it:

  admission/, catalog/   nothing from fetch/, store/, daemon/ or cli/
  fetch/                 nothing from store/, daemon/ or cli/
  store/                 nothing from fetch/, daemon/ or cli/
  daemon/                nothing from cli/
  cli/                   nothing from daemon/ or store/

and the system headers its layer's packages give (the library no HTTP,
curl, TLS, SQLite or PostgreSQL header, the fetcher no HTTP, TLS or
database header, the store no HTTP, curl or TLS header).

Within the library each folder is a module: each folder of admission/
(admission/doc, admission/estimate, ...), admission/ itself for the files
at its top (api.c, the library's entry), and catalog/.  A file includes
its own module's headers and those of the modules below it: the graph of
modules, a module to each module one of its files includes, has no cycle
(each cycle is printed, with an include that makes each of its steps).
A private header (PRIVATE below) is included only from the folder it is
private to (a folder below it counts as it).  A
quoted include is resolved as the compiler resolves it (the including
file's folder, then -Iadmission -Icatalog); one that resolves nowhere is an
error too, so that no path can step around a rule.  The graph of headers
including headers has no cycle.  No product file (a .c or .h of the
folders above) is longer than MAX_LINES lines: a longer one is split by
job, as place.c and the estimate's files are.  Exits 1 and says each
broken rule.
"""
import os
import re
import sys

DIRS = ["admission", "catalog", "fetch", "store", "daemon", "cli"]
LAYER = {"admission": 0, "catalog": 0, "fetch": 1, "store": 1, "daemon": 2,
         "cli": 2}
# What a folder may not include although its layer is above it: the
# command line links no store.
APART = {"cli": ("store",)}
SEARCH = ["admission", "catalog"]  # the -I of every product object
# System headers a folder may not include: its packages do not give them.
DATABASES = ("sqlite3.h", "libpq-fe.h", "postgresql/")
BANNED = {
    "admission": ("microhttpd.h", "curl/", "gnutls/") + DATABASES,
    "catalog": ("microhttpd.h", "curl/", "gnutls/") + DATABASES,
    "fetch": ("microhttpd.h", "gnutls/") + DATABASES,
    "store": ("microhttpd.h", "curl/", "gnutls/"),
    "cli": DATABASES,
}
# Headers private to one folder: what the files of a module share;
# base/internal.h is what the library's modules share.
PRIVATE = {
    "admission/base/internal.h": ("admission", "catalog"),
    "admission/estimate/est.h": ("admission/estimate",),
    "admission/doc/doc_tree.h": ("admission/doc",),
    "admission/doc/doc_jtok.h": ("admission/doc",),
    "admission/doc/doc_skim.h": ("admission/doc",),
    "admission/doc/doc_scan.h": ("admission/doc",),
    "admission/review/review_int.h": ("admission/review",),
    "admission/place/place_int.h": ("admission/place",),
    "store/store_int.h": ("store",),
}
# The most lines a product source file may have.
MAX_LINES = 1200
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def sources():
    for d in DIRS:
        if not os.path.isdir(d):
            continue
        for top, dirs, names in sorted(os.walk(d)):
            dirs.sort()
            for name in sorted(names):
                if name.endswith((".c", ".h")):
                    yield os.path.join(top, name)


def module(path):
    """The library's module of path (its folder, with admission/'s top
    and catalog/ modules of their own), or None outside the library."""
    parts = path.split("/")
    if parts[0] == "catalog":
        return "catalog"
    if parts[0] == "admission":
        return "/".join(parts[:2]) if len(parts) > 2 else "admission"
    return None


def private_to(folder, owners):
    return any(folder == o or folder.startswith(o + "/") for o in owners)


def resolve(path, name):
    for base in [os.path.dirname(path)] + SEARCH:
        cand = os.path.normpath(os.path.join(base, name))
        if os.path.exists(cand):
            return cand
    return None


def cycles(graph):
    """Each cycle of the graph, once, as a list of its nodes."""
    found, state, stack = [], {}, []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in graph.get(n, ()):
            if state.get(m) == 1:
                found.append(stack[stack.index(m):] + [m])
            elif m not in state:
                visit(m)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if n not in state:
            visit(n)
    return found


def main(argv):
    verbose = "-v" in argv
    problems, graph, edges = [], {}, 0
    modules, why = {}, {}
    for path in sources():
        folder = path.split("/")[0]
        layer = LAYER[folder]
        with open(path, encoding="utf-8") as f:
            text = f.read()
        lines = text.count("\n") + (not text.endswith("\n") and text != "")
        if lines > MAX_LINES:
            problems.append(f"{path}: {lines} lines, more than {MAX_LINES}: "
                            "split it by job")
        for m in INCLUDE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            kind, name = m.group(1), m.group(2)
            where = f"{path}:{line}: #include {kind}{name}" + \
                ('"' if kind == '"' else ">")
            if kind == "<":
                for bad in BANNED.get(folder, ()):
                    if name.startswith(bad):
                        problems.append(f"{where}: the {folder}/ layer does "
                                        f"not use {bad}")
                        break
                continue
            target = resolve(path, name)
            if target is None:
                problems.append(f"{where}: no such file in the tree")
                continue
            edges += 1
            tfolder = target.split("/")[0]
            if tfolder not in LAYER:
                problems.append(f"{where}: {target} is no product file")
                continue
            tlayer = LAYER[tfolder]
            if tlayer > layer or (tlayer == layer and tlayer >= 1 and
                                  tfolder != folder) or \
                    tfolder in APART.get(folder, ()):
                problems.append(f"{where}: {folder}/ includes nothing from "
                                f"{tfolder}/")
            owners = PRIVATE.get(target)
            if owners is not None and \
                    not private_to(os.path.dirname(path), owners):
                problems.append(f"{where}: {target} is private to "
                                f"{', '.join(o + '/' for o in owners)}")
            if path.endswith(".h"):
                graph.setdefault(path, set()).add(target)
            mod, tmod = module(path), module(target)
            if mod is not None:
                modules.setdefault(mod, set())
            if mod is not None and tmod is not None and mod != tmod:
                modules[mod].add(tmod)
                why.setdefault((mod, tmod), f"{path}:{line} {target}")
            if verbose:
                print(f"{path} -> {target}")
    for c in cycles(graph):
        problems.append("include cycle: " + " -> ".join(c))
    for c in cycles(modules):
        steps = "; ".join(why[(a, b)] for a, b in zip(c, c[1:]))
        problems.append("module cycle: " + " -> ".join(c) +
                        f" ({steps})")
    for p in problems:
        print(p)
    if problems:
        print(f"layers: {len(problems)} broken")
        return 1
    print(f"layers: {edges} includes, each from a layer to its own or one "
          f"below; no cycle among the {len(graph)} headers that include "
          f"others or among the library's {len(modules)} modules; no file "
          f"over {MAX_LINES} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
