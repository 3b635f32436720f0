#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned Kubernetes release. k8s.io/kubernetes lists every
# staging module at v0.0.0 (resolved through ./staging replaces that Go ignores for dependencies),
# (33 of them in 1.36), so each one is pinned to its published v0.X.Y tag, read mechanically from the upstream go.mod.
set -euo pipefail
cd "$(dirname "$0")"
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
version=${1:-$(sed -n 's/^KUBERNETES_VERSION=//p' VERSION)}
staging=v0.${version#v1.}
upstream=$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
rm -f go.mod go.sum
go mod init taskset.local/devcluster/kubernetes >/dev/null 2>&1
go mod edit -go=1.26.0
for mod in $(awk '$2 == "=>" && $3 ~ /^\.\/staging\/src\// {print $1}' "$upstream"); do
  go mod edit -replace "${mod}=${mod}@${staging}"
done
go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@${version}" \
  "k8s.io/kubernetes/cmd/kube-controller-manager@${version}" \
  "k8s.io/kubernetes/cmd/kube-scheduler@${version}" \
  "k8s.io/kubernetes/cmd/kubectl@${version}"
go mod tidy
printf 'KUBERNETES_VERSION=%s\n' "$version" > VERSION
