#!/usr/bin/env bash
# Brings this checkout up to date in one step: fast-forwards the current branch to its upstream,
# rebuilds (scripts/build.sh: missing packages, Release build, Python package) and runs
# `ptox doctor`. It never switches branches and never discards local work: a detached HEAD, local
# changes to tracked files, a branch without upstream or one that has diverged from it make it
# stop before anything changes, saying what to do. --no-pull skips git and builds the tree as it is.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  echo "usage: scripts/update.sh [--no-pull] [--jobs N] [--skip-doctor]"
  echo "  --no-pull      no git: build the checkout as it is, local changes included"
  echo "  --jobs N       compile with N parallel jobs (passed to scripts/build.sh)"
  echo "  --skip-doctor  do not run 'build/release/ptox doctor' after the build"
}

say() { echo "update: $*" >&2; }
refuse() {  # refuse FIRST_LINE [MORE_LINES...]: explain on stderr and stop (exit 1)
  echo "update: $1" >&2
  shift
  (($#)) && printf '  %s\n' "$@" >&2
  exit 1
}

# Only fast-forwards; stops before changing anything in every state where a pull could lose or
# tangle local work.
pull() {
  command -v git >/dev/null || refuse "git is not installed; run with --no-pull to build as it is."
  # The top of a checkout of its own, not a copy unpacked inside some other repository.
  [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ] ||
    refuse "$(pwd) is not a git checkout; run with --no-pull to build it as it is."
  local branch
  if ! branch=$(git symbolic-ref -q --short HEAD); then
    refuse "HEAD is detached at $(git log -1 --format='%h (%s)' HEAD): no branch to update." \
      "Get back on one first: git switch <branch> (or git switch -c <new-branch> to keep this" \
      "commit on a branch of its own); or run with --no-pull to build this commit as it is."
  fi
  git update-index -q --refresh >/dev/null 2>&1 || true  # a touched but unchanged file is clean
  if ! git diff-index --quiet HEAD --; then
    refuse "local changes to tracked files:" \
      "$(git status --short --untracked-files=no | sed 's/^/  /')" \
      "Commit or stash them (git commit / git stash) before updating," \
      "or run with --no-pull to build them as they are."
  fi
  local upstream
  if ! upstream=$(git rev-parse -q --abbrev-ref --symbolic-full-name '@{u}' 2>/dev/null); then
    refuse "branch '$branch' has no upstream, so there is nothing to pull from." \
      "Set one with: git branch --set-upstream-to=origin/$branch (or another remote's branch);" \
      "or run with --no-pull to build it as it is."
  fi
  local remote
  remote=$(git config "branch.$branch.remote" || echo .)
  if [ "$remote" != . ]; then
    say "fetching $remote"
    git fetch -q "$remote" || refuse "git fetch $remote failed (see above); nothing was changed."
  fi
  local counts ahead behind
  counts=$(git rev-list --left-right --count 'HEAD...@{u}')
  read -r ahead behind <<<"$counts"
  if ((ahead && behind)); then
    refuse "'$branch' and its upstream '$upstream' have diverged:" \
      "$ahead local commit(s) not in $upstream, $behind commit(s) of $upstream not here." \
      "update.sh only fast-forwards: merge or rebase yourself (git rebase $upstream," \
      "or git merge $upstream) and run it again;" \
      "or run with --no-pull to build the branch as it is."
  fi
  if ((behind == 0)); then
    if ((ahead)); then
      say "'$branch' is $ahead commit(s) ahead of '$upstream' (not pushed): nothing to pull."
    else
      say "'$branch' is up to date with '$upstream' ($(git rev-parse --short HEAD))."
    fi
    return
  fi
  local from
  from=$(git rev-parse --short HEAD)
  if ! git merge -q --ff-only '@{u}'; then
    refuse "the fast-forward to '$upstream' stopped: '$branch' is still at $from." \
      "Git says why above: typically an untracked file that the update would overwrite." \
      "Move that file away and run update.sh again."
  fi
  say "'$branch' moved from $from to $(git rev-parse --short HEAD)" \
    "($behind new commit(s) from '$upstream')."
}

# Everything runs from main, which bash has read in full before it starts: bash reads a script as it
# goes, and the fast-forward may rewrite this very file.
main() {
  local do_pull=1 doctor=1 n
  local build_args=()
  while (($#)); do
    case $1 in
      --no-pull) do_pull=0 ;;
      --skip-doctor) doctor=0 ;;
      --jobs | --jobs=*)
        if [ "$1" = --jobs ]; then
          (($# >= 2)) || { echo "update: --jobs needs a number" >&2; usage >&2; exit 2; }
          n=$2
          shift
        else
          n=${1#--jobs=}
        fi
        if ! [[ $n =~ ^[1-9][0-9]*$ ]]; then
          echo "update: --jobs wants a positive integer, not '$n'" >&2
          usage >&2
          exit 2
        fi
        build_args=(--jobs "$n")
        ;;
      -h | --help) usage; exit 0 ;;
      *) echo "update: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
    shift
  done

  if ((do_pull)); then
    pull
  else
    say "--no-pull: building the checkout as it is"
  fi
  bash scripts/build.sh "${build_args[@]}"
  if ((doctor)); then
    local rc=0
    build/release/ptox doctor || rc=$?
    ((rc == 0)) || say "ptox doctor found a problem (exit $rc); see its report above."
    exit "$rc"
  fi
}

main "$@"
