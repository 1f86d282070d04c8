#!/usr/bin/env bash
# Screenshot of an HTML page (e.g. `hetrain report` output) in headless Chromium.
# Usage: scripts/screenshot.sh PAGE.html OUT.png [WIDTH] [HEIGHT]   (needs scripts/setup.sh --test)
set -euo pipefail
page=$(realpath "$1"); out=$(realpath -m "$2"); width=${3:-1400}; height=${4:-2400}
command -v chromium >/dev/null || { echo "screenshot: chromium not found (scripts/setup.sh --test installs it)" >&2; exit 1; }
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
# The network here is closed: without the background-networking flags Chromium retries connections.
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
  --disable-component-update --disable-sync --hide-scrollbars --force-device-scale-factor=1 \
  --user-data-dir="$profile" --window-size="$width,$height" --screenshot="$out" "file://$page" 2>/dev/null
echo "screenshot: $out"
