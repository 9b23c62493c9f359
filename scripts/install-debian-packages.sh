#!/usr/bin/env bash
# Installs the Debian packages that provide missing commands.
#
#   bash scripts/install-debian-packages.sh <what for> <command>=<package> ...
#
# Each command found on PATH (or in /usr/sbin, /sbin) is skipped. As root with
# apt-get, the packages of the missing ones are installed; elsewhere the script
# names them and fails. Package scripts are kept from starting services
# (nginx, prometheus) during the install by a policy-rc.d that exists only
# while apt-get runs.
set -euo pipefail

purpose=${1:?usage: install-debian-packages.sh <what for> <command>=<package> ...}
shift

missing=()
for pair in "$@"; do
  cmd=${pair%%=*}
  pkg=${pair#*=}
  PATH="$PATH:/usr/sbin:/sbin" command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "missing $purpose; install these Debian packages: ${missing[*]}" >&2
  exit 1
fi

echo "installing $purpose: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
