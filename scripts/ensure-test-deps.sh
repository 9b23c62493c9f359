#!/usr/bin/env bash
# The real programs the tests (`pnpm test`) run against, from Debian packages.
# Installs the missing ones as root on Debian; elsewhere names them and fails.
set -euo pipefail
needed=(
  chromium=chromium                      # headless browser: under_attack, Web Vitals and trust e2e tests
  openssl=openssl                        # self-signed certificates for the HTTPS tests
  promtool=prometheus                    # checks the /metrics exposition
  pebble=pebble                          # ACME CA on loopback (with pebble-challtestsrv) for the certificate tests
  named=bind9                            # authoritative DNS with RFC 2136 + TSIG: the DNS-01 tests
  dig=bind9-dnsutils                     # reads BIND's answers in the DNS-01 tests
  certutil=libnss3-tools                 # proxyd trust: the NSS database Chromium reads
  update-ca-certificates=ca-certificates # proxyd trust: Debian's system store
  podman=podman                          # Docker-compatible API for the container discovery tests (test-peers)
  runc=runc                              # podman's OCI runtime: crun fails on this hybrid cgroup host
  catatonit=catatonit                    # podman's container init (HostConfig.Init), so stop is fast
  /usr/lib/podman/netavark=netavark      # podman's bridge networks (a Recommends, so not pulled in)
  /usr/lib/podman/aardvark-dns=aardvark-dns # name resolution on podman's created networks (a Recommends)
  iptables=iptables                      # netavark's firewall rules for podman's bridges
  busybox=busybox-static                 # the test image: static /bin/busybox imported, no registry
  buildah=buildah                        # builds the container image (./dev build:image) with no registry
  podman-compose=podman-compose          # brings up examples/compose in the image e2e test
  curl=curl                              # HTTPS requests verified against a given root only
  dockerd=docker.io                      # a real Docker Engine, started by hand (brings containerd, tini)
  h2load=nghttp2-client                  # HTTP/2 load and request clients (h2load, nghttp) for the HTTP/2 tests
  nghttp=nghttp2-client
  redis-server=redis-server              # the Redis storage (storage redis): unit and e2e tests on loopback
  redis-sentinel=redis-sentinel          # Sentinel failover of the Redis storage
  redis-cli=redis-tools                  # reads what the Redis storage wrote, in the tests
  faketime=faketime                      # brings libfaketime: fleet-rate-limit e2e holds the nodes' wall clock
  ip=iproute2                            # network namespaces and a bridge: the several-node e2e tests
  systemd-analyze=systemd                # checks packaging/proxyd.service offline (verify, security); nothing is booted
)
exec bash "$(dirname "$0")/install-debian-packages.sh" "test dependencies" "${needed[@]}"
