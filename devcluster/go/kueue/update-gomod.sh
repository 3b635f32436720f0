#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned Kueue controller manager (issue 24).
exec "$(dirname "$0")/../update-tool-module.sh" kueue KUEUE_VERSION sigs.k8s.io/kueue/cmd/kueue "$@"
