#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned etcd server (devcluster/go/tool-module.sh). Usage: [VERSION]
exec "$(dirname "$0")/../tool-module.sh" etcd ETCD_VERSION go.etcd.io/etcd/server/v3 "$@"
