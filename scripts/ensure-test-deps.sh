#!/usr/bin/env bash
# The real programs the tests (`pnpm test`) run against, from Debian packages.
# Installs the missing ones as root on Debian; elsewhere names them and fails.
set -euo pipefail
needed=(
  chromium=chromium                      # headless browser: under_attack, Web Vitals and trust e2e tests
  openssl=openssl                        # self-signed certificates for the HTTPS tests
  promtool=prometheus                    # checks the /metrics exposition
  pebble=pebble                          # ACME CA on loopback (with pebble-challtestsrv) for the certificate tests
  certutil=libnss3-tools                 # proxyd trust: the NSS database Chromium reads
  update-ca-certificates=ca-certificates # proxyd trust: Debian's system store
)
exec bash "$(dirname "$0")/install-debian-packages.sh" "test dependencies" "${needed[@]}"
