#!/usr/bin/env bash
# Makes sure the real peers that the tests and benchmarks run against are
# installed (Debian packages). On a Debian machine as root it installs what is
# missing; elsewhere it names what to install and fails.
set -euo pipefail

# command -> Debian package
declare -A NEEDED=(
  [chromium]=chromium        # headless browser for under_attack and Web Vitals tests
  [pebble]=pebble            # ACME test CA
  [caddy]=caddy              # benchmark reference and `caddy adapt`
  [nginx]=nginx-light        # benchmark reference
  [haproxy]=haproxy          # benchmark reference
  [wrk]=wrk                  # HTTP load generator
  [promtool]=prometheus      # checks the /metrics exposition
)

missing=()
for cmd in "${!NEEDED[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDED[$cmd]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing test dependencies: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d keeps package scripts from starting services (nginx, prometheus) on install
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  exit 0
fi

echo "missing test dependencies; install these Debian packages: ${missing[*]}" >&2
exit 1
