#!/usr/bin/env bash
# The programs the benchmarks (`pnpm bench`) run or compare against, from
# Debian packages. Installs the missing ones as root on Debian; elsewhere names
# them and fails.
set -euo pipefail
needed=(
  nginx=nginx-light # reference proxy, and the fast upstream
  caddy=caddy       # reference proxy; Caddyfile parsing baseline
  wrk=wrk           # HTTP load generator
  taskset=util-linux # pins each process to its own cores
  pgrep=procps      # finds nginx's worker processes to measure
)
exec bash "$(dirname "$0")/install-debian-packages.sh" "benchmark dependencies" "${needed[@]}"
