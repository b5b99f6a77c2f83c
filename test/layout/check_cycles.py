#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Function-call graph between the provider's source files (from nm on a
# build tree's objects): no file cycle, and initiator/ and target/ never
# call each other (DESIGN.md section 3).
# usage: check_cycles.py BUILD_DIR; prints one PASS or FAIL line.
import subprocess, glob, os, sys
objs = glob.glob(sys.argv[1] + '/prov/pmemverbs/src/**/.libs/*.o', recursive=True)
defs, uses = {}, {}
for o in objs:
    name = os.path.relpath(o, sys.argv[1]).replace('/.libs/libpmv_la-','/').replace('prov/pmemverbs/src/','')
    out = subprocess.run(['nm', o], capture_output=True, text=True).stdout.split('\n')
    defs[name] = {l.split()[-1] for l in out if len(l.split())==3 and l.split()[1]=='T'}
    uses[name] = {l.split()[-1] for l in out if len(l.split())==2 and l.split()[0]=='U'}
owner = {s:f for f,ds in defs.items() for s in ds}
graph = {f:{owner[s] for s in uses[f] if s in owner and owner[s]!=f} for f in defs}
index={}; low={}; stack=[]; on=set(); sccs=[]; i=[0]
def strong(v):
    index[v]=low[v]=i[0]; i[0]+=1; stack.append(v); on.add(v)
    for w in graph[v]:
        if w not in index: strong(w); low[v]=min(low[v],low[w])
        elif w in on: low[v]=min(low[v],index[w])
    if low[v]==index[v]:
        comp=[]
        while True:
            w=stack.pop(); on.discard(w); comp.append(w)
            if w==v: break
        if len(comp)>1: sccs.append(sorted(comp))
for v in graph:
    if v not in index: strong(v)
cross = []
for f in sorted(graph):
    side = f.split('/')[0]
    other = {'initiator':'target','target':'initiator'}.get(side)
    if other:
        cross += ['%s -> %s' % (f, x) for x in sorted(graph[f]) if x.startswith(other)]
if not objs:
    print("FAIL layout: no objects under %s" % sys.argv[1])
    sys.exit(1)
if sccs or cross:
    print("FAIL layout: call cycles %s; initiator/target calls %s" % (sccs, cross))
    sys.exit(1)
print("PASS layout: %d source files, no call cycle, initiator/ and target/ "
      "never call each other" % len(objs))
