#!/usr/bin/env bash
# The Dockerfile and docker-compose.yml on a real container engine: Debian's podman (with runc),
# driven through its Docker-compatible API by docker-compose, the compose file unchanged. The base
# images no reachable registry can give are built here as stand-ins (deploy/stand-ins/, reused
# while their recipe is unchanged), the Dockerfile's targets are built with podman and tagged as
# the compose file names them, then test/containers/compose.engine.ts runs the system. Whatever
# happens, the test's containers, volumes and network are removed and the engine stopped.
# Not part of `bun test` (minutes, and root for podman and debootstrap). Usage: as root, after
# scripts/bootstrap.sh,
#   scripts/container-test.sh [bun test options, e.g. -t 'restart policy']
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
phase() { echo "container-test: $1 ($((SECONDS - started)) s)" >&2; }

missing=()
for command in podman runc debootstrap docker-compose; do
  command -v "$command" >/dev/null 2>&1 || missing+=("$command")
done
if [ ${#missing[@]} -gt 0 ]; then
  phase "installing ${missing[*]} from Debian"
  apt-get update -qq >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
export CONTAINERS_CONF="$PWD/deploy/podman/containers.conf"

phase "stand-in base images"
deploy/stand-ins/build.sh

# Whatever compose could not remove: the project's containers, volumes and network.
remove_project() {
  local filter="label=com.docker.compose.project=$1"
  podman ps -aq --filter "$filter" | xargs -r podman rm -f -v >/dev/null
  podman volume ls -q --filter "$filter" | xargs -r podman volume rm -f >/dev/null
  podman network ls -q --filter "$filter" | xargs -r podman network rm -f >/dev/null
}
# Left by a run that was killed before it could clean up (its process is gone).
for stale in $(podman ps -a --format '{{ index .Labels "com.docker.compose.project" }}' |
  grep -E '^citizen-staking-ct-[0-9]+$' | sort -u); do
  kill -0 "${stale##*-}" 2>/dev/null || remove_project "$stale"
done

work="$(mktemp -d)"
project="citizen-staking-ct-$$"
cleanup() {
  local code=$?
  set +e
  if [ -S "$work/podman.sock" ]; then
    export DOCKER_HOST="unix://$work/podman.sock" COMPOSE_PROJECT_NAME="$project"
    # A failure is read from the services' and the engine's last lines, before they go (the
    # engine's complaints about systemd's missing health check timers left out).
    if [ "$code" != 0 ]; then
      docker-compose --profile devnet logs --no-color --tail 40 >&2
      grep -v 'systemd' "$work/podman-service.log" | tail -20 >&2
    fi
    docker-compose --profile devnet down --volumes --remove-orphans --timeout 10 >/dev/null 2>&1
  fi
  remove_project "$project"
  for pid in "${timers:-}" "${service:-}"; do
    [ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; }
  done
  rm -rf "$work"
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The project's images, named as docker-compose.yml names them. The docker format keeps the
# HEALTHCHECK (OCI images have none); host network: `bun install` reaches the npm registry the
# way this machine does.
builds="$(docker-compose --profile devnet config |
  bun -e 'const { services } = Bun.YAML.parse(await Bun.stdin.text());
    const built = new Map();
    for (const s of Object.values(services)) if (s.build) built.set(s.image, s.build.target);
    for (const [image, target] of built) console.log(target, image);')"
# One run at a time builds and prunes (another run's build would lose its layers).
exec 8>"${TMPDIR:-/tmp}/citizen-staking-images.lock"
flock 8
while read -r target image; do
  phase "building target $target as $image"
  podman build --quiet --format docker --pull=never --network host \
    --target "$target" --tag "$image" . >/dev/null
done <<<"$builds"
# What earlier runs built and these builds untagged (every image built on a stand-in inherits
# its label), so that a run per commit does not fill the disk.
podman image prune --force --filter label=io.citizen-staking.stand-in >/dev/null
flock --unlock 8

phase "starting podman's Docker API"
podman system service --time=0 "unix://$work/podman.sock" 2>"$work/podman-service.log" &
service=$!
for _ in $(seq 100); do [ -S "$work/podman.sock" ] && break; sleep 0.1; done
test/containers/healthcheck-timers.sh "$project" &
timers=$!

phase "running the compose file"
DOCKER_HOST="unix://$work/podman.sock" COMPOSE_PROJECT_NAME="$project" \
  bun test --timeout 600000 ./test/containers/compose.engine.ts "$@"
phase "done"
