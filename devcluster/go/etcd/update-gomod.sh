#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned etcd server. Its own go.mod carries local replaces,
# so `go install ...@version` is refused; a wrapper module that requires it builds it fine.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${1:-$(sed -n 's/^ETCD_VERSION=//p' VERSION)}
rm -f go.mod go.sum
go mod init taskset.local/devcluster/etcd >/dev/null 2>&1
go mod edit -go=1.26.0
go get -tool "go.etcd.io/etcd/server/v3@${version}"
go mod tidy
printf 'ETCD_VERSION=%s\n' "$version" > VERSION
