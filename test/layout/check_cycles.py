#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# The provider's source layout (DESIGN.md section 3), three graphs:
# - calls between source files (from nm on a build tree's objects): no file
#   cycle, and initiator/ and target/ never call each other;
# - includes between its files (#include "..."): no header circle; src/
#   files include no initiator/ or target/ header, initiator/ and target/
#   none of each other's nor src/'s private ones (pmv_objects.h,
#   pmv_ep_ops.h), proto/ none outside proto/;
# - inline functions of headers: one calls only functions of its own
#   folder, and the inline helpers of the headers every folder shares
#   (src/*.h, proto/); never an out-of-line function of another folder.
# usage: check_cycles.py BUILD_DIR [SRC_DIR]; prints one PASS or FAIL line.
# SRC_DIR defaults to this tree's prov/pmemverbs/src.
import subprocess, glob, os, re, sys

BUILD = sys.argv[1]
SRC = sys.argv[2] if len(sys.argv) > 2 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..', 'prov',
    'pmemverbs', 'src')
SRC = os.path.normpath(SRC)


# Tarjan's strongly connected components of graph with more than one node.
def cycles(graph):
    index, low, stack, on, sccs, i = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = i[0]
        i[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                strong(w)
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
            if len(comp) > 1 or v in graph.get(v, ()):
                sccs.append(sorted(comp))
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return sccs


# The folder of a path relative to SRC: initiator, target, proto or src.
def folder(rel):
    return rel.split('/')[0] if '/' in rel else 'src'


# Functions each object defines and uses: (defs by file, uses by file).
def object_symbols():
    objs = glob.glob(BUILD + '/prov/pmemverbs/src/**/.libs/*.o',
                     recursive=True)
    defs, uses = {}, {}
    for o in objs:
        name = os.path.relpath(o, BUILD).replace(
            '/.libs/libpmv_la-', '/').replace('prov/pmemverbs/src/', '')
        name = name.replace('.libs/', '')  # src/'s objects: folder src
        out = subprocess.run(['nm', o], capture_output=True,
                             text=True).stdout.split('\n')
        defs[name] = {l.split()[-1] for l in out
                      if len(l.split()) == 3 and l.split()[1] == 'T'}
        uses[name] = {l.split()[-1] for l in out
                      if len(l.split()) == 2 and l.split()[0] == 'U'}
    return defs, uses


# Call cycles between files, and calls between initiator/ and target/.
def check_calls(defs, uses):
    owner = {s: f for f, ds in defs.items() for s in ds}
    graph = {f: {owner[s] for s in uses[f] if s in owner and owner[s] != f}
             for f in defs}
    cross = []
    for f in sorted(graph):
        other = {'initiator': 'target', 'target': 'initiator'}.get(folder(f))
        if other:
            cross += ['%s -> %s' % (f, x) for x in sorted(graph[f])
                      if folder(x) == other]
    return cycles(graph), cross


# The source files under SRC, relative to it, with their text.
def sources():
    files = {}
    for p in glob.glob(SRC + '/**/*.[ch]', recursive=True):
        with open(p, encoding='utf-8', errors='replace') as f:
            files[os.path.relpath(p, SRC)] = f.read()
    return files


# The file an #include "name" of rel names: beside rel, else under SRC.
def resolve(rel, name, files):
    near = os.path.normpath(os.path.join(os.path.dirname(rel), name))
    if near in files:
        return near
    return os.path.normpath(name) if os.path.normpath(name) in files else None


# src/ headers only src/ files may include (initiator/ and target/ see pmv.h).
SRC_PRIVATE = {'pmv_objects.h', 'pmv_ep_ops.h'}


# Folders whose headers a file may include, and whose inline helpers a
# header's inline may call, by the file's folder.
INCLUDE_OK = {'src': {'src', 'proto'}, 'proto': {'proto'},
              'initiator': {'initiator', 'src', 'proto'},
              'target': {'target', 'src', 'proto'}}


# Include circles between headers, and includes across the folder rules.
def check_includes(files):
    graph, wrong = {}, []
    for rel, text in files.items():
        for name in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            dst = resolve(rel, name, files)
            if dst is None:
                continue
            graph.setdefault(rel, set()).add(dst)
            own = folder(rel)
            if folder(dst) not in INCLUDE_OK[own] or \
               (dst in SRC_PRIVATE and own != 'src'):
                wrong.append('%s includes %s' % (rel, dst))
    headers = {f: {d for d in ds if d.endswith('.h')}
               for f, ds in graph.items() if f.endswith('.h')}
    return cycles(headers), sorted(wrong)


# Each header's inline functions: {name: body}.
def inlines(text):
    found = {}
    for m in re.finditer(r'static\s+inline\b[^;{]*?\b(\w+)\s*\([^;{]*\)\s*\{',
                         text):
        depth, i = 1, m.end()
        while depth and i < len(text):
            depth += {'{': 1, '}': -1}.get(text[i], 0)
            i += 1
        found[m.group(1)] = text[m.end():i - 1]
    return found


# Inline functions of headers that call a function of another folder.
def check_inlines(files, defs):
    owner = {s: folder(f) for f, ds in defs.items() for s in ds}
    shared = {}
    per_header = {}
    for rel, text in files.items():
        if rel.endswith('.h'):
            per_header[rel] = inlines(text)
            for name in per_header[rel]:
                shared[name] = folder(rel)
    bad = []
    for rel, funcs in sorted(per_header.items()):
        own = folder(rel)
        for name, body in sorted(funcs.items()):
            for callee in sorted(set(re.findall(r'\b(\w+)\s*\(', body))):
                if callee in owner and owner[callee] != own:
                    bad.append('%s: %s calls %s (%s/)'
                               % (rel, name, callee, owner[callee]))
                elif callee in shared and \
                        shared[callee] not in INCLUDE_OK[own]:
                    bad.append('%s: %s calls %s (%s/ inline)'
                               % (rel, name, callee, shared[callee]))
    return bad


def main():
    defs, uses = object_symbols()
    if not defs:
        print("FAIL layout: no objects under %s" % BUILD)
        sys.exit(1)
    files = sources()
    if not files:
        print("FAIL layout: no sources under %s" % SRC)
        sys.exit(1)
    sccs, cross = check_calls(defs, uses)
    circles, wrong = check_includes(files)
    bad_inlines = check_inlines(files, defs)
    if sccs or cross or circles or wrong or bad_inlines:
        print("FAIL layout: call cycles %s; initiator/target calls %s; "
              "include circles %s; includes across folders %s; inlines "
              "calling across folders %s"
              % (sccs, cross, circles, wrong, bad_inlines))
        sys.exit(1)
    print("PASS layout: %d source files, no call cycle, initiator/ and "
          "target/ never call each other; %d files, no include circle or "
          "include across folders, no inline calling across folders"
          % (len(defs), len(files)))


main()
