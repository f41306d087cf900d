# Checks that `ptox opt` output is a fixed point for every .pto file in the given directories:
# opt(opt(x)) == opt(x). Usage: round_trip.py PTOX DIR... (run by examples_round_trip.pto).
import pathlib
import subprocess
import sys
import tempfile


def opt(ptox, path):
    r = subprocess.run([ptox, 'opt', str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit('%s: ptox opt failed (exit %d): %s' % (path, r.returncode, r.stderr))
    return r.stdout


def main():
    ptox, dirs = sys.argv[1], sys.argv[2:]
    count = 0
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            for path in sorted(pathlib.Path(d).glob('*.pto')):
                once = opt(ptox, path)
                printed = pathlib.Path(tmp) / path.name
                printed.write_text(once)
                if opt(ptox, printed) != once:
                    sys.exit('%s: the printed form is not a fixed point' % path)
                count += 1
    print('round-trip ok: %d files' % count)


if __name__ == '__main__':
    main()
