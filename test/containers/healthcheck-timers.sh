#!/usr/bin/env bash
# Runs the health checks of one compose project's containers at each one's interval, as Docker's
# daemon does. podman leaves the scheduling to systemd timers, and our machines (and CI) have no
# systemd: without this, no container ever becomes healthy and `depends_on: service_healthy`
# waits forever. podman itself still runs each check and keeps the status (start period,
# retries, timeout). Ends when killed.
# Usage: healthcheck-timers.sh PROJECT
set -uo pipefail
project="${1:?usage: healthcheck-timers.sh PROJECT}"

declare -A interval_of due_at running
while sleep 1; do
  now=$(date +%s%N)
  for id in $(podman ps -q --no-trunc --filter "label=com.docker.compose.project=$project"); do
    if [ -z "${interval_of[$id]:-}" ]; then
      check="$(podman inspect --format \
        '{{with .Config.Healthcheck}}{{index .Test 0}} {{.Interval.Nanoseconds}}{{end}}' "$id" 2>/dev/null)" || continue
      read -r kind interval <<<"$check"
      case "${kind:-NONE}" in
        NONE) interval=0 ;; # no check, or disabled by the compose file
        *) [ "${interval:-0}" != 0 ] || interval=30000000000 ;; # Docker's default: 30 s
      esac
      interval_of[$id]="$interval"
      due_at[$id]="$((now + interval))"
    fi
    [ "${interval_of[$id]}" != 0 ] || continue
    [ "$now" -ge "${due_at[$id]}" ] || continue
    if [ -n "${running[$id]:-}" ] && kill -0 "${running[$id]}" 2>/dev/null; then continue; fi
    podman healthcheck run "$id" >/dev/null 2>&1 &
    running[$id]=$!
    due_at[$id]="$((now + ${interval_of[$id]}))"
  done
done
