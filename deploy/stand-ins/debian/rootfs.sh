#!/usr/bin/env bash
# The stand-in for debian:bookworm-slim: Debian 12 from Debian's own packages (debootstrap's
# minimal variant), trimmed as the slim image is (slim.dpkg.cfg, clean.apt.conf) and pointed at
# bookworm, its updates and its security suite. Writes the root file system into DIR (root only:
# debootstrap makes device nodes and chroots).
# Usage: rootfs.sh DIR
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="${1:?usage: rootfs.sh DIR}"

debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian >/dev/null

install -m 0644 "$here/slim.dpkg.cfg" "$root/etc/dpkg/dpkg.cfg.d/slim"
install -m 0644 "$here/clean.apt.conf" "$root/etc/apt/apt.conf.d/docker-clean"
install -m 0644 "$here/debian.sources" "$root/etc/apt/sources.list.d/debian.sources"
rm -f "$root/etc/apt/sources.list"

# What debootstrap installed before the exclusions were in place.
find "$root/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$root"/usr/share/{man,info,locale,groff,lintian}/*
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/*
rm -rf "$root"/var/log/* "$root"/tmp/* "$root"/root/.bash_history
# The engine writes these when it starts a container.
: >"$root/etc/hostname"
: >"$root/etc/resolv.conf"
