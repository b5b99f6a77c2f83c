#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""Where an agent commit's time goes, step by step, on both sides.

Usage: pmv_timeline.py INITIATOR_FILE TARGET_FILE [LAST]

The files are what a measurement build of pmemverbs (configure
--enable-timeline) writes at unload to FI_PMEMVERBS_TIMELINE.PID, one
"mark nanoseconds thread" per line (marks: prov/pmemverbs/src/pmv_timeline.h;
files without the thread id read as one thread).
The initiator's commits and the target's served requests are lined up in
order (one request per commit: fi_pmem_lat -m commit), the last LAST of
them (default 2000: the warmup left out); both sides read one clock
(CLOCK_MONOTONIC, one host).  Prints the median and 90th percentile of
each step in microseconds, over the commits that made both its marks
(with their count when not all did: a request the agent thread served,
or one served by a counter wait, has no CQ read's marks).  The target's
marks are grouped per thread: the agent thread may serve one request
while the application's CQ read runs, and that read's return must not
end the agent's request.
"""
import statistics
import sys

# pmv_timeline.h
COMMIT, POSTED, ACK_SEEN, CORE_POST, CORE_POSTED = 10, 11, 12, 13, 14
READ, GATE, SERVE, SERVED, ACK, ACKED, READ_DONE = 1, 2, 3, 4, 7, 8, 9
PERSIST, PERSISTED, CHECKED, SYNC, SYNCED = 31, 32, 33, 35, 34
ENTRY = 6

STEPS = [
    ('initiator: before the core write', 'i', COMMIT, 'i', CORE_POST),
    ('initiator: the core write (fi_writemsg)', 'i', CORE_POST,
     'i', CORE_POSTED),
    ('initiator: after it, to the return', 'i', CORE_POSTED, 'i', POSTED),
    ('posted -> target read that takes it returns from the core', 'i',
     POSTED, 't', GATE),
    ('target: that read, in the core', 't', READ, 't', GATE),
    ('posted -> target serves', 'i', POSTED, 't', SERVE),
    ('target: gate entry -> serving', 't', GATE, 't', SERVE),
    ('target: request checks', 't', SERVE, 't', PERSIST),
    ('target: file check (lseek)', 't', PERSIST, 't', CHECKED),
    ('target: msync', 't', SYNC, 't', SYNCED),
    ('target: the whole persist', 't', PERSIST, 't', PERSISTED),
    ('target: served -> ack written', 't', SERVED, 't', ACK),
    ('target: the ack write (fi_inject_write)', 't', ACK, 't', ACKED),
    ('ack written -> initiator reads it', 't', ACKED, 'i', ACK_SEEN),
    ('initiator: ack -> completion returned', 'i', ACK_SEEN, 'i', ENTRY),
    ('target: after the ack, to the read\'s return', 't', ACKED,
     't', READ_DONE),
    ('commit: call -> completion returned', 'i', COMMIT, 'i', ENTRY),
]


def load(path):
    """(mark, ns, thread) per line; thread 0 when the file has none."""
    with open(path, encoding='ascii') as f:
        return [tuple(int(x) for x in (line.split() + ['0'])[:3])
                for line in f]


def group(marks, opens, keep, last, whole, after=None):
    """Splits marks into one dict of marks per commit or request.  A mark
    of opens starts one (unless the one open lacks it); keep: the marks it
    takes (the first of each; a mark in after only once the mark it names
    came); it ends at last; it counts if it holds whole (a CQ read that
    found its request served by another thread holds no serving)."""
    out, cur = [], None
    after = after or {}
    for mark, ns, *_ in marks:
        if mark in opens and (cur is None or mark in cur):
            if cur is not None and whole in cur:
                out.append(cur)
            cur = {mark: ns}
        elif (cur is not None and mark in keep and mark not in cur and
              (mark not in after or after[mark] in cur)):
            cur[mark] = ns
            if mark == last:
                if whole in cur:
                    out.append(cur)
                cur = None
    if cur is not None and whole in cur:
        out.append(cur)
    return out


def initiator_commits(marks):
    """Each commit's marks, up to the first completion after its ack."""
    return group(marks, {COMMIT},
                 {CORE_POST, CORE_POSTED, POSTED, ACK_SEEN, ENTRY},
                 ENTRY, ENTRY, {ENTRY: ACK_SEEN})


def target_serves(marks):
    """Each request's marks, from the CQ read that took it (or its
    serving, when no CQ read took it) to that read's return (or the ack
    written), grouped in the thread that marked them, in the order they
    were served."""
    out = []
    for tid in {m[2] for m in marks}:
        out += group([m for m in marks if m[2] == tid], {READ, SERVE},
                     {GATE, SERVE, PERSIST, CHECKED, SYNC, SYNCED, PERSISTED,
                      SERVED, ACK, ACKED, READ_DONE}, READ_DONE, ACKED)
    return sorted(out, key=lambda req: req[SERVE])


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    last = int(sys.argv[3]) if len(sys.argv) == 4 else 2000
    ini = initiator_commits(load(sys.argv[1]))[-last:]
    tgt = target_serves(load(sys.argv[2]))[-last:]
    if len(ini) != len(tgt) or not ini:
        sys.exit(f'{len(ini)} commits against {len(tgt)} requests served: '
                 'one request per commit, and the same run on both sides?')
    print(f'{len(ini)} commits; microseconds: p50 p90')
    for name, sa, ma, sb, mb in STEPS:
        vals = []
        for i, t in zip(ini, tgt):
            a = (i if sa == 'i' else t).get(ma)
            b = (i if sb == 'i' else t).get(mb)
            if a is not None and b is not None:
                vals.append((b - a) / 1000)
        if vals:
            vals.sort()
            some = '' if len(vals) == len(ini) else \
                f' ({len(vals)} of {len(ini)})'
            print(f'{name:58s} {statistics.median(vals):7.2f} '
                  f'{vals[int(len(vals) * 0.9)]:7.2f}{some}')


if __name__ == '__main__':
    main()
