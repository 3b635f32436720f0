#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned CoreDNS, in a module of its own so that CoreDNS's
# k8s.io library versions never have to agree with the Kubernetes build's.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${1:-$(sed -n 's/^COREDNS_VERSION=//p' VERSION)}
rm -f go.mod go.sum
go mod init taskset.local/devcluster/coredns >/dev/null 2>&1
go mod edit -go=1.26.0
go get -tool "github.com/coredns/coredns@${version}"
go mod tidy
printf 'COREDNS_VERSION=%s\n' "$version" > VERSION
