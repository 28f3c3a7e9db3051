#!/usr/bin/env bash
# Runs the compose deployment for real: builds the images, starts the stack, waits for health,
# checks the web port is published on loopback only and refuses a Host it does not serve,
# creates a tenant, streams a response, restarts the web and worker containers, continues the
# chain (previous_response_id), uploads a file into a new vector store (pgvector; the worker
# ingests it with the fake upstream's embeddings) and searches it, sees PostgreSQL refuse a
# data volume of another major, and tears everything down, volumes included. The upstream is
# the fake one from tests/ in a container of its own. Works on a copy of the checkout with a
# generated .env (yours is left alone). Where python:3.11-slim cannot be pulled, local base
# images are built from Debian's packages (scripts/docker_base_images.sh). Needs Docker and
# docker-compose (v1) or the `docker compose` plugin, curl and python3.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
project=gwcheck$$
if docker compose version >/dev/null 2>&1; then compose=(docker compose); else compose=(docker-compose); fi
dc() { (cd "$work" && "${compose[@]}" -p "$project" -f docker-compose.yml -f scripts/compose_check.yml "$@"); }
step() { printf '\n== %s\n' "$*"; }
teardown() {
  step "tear down"
  dc down -v --remove-orphans --timeout 10 2>&1 | grep -E '^(Stopping|Removing|Network|Volume|Container)' || true
  rm -rf "$work"
}
trap teardown EXIT

secret() { python3 -c 'import base64, os; print(base64.urlsafe_b64encode(os.urandom(32)).decode())'; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$repo" && git ls-files -co --exclude-standard -z | xargs -0 tar -c --ignore-failed-read 2>/dev/null) | tar -x -C "$work"
# .env as the README says to make it: .env.example with its secrets filled in, and the fake
# upstream; everything else (loopback-only publishing, ALLOWED_HOSTS) as shipped.
python3 - "$work/.env.example" > "$work/.env" <<PY
import sys
filled = {"SECRET_KEY": "$(secret)$(secret)", "ENCRYPTION_KEYS": "$(secret)",
          "POSTGRES_PASSWORD": "$(secret | tr -d '=_-')", "WEB_PORT": "$port",
          "UPSTREAM_BASE_URL": "http://fake-upstream:8901/v1", "GATEWAY_MODELS": "fake-echo",
          "RESPONSE_RETENTION_DAYS": "30"}
for line in open(sys.argv[1]).read().splitlines():
    name = line.partition("=")[0]
    if name in ("PYTHON_IMAGE", "POSTGRES_IMAGE", "REDIS_IMAGE"):
        continue  # the registry's defaults, or the local images' lines appended below
    print(f"{name}={filled.pop(name)}" if name in filled and not line.startswith("#") else line)
assert not filled, filled
PY

step "base images"
if docker image inspect python:3.11-slim >/dev/null 2>&1 || docker pull -q python:3.11-slim >/dev/null 2>&1; then
  echo "python:3.11-slim, pgvector/pgvector:pg16, redis:7 from the registry"
else
  "$repo/scripts/docker_base_images.sh" | tee -a "$work/.env"
fi

step "build"
dc build -q 2>&1 | grep -v -e '^DEPRECATED' -e 'buildx' -e '^ *https://docs.docker' -e '^$' || true
docker image inspect -f 'responses-gateway:latest user={{.Config.User}} cmd={{json .Config.Cmd}}' responses-gateway:latest

step "up"
dc up -d 2>&1 | tail -n 8

healthy() {  # waits until every named service's container reports healthy
  local deadline=$((SECONDS + 300)) service state
  for service in "$@"; do
    while true; do
      state=$(docker inspect -f '{{.State.Health.Status}}' "$(dc ps -q "$service")" 2>/dev/null || echo missing)
      [ "$state" = healthy ] && break
      if [ $SECONDS -gt $deadline ]; then dc ps; dc logs --tail 30 "$service"; exit 1; fi
      sleep 2
    done
  done
  dc ps
}
step "wait for health"
healthy postgres redis web worker
# beat reports healthy only once it has saved its schedule (minutes): running is enough here
if [ "$(docker inspect -f '{{.State.Running}}' "$(dc ps -q beat)")" = true ]; then
  echo "beat running"
else
  dc logs --tail 30 beat; exit 1
fi

step "published on loopback only, known hosts only"
published=$(dc port web 8000)
echo "web's port 8000 published on $published"
[ "$published" = "127.0.0.1:$port" ] || { echo "expected 127.0.0.1:$port"; exit 1; }
status=$(curl -sS -o "$work/refused.json" -w '%{http_code}' -H 'Host: gw.example.com' \
           "http://127.0.0.1:$port/v1/models")
echo "Host gw.example.com: $status $(cat "$work/refused.json")"
python3 -c 'import json, sys; assert (sys.argv[1], json.load(open(sys.argv[2]))) == ("400", {"error": {
    "message": "Bad request (check the Host header).", "type": "invalid_request_error",
    "param": None, "code": "bad_request"}})' "$status" "$work/refused.json"
ready=$(curl -sS "http://127.0.0.1:$port/readyz")
echo "readyz: $ready"
echo "$ready" | python3 -c 'import json, sys; r = json.load(sys.stdin); assert r["status"] == "ready" and r["checks"]["upstream"] == {"ok": True, "url": "http://fake-upstream:8901/v1"}, r'

step "create a tenant"
key=$(dc exec -T web python manage.py create_tenant compose-check | tail -n 1)
echo "key ${key:0:12}…"
base="http://127.0.0.1:$port/v1"
post() { curl -sS --fail-with-body -N "$base/responses" -H "Authorization: Bearer $key" \
           -H 'Content-Type: application/json' -d "$1"; }

step "stream a response"
stream=$(post '{"model": "fake-echo", "input": "hello from compose", "stream": true}')
echo "$stream" | sed -n 's/^event: //p' | uniq -c
first=$(echo "$stream" | sed -n 's/^data: \(.*"type":"response.completed".*\)/\1/p' |
        python3 -c 'import json, sys; r = json.load(sys.stdin)["response"]; print(r["id"]); print(r["output"][0]["content"][0]["text"], file=sys.stderr)')
echo "completed $first"

step "restart web and worker"
dc restart web worker 2>&1 | tail -n 2
healthy web worker

step "continue the chain"
post "{\"model\": \"fake-echo\", \"input\": \"and again\", \"previous_response_id\": \"$first\"}" |
  python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["status"], r["previous_response_id"]); print(r["output"][0]["content"][0]["text"])'

step "a vector store ingests a file (pgvector, the worker, the upstream's embeddings)"
dc exec -T postgres psql -U gateway -d gateway -Atc \
  "SELECT 'PostgreSQL ' || current_setting('server_version') || ', pgvector ' || extversion FROM pg_extension WHERE extname = 'vector'"
api() { curl -sS --fail-with-body "$base/$1" -H "Authorization: Bearer $key" "${@:2}"; }
printf 'The compose deployment keeps its vectors in PostgreSQL with pgvector.\n' > "$work/notes.txt"
file=$(api files -F purpose=assistants -F "file=@$work/notes.txt" |
       python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
store=$(api vector_stores -H 'Content-Type: application/json' \
          -d "{\"name\": \"compose-check\", \"file_ids\": [\"$file\"]}" |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])')
started=$SECONDS deadline=$((SECONDS + 60))
until [ "$(api "vector_stores/$store" | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])')" != in_progress ]; do
  [ $SECONDS -lt $deadline ] || { dc logs --tail 30 worker; exit 1; }
  sleep 1
done
api "vector_stores/$store/files/$file" |
  python3 -c 'import json, sys; f = json.load(sys.stdin); print(f["id"], f["status"], f["last_error"]); assert (f["status"], f["last_error"]) == ("completed", None), f'
echo "ingested within $((SECONDS - started)) s"
api "vector_stores/$store/search" -H 'Content-Type: application/json' -d '{"query": "where are the vectors kept"}' |
  python3 -c 'import json, sys; hits = [(h["filename"], h["score"], h["content"][0]["text"]) for h in json.load(sys.stdin)["data"]]; print(hits); assert hits == [("notes.txt", 1.0, "The compose deployment keeps its vectors in PostgreSQL with pgvector.")], hits'

step "metrics (web and worker, one volume)"
curl -sS "http://127.0.0.1:$port/metrics" |
  grep -E '^gateway_(run_duration_seconds_count|http_requests_total\{method="POST",route="v1/(responses|files|vector_stores)")'

step "a data volume of another PostgreSQL major is refused"
image=$(docker inspect -f '{{.Config.Image}}' "$(dc ps -q postgres)")
dc stop postgres 2>&1 | tail -n 1
docker run --rm --user root --entrypoint sh -v "${project}_postgres-data:/data" "$image" \
  -c 'echo 14 > /data/PG_VERSION'
dc up -d --no-deps postgres 2>&1 | tail -n 1
deadline=$((SECONDS + 60))
# the logs in a variable: `dc logs | grep -m` would end in SIGPIPE under pipefail
until logs=$(dc logs --no-color postgres 2>&1) && grep -q 'Refusing to start' <<<"$logs"; do
  [ $SECONDS -lt $deadline ] || { dc logs --tail 20 postgres; exit 1; }
  sleep 1
done
grep -m 2 -e 'Refusing to start' -e 'Set POSTGRES_IMAGE' <<<"$logs" | sed 's/^[^|]*| //'
echo
echo "compose check passed in ${SECONDS} s"
