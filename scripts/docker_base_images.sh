#!/usr/bin/env bash
# Local base images for a machine that reaches Debian's package archive but no image registry:
# a Debian bookworm root filesystem (debootstrap, then `docker import`) and, built on it, the
# three images the deployment needs — Python for the gateway, PostgreSQL and Redis from
# Debian's packages. Prints the build arguments and compose variables that select them.
# Needs root (debootstrap) and a running Docker daemon; an image already built is kept.
set -euo pipefail
cd "$(dirname "$0")/docker-base"

PREFIX=${LOCAL_IMAGE_PREFIX:-gateway-local}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

have() { docker image inspect "$1" >/dev/null 2>&1; }

if ! have "$PREFIX/debian:bookworm"; then
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
  echo "debootstrap bookworm (a few minutes)"
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$PREFIX/debian:bookworm" >/dev/null
fi
for image in python postgres redis; do
  if ! have "$PREFIX/$image:bookworm"; then
    echo "building $PREFIX/$image:bookworm"
    docker build -q --build-arg "DEBIAN_IMAGE=$PREFIX/debian:bookworm" \
      -f "$image.Dockerfile" -t "$PREFIX/$image:bookworm" . >/dev/null
  fi
done
echo "PYTHON_IMAGE=$PREFIX/python:bookworm"
echo "POSTGRES_IMAGE=$PREFIX/postgres:bookworm"
echo "REDIS_IMAGE=$PREFIX/redis:bookworm"
