#!/usr/bin/env python3
"""The reliability battery: the ptox CLI under malformed inputs, a damaged or foreign compile
cache, concurrency, thread limits, a full disk, kill -9 during a compile, FIFO and folder inputs
and hostile compiler paths. Each case checks what must hold (a clear error and the right exit
code; never a crash, a hang, a partial output or a foreign binary run) and prints what it did.

  battery.py --ptox build/dev/ptox --examples examples --case NAME   (or --case all)

Exit status: 0 pass, 1 fail, 77 skipped (the reason is printed: not root, no setpriv, no mount).
"""
import argparse
import os
import random
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time

SKIP = 77
# Exit codes of the CLI (README): anything else (a signal, 70 internal) is a failure everywhere.
OK, INVALID, UNSUPPORTED, TOOLCHAIN, RUNTIME = 0, 1, 2, 3, 4

# Two outputs: %b is small, %c grows with N (512 bytes a row), so a small disk fills on %c.
TWO_OUTPUTS = """
func @two(%a: in tensor<{N}x128xf32>, %b: out tensor<8x128xf32>, %c: out tensor<{N}x128xf32>) {
  incore {
    %t = tile.load %a[0, 0] : tile<8x128xf32>
    tile.store %t, %b[0, 0]
  }
  %n = tensor.dim %a, 0
  for %i = 0 to %n step 64 parallel {
    incore {
      %u = tile.load %a[%i, 0] : tile<64x128xf32>
      %v = tile.add %u, 1.0
      tile.store %v, %c[%i, 0]
    }
  }
}
"""


class Failure(Exception):
    pass


class Skip(Exception):
    pass


class Battery:
    def __init__(self, ptox, examples):
        self.ptox = os.path.abspath(ptox)
        self.examples = os.path.abspath(examples)
        self.tmp = tempfile.mkdtemp(prefix="ptox_battery_")
        os.chmod(self.tmp, 0o755)  # other users (setpriv cases) may enter
        self.cache = self.path("cache")
        self.checks = 0
        self.sanitizers = sanitizers_of(self.ptox)

    def path(self, *parts):
        return os.path.join(self.tmp, *parts)

    def example(self, name):
        return os.path.join(self.examples, name)

    def run(self, args, env=None, timeout=120, prefix=()):
        """Runs ptox with `args`; returns (rc, stdout, stderr). A timeout is a failure."""
        full_env = dict(os.environ, PTOX_CACHE_DIR=self.cache)
        full_env.update(env or {})
        try:
            p = subprocess.run(list(prefix) + [self.ptox] + list(args), env=full_env,
                               capture_output=True, text=True, timeout=timeout,
                               errors="replace")
        except subprocess.TimeoutExpired:
            raise Failure(f"ptox {' '.join(args)} did not finish in {timeout} s")
        return p.returncode, p.stdout, p.stderr

    def expect(self, cond, what, detail=""):
        self.checks += 1
        if not cond:
            raise Failure(what + ("\n" + detail if detail else ""))

    def expect_rc(self, args, want, contains=None, **kw):
        rc, out, err = self.run(args, **kw)
        codes = want if isinstance(want, tuple) else (want,)
        self.expect(rc in codes, f"ptox {' '.join(args)}: exit {rc}, want {codes}", err[-2000:])
        if contains:
            self.expect(contains in err, f"ptox {' '.join(args)}: stderr lacks {contains!r}",
                        err[-2000:])
        return out, err

    def cache_files(self):
        return sorted(os.listdir(self.cache)) if os.path.isdir(self.cache) else []

    def write(self, name, text):
        with open(self.path(name), "w") as f:
            f.write(text)
        return self.path(name)


def sanitizers_of(binary):
    """The sanitizer runtimes `binary` links ("asan", "tsan"), from ldd; empty when none."""
    try:
        libs = subprocess.run(["ldd", binary], capture_output=True, text=True).stdout
    except OSError:
        return set()
    return {name for name in ("asan", "tsan") if f"lib{name}" in libs}


def npy_bytes(descr="<f4", shape=(8, 128), fortran="False", data=None, version=1):
    """A .npy file (or a deliberately broken one) as bytes."""
    dims = ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "")
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': ({dims}), }}"
    pad = 64 - (10 + len(header) + 1) % 64
    header += " " * pad + "\n"
    prefix = b"\x93NUMPY" + bytes([version, 0]) + struct.pack("<H", len(header))
    if data is None:
        n = 1
        for d in shape:
            n *= d
        data = struct.pack(f"<{n}f", *([0.5] * n))
    return prefix + header.encode() + data


def check_no_crash(b, rc, err, what):
    b.expect(rc in (OK, INVALID, UNSUPPORTED, RUNTIME), f"{what}: exit {rc}", err[-1500:])
    b.expect("internal error" not in err, f"{what}: internal error", err[-1500:])
    b.expect("Sanitizer" not in err and "runtime error: load of" not in err,
             f"{what}: sanitizer report", err[-3000:])


def case_malformed_inputs(b):
    """Mutated programs, malformed .npy files and bad --dims: clear errors, never a crash."""
    rng = random.Random(16)
    sources = [open(b.example(n)).read() for n in sorted(os.listdir(b.examples))
               if n.endswith(".pto")]
    alphabet = "%@{}()[]<>,:=x0123456789-.\n tile.load tensor incore for yield"
    for i in range(150):
        text = list(rng.choice(sources))
        for _ in range(rng.randint(1, 8)):
            pos = rng.randrange(len(text))
            op = rng.randrange(3)
            if op == 0:
                del text[pos:pos + rng.randint(1, 20)]
            elif op == 1:
                text.insert(pos, rng.choice(alphabet))
            else:
                text[pos] = rng.choice(alphabet)
        f = b.write(f"mutant{i}.pto", "".join(text))
        rc, _, err = b.run(["opt", f, "--pipeline"], timeout=30)
        check_no_crash(b, rc, err, f"opt mutant {i}")
    prog = b.example("hello_dyn.pto")
    good = npy_bytes()
    variants = {
        "empty": b"", "magic": b"\x93NUMPZ" + good[6:], "truncated header": good[:20],
        "truncated data": good[:-7], "extra data": good + b"\0" * 4,
        "version 9": good[:6] + b"\x09\x00" + good[8:], "fortran": npy_bytes(fortran="True"),
        "big endian": npy_bytes(descr=">f4"), "f8": npy_bytes(descr="<f8"),
        "huge shape": npy_bytes(shape=(1 << 40, 1 << 40), data=b""),
        "negative dim": good.replace(b"(8, 128)", b"(-8, 128)"),
        "rank 1": npy_bytes(shape=(8,), data=struct.pack("<8f", *[1.0] * 8)),
        "wrong cols": npy_bytes(shape=(8, 127)), "garbage dict": good[:10] + b"{" * 60 + good[70:],
        "unterminated": good.replace(b"'descr'", b"'descr"), "nul bytes": b"\0" * 200,
    }
    for name, data in variants.items():
        f = b.path("bad.npy")
        with open(f, "wb") as out:
            out.write(data)
        rc, _, err = b.run(["run", prog, "--inputs", f"{f},{f}"], timeout=30)
        b.expect(rc == INVALID, f".npy {name}: exit {rc}, want 1", err[-1500:])
        b.expect("error: " in err and "bad.npy" in err, f".npy {name}: no message naming it", err)
    dims_cases = ["N=-1", "N=abc", "N=99999999999999999999", "N=", "=5", "N=1,N=2", "Q=3", "N",
                  "N=1e3", "N=0x10", "N= 5", "N=5,M=6", "N=1099511627776"]
    if b.sanitizers:  # their operator new aborts instead of throwing std::bad_alloc
        print("  (sanitized build: --dims N=1099511627776, an impossible allocation, left out)")
        dims_cases.pop()
    for dims in dims_cases:
        rc, _, err = b.run(["run", prog, "--dims", dims], timeout=60)
        check_no_crash(b, rc, err, f"--dims {dims}")
        b.expect(rc in (INVALID, RUNTIME), f"--dims {dims}: exit {rc}", err)
    print(f"  150 mutated programs, {len(variants)} malformed .npy files, "
          f"{len(dims_cases)} --dims cases")


def entry(b):
    """The (key, .so path) of the only cache entry."""
    sos = [f for f in b.cache_files() if f.endswith(".so")]
    b.expect(len(sos) == 1, f"want one cache entry, have {b.cache_files()}")
    return sos[0][:-3], os.path.join(b.cache, sos[0])


def case_cache_corruption(b):
    """Every damage to an entry is detected and rebuilt; nothing else stays in the cache."""
    prog, other = b.example("hello_dyn.pto"), b.example("elementwise_chain_dyn.pto")
    run = ["run", prog, "--dims", "N=100", "--target=cpu-scalar", "--check"]
    b.expect_rc(run, OK)
    key, so = entry(b)
    good = open(so, "rb").read()
    b.expect(b"ptox-cache-key:" + key.encode() in good, "the .so does not carry its key")
    shutil.copytree(b.cache, b.path("other-cache"))
    b.expect_rc(["run", other, "--dims", "N=100,M=30", "--target=cpu-scalar"], OK,
                env={"PTOX_CACHE_DIR": b.path("other-cache")})
    other_key = [f[:-3] for f in os.listdir(b.path("other-cache"))
                 if f.endswith(".so") and f[:-3] != key][0]
    other_so = b.path("other-cache", other_key + ".so")
    damages = {
        "truncate": lambda: open(so, "wb").write(good[:len(good) // 2]),
        "flip": lambda: open(so, "wb").write(good[:999] + bytes([good[999] ^ 0x5A]) + good[1000:]),
        "empty sum": lambda: open(so[:-3] + ".sum", "w").close(),
        "garbage sum": lambda: open(so[:-3] + ".sum", "wb").write(os.urandom(64)),
        "old-format sum": lambda: open(so[:-3] + ".sum", "w").write("0" * 32),
        "other entry": lambda: (shutil.copy(other_so, so),
                                shutil.copy(other_so[:-3] + ".sum", so[:-3] + ".sum")),
        "symlink": lambda: (os.remove(so), os.symlink(other_so, so)),
        "folder": lambda: (os.remove(so), os.mkdir(so), open(so + "/x", "w").close()),
        "fifo sum": lambda: (os.remove(so[:-3] + ".sum"), os.mkfifo(so[:-3] + ".sum")),
        "world-writable": lambda: os.chmod(so, 0o666),
    }
    for name, damage in damages.items():
        damage()
        out, err = b.expect_rc(run, OK, timeout=60)
        b.expect("OK" in out, f"{name}: no OK", out + err)
        st = os.lstat(so)
        b.expect(stat.S_ISREG(st.st_mode) and st.st_mode & 0o022 == 0, f"{name}: not rebuilt")
        b.expect(b.cache_files() == [key + ".so", key + ".sum"],
                 f"{name}: cache holds {b.cache_files()}")
        good = open(so, "rb").read()
    print(f"  {len(damages)} damages detected and rebuilt")


def as_nobody(b):
    if os.geteuid() != 0:
        raise Skip("needs root (to run as nobody with setpriv)")
    if not shutil.which("setpriv"):
        raise Skip("setpriv is missing (util-linux)")
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"]
    # The kernel headers and examples are read from the checkout: one in a folder that only its
    # owner may enter (a `mktemp -d` clone is 0700) cannot be read by another user.
    if subprocess.run(prefix + ["test", "-r", b.example("hello_dyn.pto")]).returncode != 0:
        raise Skip(f"{b.examples} is not readable by other users (nobody), so the setpriv "
                   "checks cannot run: give the checkout's folders o+rx")
    return prefix


def case_cache_trust(b):
    """A cache others can write is refused; a root-owned read-only cache is used read-only."""
    prog = b.example("hello_dyn.pto")
    run = ["run", prog, "--dims", "N=64", "--target=cpu-scalar"]
    b.expect_rc(run, OK)
    for mode in (0o777, 0o775, 0o1777):
        os.chmod(b.cache, mode)
        b.expect_rc(run, RUNTIME, contains="writable by group or others")
    os.chmod(b.cache, 0o755)
    nobody = as_nobody(b)  # below: root's cache seen by another user, and the reverse
    before = b.cache_files()
    out, err = b.expect_rc(run + ["--check"], OK, prefix=nobody)
    b.expect("read-only" not in err, "a hit needs no warning", err)
    out, err = b.expect_rc(["run", b.example("softmax_dyn.pto"), "--dims", "N=20",
                            "--target=cpu-scalar", "--check"], OK, prefix=nobody)
    b.expect("read-only for this user" in err, "no read-only warning", err)
    b.expect(b.cache_files() == before, "a read-only cache was written")
    os.chown(b.cache, 65534, 65534)
    b.expect_rc(run, RUNTIME, contains="it belongs to uid 65534")
    os.chown(b.cache, 0, 0)
    print("  group/world-writable refused, another user's refused, root's used read-only")


def case_concurrency(b):
    """Many runs at once on one fresh cache: all succeed alike, one valid entry remains."""
    prog = b.example("softmax_dyn.pto")
    results = [None] * 16
    def one(i):
        results[i] = b.run(["run", prog, "--dims", "N=33", "--target=cpu", "--check"],
                           timeout=300)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for rc, out, err in results:
        b.expect(rc == OK and "OK" in out, f"a concurrent run failed: exit {rc}", err[-1500:])
        b.expect(out == results[0][1], "concurrent runs disagree", out + results[0][1])
    files = b.cache_files()
    b.expect(len(files) == 2, f"cache holds {files}")
    print(f"  {len(results)} concurrent runs on one fresh cache")


def case_thread_limits(b):
    """Thread counts too high, malformed, or refused by the host: never an abort."""
    prog = b.example("hello_dyn.pto")
    base = ["run", prog, "--dims", "N=300", "--target=cpu", "--check"]
    b.expect_rc(base, OK)
    b.expect_rc(base + ["--threads=100000"], INVALID, contains="1024")
    for value in ("99999999999", "-5", "lots"):
        b.expect_rc(base, OK, env={"PTOX_NUM_THREADS": value}, contains="ignoring PTOX_NUM_THREADS")
    b.expect_rc(base + ["--threads=64"], OK, env={"PTOX_FAULT": "thread:1+"},
                contains="cannot start worker thread")
    nobody = as_nobody(b)
    cache = b.path("nobody-cache")
    os.mkdir(cache, 0o700)
    os.chown(cache, 65534, 65534)
    env = {"PTOX_CACHE_DIR": cache}
    b.expect_rc(base, OK, env=env, prefix=nobody)  # compiled without a limit first
    if not shutil.which("prlimit"):
        raise Skip("prlimit is missing (util-linux)")
    # LeakSanitizer needs a thread of its own at exit, which the limit refuses.
    limited_env = dict(env, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    for limit in (1, 4, 9):  # RLIMIT_NPROC counts the threads of all of nobody's processes
        limited = nobody + ["prlimit", f"--nproc={limit}", "--"]
        out, err = b.expect_rc(base + ["--threads=64"], OK, env=limited_env, prefix=limited)
        b.expect("cannot start worker thread" in err, f"ulimit -u {limit}: no warning", err)
    print("  --threads, PTOX_NUM_THREADS, PTOX_FAULT=thread and ulimit -u 1 / 4 / 9")


def mount_tmpfs(b, name, size="64k"):
    if os.geteuid() != 0:
        raise Skip("needs root to mount a tmpfs")
    where = b.path(name)
    os.mkdir(where)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", where],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("cannot mount a tmpfs here: " + p.stderr.strip())
    return where


def case_disk_full(b):
    """A full disk: exit 4, no output of the run and no partial file left; the same for a full
    compile cache."""
    disk = mount_tmpfs(b, "disk")
    try:
        prog = b.write("two.pto", TWO_OUTPUTS)
        out_dir = os.path.join(disk, "out")
        b.expect_rc(["run", prog, "--dims", "N=64", "--outputs", out_dir], OK)
        before = {f: open(os.path.join(out_dir, f), "rb").read() for f in os.listdir(out_dir)}
        # %b fits, %c (N=256: 128 KiB) does not.
        b.expect_rc(["run", prog, "--dims", "N=256", "--outputs", out_dir, "--seed", "5"],
                    RUNTIME, contains="No space left on device")
        after = {f: open(os.path.join(out_dir, f), "rb").read() for f in os.listdir(out_dir)}
        b.expect(after == before, f"outputs changed or left behind: {sorted(after)}")
        b.expect_rc(["run", prog, "--dims", "N=256", "--outputs", os.path.join(disk, "new")],
                    RUNTIME)
        b.expect(not os.path.exists(os.path.join(disk, "new")), "a partial output folder stays")
        cache = os.path.join(disk, "cache")
        with open(os.path.join(disk, "filler"), "wb") as f:
            try:
                f.write(b"\0" * (1 << 20))
            except OSError:
                pass  # the disk is full now
        b.expect_rc(["run", b.example("hello_dyn.pto"), "--dims", "N=8", "--target=cpu-scalar"],
                    RUNTIME, env={"PTOX_CACHE_DIR": cache}, contains="No space left on device")
        b.expect(os.listdir(cache) == [], f"the full cache holds {os.listdir(cache)}")
    finally:
        subprocess.run(["umount", disk])
    print("  outputs and compile cache on a full 64 KiB tmpfs")


def gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:  # it may be reaped between the two looks
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def case_kill_during_compile(b):
    """kill -9 of ptox while it compiles ends the compiler too; the next build sweeps its files."""
    cc = b.write("hanging-cc", f"""#!/bin/sh
(sleep 3; echo late > {b.path('late')}) &
echo $! > {b.path('helper.pid')}
sleep 60
""")
    os.chmod(cc, 0o755)
    prog = b.example("hello_dyn.pto")
    env = dict(os.environ, PTOX_CACHE_DIR=b.cache, PTOX_CXX=cc)
    p = subprocess.Popen([b.ptox, "run", prog, "--dims", "N=64", "--target=cpu-scalar"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not (os.path.exists(b.path("helper.pid"))
               and open(b.path("helper.pid")).read().endswith("\n")):
        b.expect(time.time() < deadline, "the compiler never started")
        time.sleep(0.01)
    helper = int(open(b.path("helper.pid")).read())
    p.send_signal(signal.SIGKILL)
    p.wait()
    deadline = time.time() + 2
    while not gone(helper) and time.time() < deadline:
        time.sleep(0.01)
    try:
        b.expect(gone(helper), "the compiler's helper survived ptox")
        time.sleep(3.5)
        b.expect(not os.path.exists(b.path("late")), "the compile wrote after ptox died")
    finally:  # what a broken ptox left running goes (its group, unless it is ours)
        if not gone(helper):
            try:
                group = os.getpgid(helper)
                if group != os.getpgrp():
                    os.killpg(group, signal.SIGKILL)
                else:
                    os.kill(helper, signal.SIGKILL)
            except ProcessLookupError:
                pass
    left = b.cache_files()
    b.expect(left and all(".tmp." in f for f in left), f"unexpected leftovers {left}")
    b.expect_rc(["run", prog, "--dims", "N=64", "--target=cpu-scalar", "--check"], OK)
    b.expect(len(b.cache_files()) == 2, f"not swept: {b.cache_files()}")
    print("  compiler group killed with ptox; its lock and source swept by the next build")


def case_fifo_and_folder_inputs(b):
    """FIFOs and folders as program or input: refused at once (exit 1), never waited on."""
    fifo = b.path("fifo.npy")
    os.mkfifo(fifo)
    prog = b.example("hello_dyn.pto")
    for args in (["run", prog, "--inputs", f"{fifo},{fifo}"], ["run", fifo], ["opt", fifo],
                 ["opt", b.tmp], ["run", b.tmp], ["run", prog, "--inputs", f"{b.tmp},{b.tmp}"]):
        b.expect_rc(args, INVALID, contains="not a regular file", timeout=20)
    print("  6 FIFO / folder cases refused")


def case_hostile_compiler_path(b):
    """A compiler path full of shell metacharacters is a path, never a command line."""
    weird = b.path("dir with spaces; touch PWNED $(touch PWNED2) `touch PWNED3`")
    os.mkdir(weird)
    cc = os.path.join(weird, "g++ & echo hi")
    gxx = shutil.which("g++") or shutil.which("c++")
    if not gxx:
        raise Skip("no g++ to wrap")
    os.symlink(gxx, cc)
    b.expect_rc(["run", b.example("hello_dyn.pto"), "--dims", "N=64", "--target=cpu-scalar",
                 "--check"], OK, env={"PTOX_CXX": cc})
    for marker in ("PWNED", "PWNED2", "PWNED3"):
        b.expect(not os.path.exists(marker) and not os.path.exists(b.path(marker)),
                 f"a shell ran: {marker} exists")
    print("  compiler path with ; $() `` & and spaces")


CASES = {
    "malformed_inputs": case_malformed_inputs,
    "cache_corruption": case_cache_corruption,
    "cache_trust": case_cache_trust,
    "concurrency": case_concurrency,
    "thread_limits": case_thread_limits,
    "disk_full": case_disk_full,
    "kill_during_compile": case_kill_during_compile,
    "fifo_and_folder_inputs": case_fifo_and_folder_inputs,
    "hostile_compiler_path": case_hostile_compiler_path,
}


def run_case(name, ptox, examples):
    b = Battery(ptox, examples)
    start = time.time()
    try:
        CASES[name](b)
    except Skip as s:
        print(f"SKIP {name}: {s}")
        return SKIP
    except Failure as f:
        print(f"FAIL {name} (after {b.checks} checks): {f}")
        return 1
    finally:
        for mnt in ("disk",):
            if os.path.ismount(b.path(mnt)):
                subprocess.run(["umount", b.path(mnt)])
        subprocess.run(["chmod", "-R", "u+rwX", b.tmp], capture_output=True)
        shutil.rmtree(b.tmp, ignore_errors=True)
    print(f"PASS {name}: {b.checks} checks in {time.time() - start:.1f} s")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ptox", required=True)
    ap.add_argument("--examples", required=True)
    ap.add_argument("--case", required=True, choices=sorted(CASES) + ["all"])
    args = ap.parse_args()
    names = sorted(CASES) if args.case == "all" else [args.case]
    # The cases count a cache's program entries exactly; its precompiled preludes (a folder of
    # their own, built on a first compile) are checked by tests/unit/driver/prelude_test.cc.
    os.environ["PTOX_PCH"] = "0"
    codes = [run_case(n, args.ptox, args.examples) for n in names]
    if any(c == 1 for c in codes):
        return 1
    return SKIP if all(c == SKIP for c in codes) else 0


if __name__ == "__main__":
    sys.exit(main())
