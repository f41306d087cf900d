#!/usr/bin/env bash
# Builds and runs the ptox development container (docker/Dockerfile).
#   docker/run.sh build [--target deps|dist] [docker build options...] [-- docker build args...]
#   docker/run.sh run [command [args...]]     (no command: an interactive shell)
# Only bash builtins besides docker (and nvidia-smi, if present), so that
# tests/scripts/docker_test.sh can run it with a PATH that holds no docker, or a fake one.
set -euo pipefail

image=${PTOX_IMAGE:-ptox:dev}
# Named volumes; set one to the empty string to run without it.
src_volume=${PTOX_SRC_VOLUME-ptox-src}
cache_volume=${PTOX_CACHE_VOLUME-ptox-cache}
gpus=${PTOX_GPUS:-auto}

here=${BASH_SOURCE[0]}
if [[ $here == */* ]]; then here=${here%/*}; else here=.; fi
root=$(cd "$here/.." && pwd)

usage() {
  local text
  IFS= read -r -d '' text <<EOF || true
usage: docker/run.sh build [--target deps|dist] [--no-cache ...] [-- docker build args...]
       docker/run.sh run [command [args...]]
       docker/run.sh --help

build  docker build -f docker/Dockerfile -t \$PTOX_IMAGE <repo root>. The default target, dist,
       installs (scripts/setup.sh), builds (scripts/build.sh) and tests (scripts/test.sh, as CI)
       the project; --target deps stops after setup.sh. Other options, and all the words
       after --, go to docker build (-- --build-arg HTTP_PROXY=http://proxy:3128).
run    docker run --rm -i (-t on a terminal) the image, with the command given or a shell:
         volume $src_volume (PTOX_SRC_VOLUME) on /opt/ptox: the source tree with its build/ and
           .venv, your working copy. Docker fills it from the image the first time; after that
           it keeps your edits, and a rebuilt image does not replace it (docker volume rm it).
         volume $cache_volume (PTOX_CACHE_VOLUME) on /cache: the compile cache,
           PTOX_CACHE_DIR=/cache/ptox, kept across runs.
         --gpus all when the host has an NVIDIA GPU and docker the NVIDIA container toolkit.

environment:
  PTOX_IMAGE         image tag                          (default ptox:dev)
  PTOX_SRC_VOLUME    source volume, '' for none         (default ptox-src)
  PTOX_CACHE_VOLUME  compile-cache volume, '' for none  (default ptox-cache)
  PTOX_GPUS          auto | all | none                  (default auto)
EOF
  printf '%s' "$text"
}

bad_usage() {
  echo "run.sh: $1" >&2
  usage >&2
  exit 2
}

# Says plainly what is wrong when docker cannot be used, before docker's own words.
need_docker() {
  if ! command -v docker >/dev/null 2>&1; then
    echo "run.sh: docker is not installed (no 'docker' on PATH): install Docker Engine" \
      "(https://docs.docker.com/engine/install/debian/, or apt-get install docker.io)" >&2
    exit 1
  fi
  local err
  if ! err=$(docker info 2>&1 >/dev/null); then
    echo "run.sh: cannot reach the Docker daemon ('docker info' failed): is it running" \
      "(systemctl start docker), and may this user use it (the docker group, or sudo)?" >&2
    [ -z "$err" ] || printf '  docker: %s\n' "${err//$'\n'/$'\n'  docker: }" >&2
    exit 1
  fi
}

# Whether the host has an NVIDIA GPU, and whether docker can hand it to a container: --gpus needs
# the NVIDIA container toolkit (docker's nvidia runtime, or its hook on the daemon's host).
want_gpus() {
  case $gpus in
    all) return 0 ;;
    none) return 1 ;;
  esac
  local gpu=0
  if [ -e /dev/nvidia0 ]; then gpu=1; fi
  if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then gpu=1; fi
  ((gpu)) || return 1
  local runtimes
  runtimes=$(docker info --format '{{json .Runtimes}}' 2>/dev/null || true)
  if [[ $runtimes == *nvidia* ]] || command -v nvidia-container-runtime-hook >/dev/null 2>&1; then
    return 0
  fi
  echo "run.sh: this host has an NVIDIA GPU, but docker has no NVIDIA container toolkit" \
    "(nvidia-container-toolkit): running without --gpus" >&2
  return 1
}

cmd_build() {
  local target=() extra=()
  while (($#)); do
    case $1 in
      --target | --target=*)
        local t
        if [ "$1" = --target ]; then
          (($# >= 2)) || bad_usage "--target wants deps or dist"
          t=$2
          shift
        else
          t=${1#--target=}
        fi
        case $t in
          deps | dist) target=(--target "$t") ;;
          *) bad_usage "--target wants deps or dist, not '$t'" ;;
        esac
        ;;
      --)
        shift
        extra+=("$@")
        break
        ;;
      -*) extra+=("$1") ;;
      *) bad_usage "build takes options only, not '$1' (docker build's own after --)" ;;
    esac
    shift
  done
  need_docker
  docker build -f "$root/docker/Dockerfile" -t "$image" ${target[@]+"${target[@]}"} \
    ${extra[@]+"${extra[@]}"} "$root"
}

cmd_run() {
  case $gpus in
    auto | all | none) ;;
    *) bad_usage "PTOX_GPUS wants auto, all or none, not '$gpus'" ;;
  esac
  need_docker
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    echo "run.sh: no image $image here: build it first (docker/run.sh build)" >&2
    exit 1
  fi
  local args=(--rm -i)
  if [ -t 0 ] && [ -t 1 ]; then args+=(-t); fi
  if [ -n "$src_volume" ]; then
    if docker volume inspect "$src_volume" >/dev/null 2>&1; then
      echo "run.sh: /opt/ptox is volume $src_volume, your working copy from an earlier run (for" \
        "this image's tree instead: docker volume rm $src_volume)" >&2
    fi
    args+=(-v "$src_volume:/opt/ptox")
  fi
  if [ -n "$cache_volume" ]; then args+=(-v "$cache_volume:/cache"); fi
  if want_gpus; then args+=(--gpus all); fi
  if (($# == 0)); then set -- bash; fi
  docker run "${args[@]}" "$image" "$@"
}

(($#)) || bad_usage "which command: build or run?"
case $1 in
  build) shift; cmd_build "$@" ;;
  run) shift; cmd_run "$@" ;;
  -h | --help | help) usage ;;
  *) bad_usage "unknown command '$1'" ;;
esac
