# Checks that `ptox opt` output is a fixed point, opt(opt(x)) == opt(x), for every .pto file under
# the given directories (recursively), and that there is at least one. Files that are inputs of
# error tests (a `RUN: not ...` line, or split-file fragments) are left out when they do not
# parse; any other file that fails is an error. Usage: round_trip.py PTOX DIR...
import pathlib
import subprocess
import sys
import tempfile


def opt(ptox, path):
    r = subprocess.run([ptox, 'opt', str(path)], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def is_error_input(text):
    runs = [line for line in text.splitlines() if 'RUN:' in line]
    return any('split-file' in r or 'not %ptox' in r for r in runs)


def main():
    ptox, dirs = sys.argv[1], sys.argv[2:]
    count = skipped = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            for path in sorted(pathlib.Path(d).rglob('*.pto')):
                code, once, err = opt(ptox, path)
                if code != 0:
                    if is_error_input(path.read_text()):
                        skipped += 1
                        continue
                    sys.exit('%s: ptox opt failed (exit %d): %s' % (path, code, err))
                printed = pathlib.Path(tmp) / ('%d.pto' % count)
                printed.write_text(once)
                code, twice, err = opt(ptox, printed)
                if code != 0 or twice != once:
                    sys.exit('%s: the printed form is not a fixed point%s' % (path, ': ' + err if err else ''))
                count += 1
    if count == 0:
        sys.exit('round-trip: no .pto files under %s' % ' '.join(dirs))
    print('round-trip ok: %d files (%d error inputs left out)' % (count, skipped))


if __name__ == '__main__':
    main()
