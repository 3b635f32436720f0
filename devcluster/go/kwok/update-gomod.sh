#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned kwok controller (devcluster/go/tool-module.sh). Usage: [VERSION]
exec "$(dirname "$0")/../tool-module.sh" kwok KWOK_VERSION sigs.k8s.io/kwok/cmd/kwok "$@"
