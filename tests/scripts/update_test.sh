#!/usr/bin/env bash
# scripts/update.sh against scratch clones, without building anything: the repository under test
# holds the real update.sh and a stub build.sh that logs its arguments and makes a stub
# build/release/ptox whose `doctor` is logged too and exits with $STUB_DOCTOR_RC. Each case starts
# from a fresh clone of a bare "upstream" and checks the exit status, the message, HEAD, the files
# and the log. Usage: update_test.sh SOURCE_DIR. Exit 0 pass, 1 fail, 77 skip (no git).
# shellcheck disable=SC2317  # the predicates are called through check, which shellcheck misses
set -uo pipefail
src=$(cd "${1:?usage: update_test.sh SOURCE_DIR}" && pwd)
command -v git >/dev/null || { echo "skip: git not found"; exit 77; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Hermetic git: none of this user's or machine's configuration, nor a repository from outside.
unset GIT_DIR GIT_WORK_TREE GIT_INDEX_FILE GIT_OBJECT_DIRECTORY GIT_CEILING_DIRECTORIES
export HOME=$tmp/home GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
mkdir -p "$HOME"
export UPDATE_TEST_LOG=$tmp/log STUB_DOCTOR_RC=0

# The upstream: c1, then c2 (edits README.txt, adds new.txt), pushed to the bare origin.git.
repo_init() {  # repo_init DIR: local identity, so commits work without a global one
  git -C "$1" config user.name "update test"
  git -C "$1" config user.email "update-test@example.invalid"
}
git init -q -b main "$tmp/author"
repo_init "$tmp/author"
mkdir -p "$tmp/author/scripts"
cp "$src/scripts/update.sh" "$tmp/author/scripts/update.sh"
cat >"$tmp/author/scripts/build.sh" <<'EOF'
#!/usr/bin/env bash
# Stub of the build: logs its arguments, makes a stub CLI whose `doctor` is logged too.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "build $*" >>"$UPDATE_TEST_LOG"
mkdir -p build/release
printf '%s\n' '#!/usr/bin/env bash' 'echo "$*" >>"$UPDATE_TEST_LOG"' 'exit "$STUB_DOCTOR_RC"' \
  >build/release/ptox
chmod +x build/release/ptox
EOF
echo /build/ >"$tmp/author/.gitignore"
echo one >"$tmp/author/README.txt"
git -C "$tmp/author" add -A
git -C "$tmp/author" commit -q -m c1
c1=$(git -C "$tmp/author" rev-parse HEAD)
echo two >"$tmp/author/README.txt"
echo upstream >"$tmp/author/new.txt"
git -C "$tmp/author" add -A
git -C "$tmp/author" commit -q -m c2
c2=$(git -C "$tmp/author" rev-parse HEAD)
git init -q --bare -b main "$tmp/origin.git"
git -C "$tmp/author" push -q "$tmp/origin.git" main

n=0
clone() {  # clone: a fresh clone of origin.git at c2 (up to date), in $dir
  n=$((n + 1))
  dir=$tmp/clone$n
  git clone -q "$tmp/origin.git" "$dir"
  repo_init "$dir"
}
clone_behind() {  # clone_behind: a clone at c1 that has not fetched c2 yet (a real fetch is needed)
  clone
  git -C "$dir" reset -q --hard "$c1"
  git -C "$dir" update-ref refs/remotes/origin/main "$c1"
}
update() {  # update ARGS...: run the clone's update.sh; sets $rc, leaves $tmp/out and $tmp/err
  : >"$UPDATE_TEST_LOG"
  rc=0
  (cd "$dir" && bash scripts/update.sh "$@") >"$tmp/out" 2>"$tmp/err" || rc=$?
}

# Assertions: `check WHAT COMMAND...` notes WHAT when COMMAND fails; `verdict CASE` prints one line.
problems=()
failed=0
check() { "${@:2}" || problems+=("$1"); }
verdict() {
  if ((${#problems[@]})); then
    echo "FAIL: $1: $(IFS=';'; echo "${problems[*]}") (exit $rc)"
    sed 's/^/    | /' "$tmp/err" "$tmp/out"
    failed=1
  else
    echo "ok: $1"
  fi
  problems=()
}
head_at() { [ "$(git -C "$dir" rev-parse HEAD)" = "$1" ]; }
on_branch() { git -C "$dir" symbolic-ref -q HEAD >/dev/null; }
said() { grep -qiE -e "$1" "$tmp/err"; }  # update.sh talks on stderr
logged() { grep -qx "$1" "$UPDATE_TEST_LOG"; }
built() { grep -q '^build' "$UPDATE_TEST_LOG"; }
content() { [ "$(cat "$dir/$1")" = "$2" ]; }
not() { ! "$@"; }

clone_behind
update --jobs 3
check "exit 0" test "$rc" = 0
check "HEAD at upstream's" head_at "$c2"
check "says from/to" said "moved from ${c1:0:7} to ${c2:0:7}"
check "build --jobs 3" logged "build --jobs 3"
check "doctor ran" logged doctor
verdict "behind and clean: fast-forwards, builds, runs the doctor"

clone
update
check "exit 0" test "$rc" = 0
check "HEAD unchanged" head_at "$c2"
check "says up to date" said "up to date"
check "build without -j" logged "build "
check "doctor ran" logged doctor
verdict "up to date: no change, builds, runs the doctor"

clone
echo local >>"$dir/README.txt"
git -C "$dir" commit -q -am local
ahead=$(git -C "$dir" rev-parse HEAD)
update
check "exit 0" test "$rc" = 0
check "HEAD unchanged" head_at "$ahead"
check "says ahead" said "1 commit.* ahead"
check "built" built
verdict "ahead of upstream: no change, says so, builds"

clone_behind
echo mine >>"$dir/README.txt"
update
check "exit non-zero" not test "$rc" = 0
check "HEAD unchanged" head_at "$c1"
check "change intact" content README.txt "$(printf 'one\nmine')"
check "lists the file" said "M README.txt"
check "says commit or stash" said "commit or stash"
check "mentions --no-pull" said "--no-pull"
check "no build" not built
verdict "unstaged change to a tracked file: refuses"

clone_behind
echo mine >>"$dir/README.txt"
git -C "$dir" add README.txt
update
check "exit non-zero" not test "$rc" = 0
check "HEAD unchanged" head_at "$c1"
check "change intact" content README.txt "$(printf 'one\nmine')"
check "still staged" not git -C "$dir" diff --cached --quiet
check "lists the file" said "M +README.txt"
check "no build" not built
verdict "staged change to a tracked file: refuses"

clone_behind
git -C "$dir" checkout -q --detach "$c1"
update
check "exit non-zero" not test "$rc" = 0
check "still detached" not on_branch
check "at the same commit" head_at "$c1"
check "says detached, which commit" said "detached at ${c1:0:7}"
check "says how to get back" said "git switch"
check "no build" not built
verdict "detached HEAD: refuses"

clone_behind
echo local >>"$dir/README.txt"
git -C "$dir" commit -q -am local
local_head=$(git -C "$dir" rev-parse HEAD)
update
check "exit non-zero" not test "$rc" = 0
check "HEAD unchanged" head_at "$local_head"
check "says diverged, 1 and 1" said "1 local commit.*, 1 commit"
check "says fast-forward only" said "only fast-forwards"
check "no build" not built
verdict "diverged from upstream: refuses"

clone
git -C "$dir" branch -q --unset-upstream
update
check "exit non-zero" not test "$rc" = 0
check "says no upstream" said "no upstream"
check "says --set-upstream-to" said "git branch --set-upstream-to"
check "no build" not built
verdict "no upstream: refuses"

clone_behind
echo mine >>"$dir/README.txt"
update --no-pull --jobs 3
check "exit 0" test "$rc" = 0
check "HEAD unchanged" head_at "$c1"
check "change intact" content README.txt "$(printf 'one\nmine')"
check "no fetch" test ! -e "$dir/.git/FETCH_HEAD"
check "build --jobs 3" logged "build --jobs 3"
check "doctor ran" logged doctor
verdict "--no-pull with local changes: builds them as they are"

clone
update --skip-doctor
check "exit 0" test "$rc" = 0
check "built" built
check "no doctor" not logged doctor
verdict "--skip-doctor: builds, no doctor"

clone
STUB_DOCTOR_RC=3 update
check "exit 3, the doctor's" test "$rc" = 3
check "doctor ran" logged doctor
check "says the doctor failed" said "doctor"
verdict "failing doctor: its exit status is update.sh's"

clone_behind
echo mine >"$dir/new.txt"  # c2 adds new.txt: the fast-forward would overwrite it
update
check "exit non-zero" not test "$rc" = 0
check "HEAD unchanged" head_at "$c1"
check "untracked file intact" content new.txt mine
check "says untracked" said "untracked"
check "no build" not built
verdict "untracked file in the fast-forward's way: stops"

clone
for args in "--jobs 0" "--jobs x" "--jobs" "--bogus" "--jobs=-1"; do
  # shellcheck disable=SC2086  # split on purpose
  update $args
  check "'$args': exit 2" test "$rc" = 2
  check "'$args': usage" said "^usage:"
  check "'$args': no build" not built
done
update --help
check "--help: exit 0, usage on stdout" grep -q "^usage:" "$tmp/out"
check "--help: no build" not built
verdict "bad arguments: exit 2 with usage; --help"

exit $failed
