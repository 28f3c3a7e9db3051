#!/usr/bin/env bash
# Local base images for a machine that reaches Debian's package archive but no image registry:
# a Debian bookworm root filesystem (debootstrap, then `docker import`) and, built on it, the
# three images the deployment needs — Python and Redis from Debian's packages, PostgreSQL with
# pgvector from the `pgserver` wheel (bookworm packages neither PostgreSQL 16 nor pgvector;
# the wheel comes from the package index with the hashes requirements.lock pins). Prints the
# build arguments and compose variables that select them.
# Needs root (debootstrap) and a running Docker daemon; an image already built is kept.
# The host's local CA certificates (/usr/local/share/ca-certificates, e.g. a TLS-inspecting
# proxy's) go into the Python image, so that pip inside the gateway's build trusts them too.
set -euo pipefail
cd "$(dirname "$0")/docker-base"

PREFIX=${LOCAL_IMAGE_PREFIX:-gateway-local}
# PostgreSQL's major: the one docker-compose.yml pins (pgvector/pgvector:pgN), so that a data
# volume serves the local image and the registry's alike; the image's tag names it.
PG_MAJOR=$(sed -n 's/.*POSTGRES_IMAGE:-pgvector\/pgvector:pg\([0-9][0-9]*\)}.*/\1/p' ../../docker-compose.yml)
[ -n "$PG_MAJOR" ] || { echo "no pgvector/pgvector:pgN default image in docker-compose.yml" >&2; exit 1; }
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

have() { docker image inspect "$1" >/dev/null 2>&1; }

if ! have "$PREFIX/debian:bookworm"; then
  rootfs=$(mktemp -d)
  echo "debootstrap bookworm (a few minutes)" >&2
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >/dev/null
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  tar -C "$rootfs" -c . | docker import - "$PREFIX/debian:bookworm" >/dev/null
  rm -rf "$rootfs"
fi
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
cp ./* "$context/" && mkdir "$context/ca"
cp /usr/local/share/ca-certificates/*.crt "$context/ca/" 2>/dev/null || true
# the pgserver requirement and its hashes, as locked
awk '/^pgserver==/ {on = 1; print; next} on && /^ +--hash/ {print; next} {on = 0}' \
  ../../requirements.lock > "$context/pgserver.txt"
[ -s "$context/pgserver.txt" ] || { echo "no pgserver in requirements.lock" >&2; exit 1; }
for image in python:bookworm pgvector:pg$PG_MAJOR redis:bookworm; do
  if ! have "$PREFIX/$image"; then
    echo "building $PREFIX/$image" >&2
    args=()
    [ "${image%%:*}" = pgvector ] && args=(--build-arg "PG_MAJOR=$PG_MAJOR"
                                          --build-arg "PYTHON_IMAGE=$PREFIX/python:bookworm")
    # without buildx the legacy builder says it is deprecated on every build: not news here
    dockerfile=${image%%:*}; [ "$dockerfile" = pgvector ] && dockerfile=postgres
    docker build -q --build-arg "DEBIAN_IMAGE=$PREFIX/debian:bookworm" \
      "${args[@]}" \
      -f "$context/$dockerfile.Dockerfile" -t "$PREFIX/$image" "$context" >/dev/null \
      2> >(grep -v -e '^DEPRECATED' -e 'buildx' -e '^ *https://docs.docker' -e '^$' >&2 || true)
  fi
done
echo "PYTHON_IMAGE=$PREFIX/python:bookworm"
echo "POSTGRES_IMAGE=$PREFIX/pgvector:pg$PG_MAJOR"
echo "REDIS_IMAGE=$PREFIX/redis:bookworm"
