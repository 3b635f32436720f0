#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned Kueue (devcluster/go/tool-module.sh; issue 24). Usage: [VERSION]
exec "$(dirname "$0")/../tool-module.sh" kueue KUEUE_VERSION sigs.k8s.io/kueue/cmd/kueue "$@"
