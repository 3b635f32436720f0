#!/usr/bin/env bash
# Regenerates go.mod/go.sum of a wrapper module <dir> that builds one tool, <package>@<version>, in a
# module of its own (its k8s.io library versions never have to agree with another build's).
# Usage: update-tool-module.sh <dir> <VERSION key> <package> [version]   (default: the one in <dir>/VERSION)
set -euo pipefail
dir=$1 key=$2 package=$3
cd "$(dirname "$0")/$dir"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${4:-$(sed -n "s/^${key}=//p" VERSION)}
rm -f go.mod go.sum
go mod init "taskset.local/devcluster/${dir}" >/dev/null 2>&1
go mod edit -go=1.26.0
go get -tool "${package}@${version}"
go mod tidy
printf '%s=%s\n' "$key" "$version" > VERSION
