#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause OR GPL-2.0-only
# Runs the pmemverbs demo: a target and an initiator over 127.0.0.1, the
# target's region a temporary file.  Usage: run_demo.sh BUILD_DIR
set -euo pipefail

BUILD=$1
DEMO=$BUILD/examples/pmv_demo
PORT=${PMV_DEMO_PORT:-9400}
export FI_PROVIDER_PATH=${FI_PROVIDER_PATH:-$BUILD/.libs}

echo "pmemverbs demo: a target and an initiator over 127.0.0.1:$PORT"
echo "(the plugin comes from FI_PROVIDER_PATH=$FI_PROVIDER_PATH)"
echo
timeout 60 "$DEMO" target -p "$PORT" &
target=$!
timeout 60 "$DEMO" initiator -p "$PORT"
wait "$target"
