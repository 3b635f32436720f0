#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned scheduler-plugins kube-scheduler (coscheduling), in a module of
# its own (issue 24). Upstream's go.mod replaces every Kubernetes staging module; a wrapper must repeat
# those replaces (a dependency's replace directives do not apply), retargeted from the upstream's
# v0.34.7 to v0.34.4 and k8s.io/kubernetes to v1.34.4: the module proxy refuses
# k8s.io/cluster-bootstrap v0.34.7, and serves the whole v0.34.4 set.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${1:-$(sed -n 's/^SCHEDULER_PLUGINS_VERSION=//p' VERSION)}
staging=${STAGING_VERSION:-v0.34.4}
kubernetes=${KUBERNETES_VERSION:-v1.34.4}
rm -f go.mod go.sum
go mod init taskset.local/devcluster/scheduler-plugins >/dev/null 2>&1
go mod edit -go=1.26.0
upstream=$(go mod download -json "sigs.k8s.io/scheduler-plugins@${version}" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
go mod edit -json "$upstream" |
  python3 -c 'import json,sys; [print(r["Old"]["Path"], r["New"]["Version"]) for r in json.load(sys.stdin)["Replace"]]' |
  while read -r path pinned; do
    case "$path" in
      k8s.io/kubernetes) pinned=$kubernetes ;;
      k8s.io/legacy-cloud-providers) ;;  # upstream pins an older line on purpose
      *) pinned=$staging ;;
    esac
    go mod edit -replace "${path}=${path}@${pinned}"
  done
go get -tool "sigs.k8s.io/scheduler-plugins/cmd/scheduler@${version}"
go mod tidy
printf 'SCHEDULER_PLUGINS_VERSION=%s\n' "$version" > VERSION
