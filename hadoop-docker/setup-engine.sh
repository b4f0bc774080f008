#!/usr/bin/env bash
# A Docker engine and the Compose v2 plugin for hadoop-docker/ and its tests (`make docker-deps`,
# part of `make test`). Idempotent; run as root. Where no engine can run, it says why and exits
# 0: the docker tests then skip with that reason.
#   - Debian's docker.io and debootstrap, installed if missing
#   - dockerd started if no engine answers (log: /var/log/dsbra-dockerd.log)
#   - the Compose v2 plugin, which Debian's engine ships without, built from its Go module
set -uo pipefail
COMPOSE_VERSION=v2.29.7
PLUGIN=/usr/local/lib/docker/cli-plugins/docker-compose
say() { echo "docker-deps: $*" >&2; }

if ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io debootstrap \
    || { say "could not install docker.io and debootstrap"; exit 0; }
fi

if ! docker info >/dev/null 2>&1; then
  say "starting dockerd (log: /var/log/dsbra-dockerd.log)"
  setsid dockerd >>/var/log/dsbra-dockerd.log 2>&1 </dev/null &
  for _ in $(seq 90); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { say "dockerd did not start: $(tail -n 3 /var/log/dsbra-dockerd.log)"; exit 0; }
fi

if ! docker compose version >/dev/null 2>&1; then
  GO=$(command -v go || echo /usr/local/go/bin/go)
  [ -x "$GO" ] || { say "no Go toolchain to build the Compose plugin; install docker-compose-plugin"; exit 0; }
  say "building the Compose plugin $COMPOSE_VERSION from its Go module (a few minutes, once)"
  out=$(mktemp -d)
  GOFLAGS=-buildvcs=false GOBIN="$out" nice "$GO" install \
      -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
      "github.com/docker/compose/v2/cmd@$COMPOSE_VERSION" \
    && install -D -m 0755 "$out/cmd" "$PLUGIN" \
    || say "building the Compose plugin failed"
  rm -rf "$out"
fi
docker compose version >&2 || true
