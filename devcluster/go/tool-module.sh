#!/usr/bin/env bash
# Regenerates go.mod/go.sum of one wrapper module that pins a Go tool: a module of its own, so that the
# tool's k8s.io library versions never have to agree with the Kubernetes build's (and a tool whose own
# go.mod carries local replaces, which `go install ...@version` refuses, still builds).
# Usage: tool-module.sh DIR VERSION_VARIABLE PACKAGE [VERSION]; without VERSION, DIR/VERSION's.
set -euo pipefail
dir=$1 variable=$2 package=$3
cd "$(dirname "$0")/$dir"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${4:-$(sed -n "s/^${variable}=//p" VERSION)}
rm -f go.mod go.sum
go mod init "taskset.local/devcluster/$dir" >/dev/null 2>&1
go mod edit -go=1.26.0
go get -tool "${package}@${version}"
go mod tidy
printf '%s=%s\n' "$variable" "$version" > VERSION
