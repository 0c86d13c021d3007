#!/usr/bin/env bash
# Builds the stand-ins for the base images the Dockerfile and docker-compose.yml name, which no
# registry reachable from our machines can give, and tags each with the name the files use. Each
# image is labelled with a hash of its recipe (this folder's files for it, and its base's hash):
# a stand-in whose label matches is reused from podman's image store, any other is rebuilt, so a
# changed recipe takes effect and an unchanged one costs nothing. Root only (debootstrap).
# Usage: deploy/stand-ins/build.sh   (podman, debootstrap and npm on PATH)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

LABEL=io.citizen-staking.stand-in
# name  tag the files use
STAND_INS=(
  "debian docker.io/library/debian:bookworm-slim"
  "bun docker.io/oven/bun:1.4.5"
  "postgres docker.io/library/postgres:16"
  "redis docker.io/library/redis:7"
  "foundry ghcr.io/foundry-rs/foundry:v1.7.1"
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# The CAs npm trusts on this machine (where a TLS-inspecting proxy stands between it and the
# registry, they include the proxy's), for a recipe that installs from npm inside a container.
machine_ca="$work/machine-ca.crt"
cafile="$(npm config get cafile 2>/dev/null || true)"
if [ -n "$cafile" ] && [ "$cafile" != "null" ] && [ -f "$cafile" ]; then
  cp "$cafile" "$machine_ca"
else
  : >"$machine_ca"
fi

recipe_hash() { # NAME BASE_HASH
  (
    cd "$here"
    echo "base $2"
    find "$1" -type f -print0 | sort -z | xargs -0 sha256sum
    if grep -qs machine-ca.crt "$1/Containerfile"; then sha256sum <"$machine_ca"; fi
  ) | sha256sum | cut -c1-16
}

current_label() { # TAG
  podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$1" 2>/dev/null || true
}

build_debian() { # TAG KEY
  local root="$work/debian-root"
  "$here/debian/rootfs.sh" "$root"
  tar --numeric-owner -C "$root" -c . |
    podman import --quiet --change 'CMD ["bash"]' --change "LABEL $LABEL=debian:$2" - "$1" >/dev/null
}

build_image() { # NAME TAG KEY
  local context="$work/$1" log="$work/$1.log"
  mkdir "$context"
  cp -a "$here/$1/." "$context/"
  cp "$machine_ca" "$context/"
  if [ -f "$context/packages.npm" ]; then
    while read -r spec; do
      [ -z "$spec" ] || npm pack --silent --pack-destination "$context" "$spec" >/dev/null
    done <"$context/packages.npm"
  fi
  # Host network: apt and npm reach their registries the way the machine does. Never pull: the
  # bases are the stand-ins built above.
  if ! podman build --layers=false --pull=never --network host --label "$LABEL=$1:$3" -t "$2" \
    -f "$context/Containerfile" "$context" >"$log" 2>&1; then
    cat "$log" >&2
    echo "stand-in $2: the build failed (its log is above)" >&2
    return 1
  fi
}

exec 9>"${TMPDIR:-/tmp}/citizen-staking-stand-ins.lock"
flock 9 # two runs at once build each stand-in once

base_hash=""
for entry in "${STAND_INS[@]}"; do
  read -r name tag <<<"$entry"
  key="$(recipe_hash "$name" "$base_hash")"
  [ "$name" = debian ] && base_hash="$key"
  if [ "$(current_label "$tag")" = "$name:$key" ]; then
    echo "stand-in $tag: reused ($name:$key)"
    continue
  fi
  previous="$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
  started=$SECONDS
  if [ "$name" = debian ]; then build_debian "$tag" "$key"; else build_image "$name" "$tag" "$key"; fi
  echo "stand-in $tag: built in $((SECONDS - started)) s ($name:$key)"
  # The image it replaces, unless something still uses it.
  [ -z "$previous" ] || podman rmi "$previous" >/dev/null 2>&1 || true
done
