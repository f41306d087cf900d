#!/usr/bin/env python3
"""Checks that #include arrows follow the layering of README.md's layout section.

Each folder may include only the folders listed for it below (and itself); front ends (the CLI,
the Python bindings) include only the public API in include/ptox plus their own files. Prints
every wrong-way include as `file:line: <layer> includes <header> (<layer> may include ...)` and
exits 1 when there is one. Usage: scripts/check_layering.py [REPO_ROOT]
(`--self-test` checks that a tree with one wrong-way arrow fails and its fix passes).
"""
import pathlib
import re
import subprocess
import sys
import tempfile

# What each layer may include (besides itself). support <- {ir, ops} <- analysis <- passes <-
# targets <- driver; the interpreter on {ir, ops} (targets/interp makes it a target); the runtime
# links without the compiler; the kernels/ headers are compiled into generated code and depend on
# nothing of src/.
ALLOWED = {
    'src/support': {'ptox'},
    'src/ir': {'ptox', 'src/support', 'src/ops'},
    'src/ops': {'ptox', 'src/support', 'src/ir', 'kernels'},  # kernels/quant.h: block formats
    'src/interp': {'ptox', 'src/support', 'src/ir', 'src/ops', 'kernels'},
    'src/analysis': {'ptox', 'src/support', 'src/ir', 'src/ops', 'kernels'},
    'src/passes': {'ptox', 'src/support', 'src/ir', 'src/ops', 'src/analysis', 'kernels'},
    'src/runtime': {'ptox', 'src/support'},
    'src/dist': {'ptox', 'src/support'},  # MPI: the ranks of a distributed run
    'src/targets': {'ptox', 'src/support', 'src/ir', 'src/ops', 'src/interp', 'src/analysis',
                    'src/passes', 'src/runtime', 'kernels'},
    'src/driver': {'ptox', 'src/support', 'src/ir', 'src/ops', 'src/interp', 'src/analysis',
                   'src/passes', 'src/runtime', 'src/dist', 'src/targets', 'kernels'},
    'kernels': set(),
    'tools/ptox': {'ptox'},
    'python': {'ptox'},
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of_header(header):
    """The layer a quoted include names, or None for a same-folder relative include."""
    first = header.split('/')[0]
    if first == 'ptox':
        return 'ptox'
    if first in ('kernels', 'tools', 'python'):
        return 'kernels' if first == 'kernels' else '/'.join(header.split('/')[:2])
    if '/' in header:
        return 'src/' + first
    return None


def layer_of_file(root, path):
    rel = path.relative_to(root).as_posix()
    for layer in sorted(ALLOWED, key=len, reverse=True):
        if rel.startswith(layer + '/'):
            return layer
    return None


def self_test():
    """The check fails on a CLI file that reaches into src/, and passes once it does not."""
    with tempfile.TemporaryDirectory() as tmp:
        cli = pathlib.Path(tmp, 'tools/ptox/x.cc')
        cli.parent.mkdir(parents=True)
        cli.write_text('#include "ptox/ptox.h"\n#include "ir/ir.h"\n')
        pathlib.Path(tmp, 'src/ir').mkdir(parents=True)
        pathlib.Path(tmp, 'src/ir/ir.h').write_text('#include "passes/pass.h"\n')
        run = lambda: subprocess.run([sys.executable, __file__, tmp], capture_output=True, text=True)
        bad = run()
        expected = ['tools/ptox/x.cc:2:', 'src/ir/ir.h:1:', '2 wrong-way']
        if bad.returncode != 1 or not all(e in bad.stdout for e in expected):
            print('self-test: two wrong-way includes not reported:\n' + bad.stdout)
            return 1
        cli.write_text('#include "ptox/ptox.h"\n')
        pathlib.Path(tmp, 'src/ir/ir.h').write_text('#include "support/error.h"\n')
        good = run()
        if good.returncode != 0:
            print('self-test: a clean tree fails:\n' + good.stdout)
            return 1
    print('layering self-test ok')
    return 0


def main():
    if sys.argv[1:] == ['--self-test']:
        return self_test()
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '.').resolve()
    bad = []
    for path in sorted(root.glob('**/*')):
        if path.suffix not in ('.h', '.cc', '.cpp', '.def') or 'build' in path.parts:
            continue
        layer = layer_of_file(root, path)
        if layer is None:
            continue
        for number, line in enumerate(path.read_text(errors='replace').splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = layer_of_header(m.group(1))
            if target is None or target == layer or target in ALLOWED[layer]:
                continue
            allowed = ', '.join(sorted(ALLOWED[layer])) or 'nothing'
            bad.append('%s:%d: %s includes %s (%s may include %s)' %
                       (path.relative_to(root), number, layer, m.group(1), layer, allowed))
    for b in bad:
        print(b)
    print('layering: %d wrong-way include(s)' % len(bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
