#!/usr/bin/env bash
# Regenerates go.mod/go.sum for the pinned CoreDNS (devcluster/go/tool-module.sh). Usage: [VERSION]
exec "$(dirname "$0")/../tool-module.sh" coredns COREDNS_VERSION github.com/coredns/coredns "$@"
