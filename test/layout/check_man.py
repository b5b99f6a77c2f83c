#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
"""The reference pages against the code (issue 28 item 2): fails on drift.

- Every fi_param_define of the provider has an entry in fi_pmemverbs(7),
  RUNTIME PARAMETERS, whose text holds the help text (`fi_info -e`) word
  for word; every FI_PMEMVERBS_* either man page names is defined.
- Every PMV_ERR_* code has an entry in fi_ext_pmem(3), "CQ error entries
  of a commit", with the errno and the fi_cq_strerror text of its row in
  the one table (pmv_err.c) and its value; fi_ext_pmem.h exports it as
  FI_PMEM_ERR_* with the same value, and no entry names a code that does not exist.
- fi_pmemverbs(7) has REQUIREMENTS and TROUBLESHOOTING sections, and every
  program `make install` puts in bindir has a man page that it installs.
- Every function of struct fi_pmem_ops_domain and every inline function
  of fi_ext_pmem.h is documented in fi_ext_pmem(3), and nothing else is.

Usage: check_man.py [SOURCE_DIR]; prints PASS or FAIL and each drift.
"""
import glob
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), '..', '..')
SRC = os.path.join(ROOT, 'prov', 'pmemverbs', 'src')
HEADER = os.path.join(ROOT, 'include', 'rdma', 'fi_ext_pmem.h')
MAN7 = os.path.join(ROOT, 'man', 'man7', 'fi_pmemverbs.7')
MAN3 = os.path.join(ROOT, 'man', 'man3', 'fi_ext_pmem.3')
ERR_BASE_NAME = 'PMV_ERR_BASE'


def read(path):
    with open(path, encoding='utf-8') as f:
        return f.read()


def c_strings(text):
    """Concatenates the C string literals of text."""
    return ''.join(bytes(s, 'utf-8').decode('unicode_escape')
                   for s in re.findall(r'"((?:[^"\\]|\\.)*)"', text))


GROFF = [(r'\[aq]', "'"), (r'\[cq]', "'"), (r'\[lq]', '"'), (r'\[rq]', '"'),
         (r'\[mc]', 'u'), (r'\[->]', '->'), (r'\-', '-'), (r'\&', ''),
         (r'\[at]', '@'), (r'\[ti]', '~'), (r'\[ha]', '^'), (r'\[em]', '--')]


def plain(text):
    """Man page source as plain words: no fonts, escapes or requests."""
    text = re.sub(r'\\f\[[A-Z]*\]|\\f[BIRP]', '', text)
    for esc, ch in GROFF:
        text = text.replace(esc, ch)
    text = re.sub(r'^\.(TP|PP|IP|RS|RE|nf|fi|B|I)\b.*$', ' ', text, flags=re.M)
    return norm(text)


def norm(text):
    return ' '.join(text.replace('"', '').split())


def section(man, title, level='SH'):
    """The source of one section (.SH or .SS) up to the next of its level."""
    m = re.search(r'^\.%s %s\s*$' % (level, re.escape(title)), man, re.M)
    if not m:
        return None
    stop = r'^\.SH ' if level == 'SH' else r'^\.S[HS] '
    n = re.search(stop, man[m.end():], re.M)
    return man[m.end():m.end() + n.start()] if n else man[m.end():]


def tp_entries(sec):
    """The .TP entries of a section: {tag line: body}."""
    out = {}
    for part in re.split(r'^\.TP\s*$', sec, flags=re.M)[1:]:
        lines = part.strip('\n').split('\n', 1)
        body = re.split(r'^\.(?:SH|SS|PP)\b', lines[1] if len(lines) > 1 else '',
                        flags=re.M)[0]
        out[lines[0]] = body
    return out


def code_params():
    """{FI_PMEMVERBS_NAME: help text} of every fi_param_define."""
    params = {}
    for path in glob.glob(os.path.join(SRC, '**', '*.c'), recursive=True):
        for m in re.finditer(r'fi_param_define\(\s*&pmv_prov,\s*"(\w+)",\s*'
                             r'FI_PARAM_\w+,((?:\s*"(?:[^"\\]|\\.)*")+)\s*\);',
                             read(path)):
            params['FI_PMEMVERBS_' + m.group(1).upper()] = c_strings(m.group(2))
    return params


def check_params(drift):
    params = code_params()
    man7 = read(MAN7)
    sec = section(man7, 'RUNTIME PARAMETERS')
    entries = {plain(k): plain(v) for k, v in tp_entries(sec).items()}
    for name, help_text in sorted(params.items()):
        if name not in entries:
            drift.append('fi_pmemverbs(7) has no RUNTIME PARAMETERS entry '
                         'for %s' % name)
        elif norm(help_text) not in entries[name]:
            drift.append('fi_pmemverbs(7) %s does not hold its help text '
                         '(fi_info -e): "%s"' % (name, norm(help_text)))
    for page, text in (('fi_pmemverbs(7)', man7), ('fi_ext_pmem(3)', read(MAN3))):
        text = re.sub(r'FI_PMEMVERBS_\w*\*', '', plain(text))  # FAULT_*
        for name in sorted(set(re.findall(r'FI_PMEMVERBS_[A-Z0-9_]*[A-Z0-9]',
                                          text))):
            if name not in params:
                drift.append('%s names %s, which no fi_param_define '
                             'defines' % (page, name))
    return len(params)


def code_errors():
    """[(name, value, errno name, strerror text)] of every PMV_ERR_*."""
    proto = read(os.path.join(SRC, 'proto', 'pmv_proto.h'))
    enum = re.search(r'enum \{\s*%s = (0x[0-9a-fA-F]+),(.*?)\};'
                     % ERR_BASE_NAME, proto, re.S)
    base = int(enum.group(1), 16)
    names = re.findall(r'(PMV_ERR_\w+)', enum.group(2))
    names = [n for n in names if n != 'PMV_ERR_LAST']
    table = read(os.path.join(SRC, 'pmv_err.c'))
    errnos, texts = {'default': 'FI_EINVAL'}, {}
    for m in re.finditer(r'\[(PMV_ERR_\w+) - PMV_ERR_BASE\] = \{ (FI_\w+),'
                         r'(.*?) \},\n', table, re.S):
        errnos[m.group(1)] = m.group(2)
        texts[m.group(1)] = c_strings(m.group(3))
    return [(n, base + 1 + i, errnos.get(n, errnos.get('default')),
             texts.get(n, '')) for i, n in enumerate(names)]


def check_errors(drift):
    errors = code_errors()
    man3 = read(MAN3)
    sec = section(man3, 'CQ error entries of a commit', 'SS') or ''
    entries = {}
    for tag, body in tp_entries(sec).items():
        m = re.match(r'(FI_\w+), (0x[0-9a-fA-F]+)', plain(tag))
        if m:
            entries[int(m.group(2), 16)] = (m.group(1), plain(body))
    header = read(HEADER)
    exported = {m.group(1): int(m.group(2), 16) for m in re.finditer(
        r'#define (FI_PMEM_ERR_\w+)\s+(0x[0-9a-fA-F]+)', header)}
    for name, value, err, text in errors:
        if value not in entries:
            drift.append('fi_ext_pmem(3) CQ errors have no entry for %s '
                         '(0x%x, %s)' % (name, value, err))
        else:
            man_err, body = entries[value]
            if man_err != err:
                drift.append('fi_ext_pmem(3) gives %s (0x%x) err %s; the code '
                             'maps it to %s' % (name, value, man_err, err))
            if norm(text) not in body:
                drift.append('fi_ext_pmem(3) entry 0x%x does not quote '
                             'fi_cq_strerror: "%s"' % (value, norm(text)))
        export = 'FI_PMEM_ERR_' + name[len('PMV_ERR_'):]
        if exported.get(export) != value:
            drift.append('fi_ext_pmem.h does not export %s as 0x%x'
                         % (export, value))
    values = {v for _, v, _, _ in errors}
    for value in sorted(set(entries) - values):
        drift.append('fi_ext_pmem(3) lists 0x%x, which is no PMV_ERR_*' % value)
    for export, value in sorted(exported.items()):
        if value not in values:
            drift.append('fi_ext_pmem.h exports %s = 0x%x, which is no '
                         'PMV_ERR_*' % (export, value))
    return len(errors)


def check_functions(drift):
    header = read(HEADER)
    ops = re.search(r'struct fi_pmem_ops_domain \{(.*?)\};', header, re.S)
    members = re.findall(r'\(\*(\w+)\)\(', ops.group(1))
    inlines = re.findall(r'static inline [^(]*?\b(\w+)\(', header)
    man3 = read(MAN3)
    sec = section(man3, 'Domain operations', 'SS') or ''
    documented = {plain(k) for k in tp_entries(sec)}
    for name in members:
        if name not in documented:
            drift.append('fi_ext_pmem(3) Domain operations do not document '
                         '%s' % name)
    for name in sorted(documented - set(members)):
        drift.append('fi_ext_pmem(3) Domain operations document %s, which '
                     'struct fi_pmem_ops_domain does not have' % name)
    synopsis = plain(section(man3, 'SYNOPSIS') or '')
    for name in inlines:
        if name not in synopsis:
            drift.append('fi_ext_pmem(3) SYNOPSIS lacks %s' % name)
    return len(members) + len(inlines)


def check_pages(drift):
    """fi_pmemverbs(7)'s required sections; a man page per installed tool."""
    man7 = read(MAN7)
    for title in ('REQUIREMENTS', 'RUNTIME PARAMETERS', 'LIMITATIONS',
                  'TROUBLESHOOTING'):
        if section(man7, title) is None:
            drift.append('fi_pmemverbs(7) has no %s section' % title)
    am = read(os.path.join(ROOT, 'Makefile.am'))
    tools = []
    for m in re.finditer(r'^bin_PROGRAMS \+?= ((?:.*\\\n)*.*)$', am, re.M):
        tools += [os.path.basename(t) for t in m.group(1).split() if t != '\\']
    for tool in tools:
        page = os.path.join('man', 'man1', tool + '.1')
        if not os.path.exists(os.path.join(ROOT, page)):
            drift.append('installed tool %s has no man page %s' % (tool, page))
        elif page not in ' '.join(am.split()):
            drift.append('%s is not installed (dist_man1_MANS)' % page)
    return len(tools)


def main():
    drift = []
    ntools = check_pages(drift)
    nparams = check_params(drift)
    nerrors = check_errors(drift)
    nfuncs = check_functions(drift)
    if drift:
        print('FAIL man pages: %d drifts from the code' % len(drift))
        for d in drift:
            print('  ' + d)
        return 1
    print('PASS man pages: %d parameters, %d error codes, %d extension '
          'functions match the code; %d tools have man pages'
          % (nparams, nerrors, nfuncs, ntools))
    return 0


if __name__ == '__main__':
    sys.exit(main())
