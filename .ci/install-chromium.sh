#!/usr/bin/env bash
# Installs Chromium from the distribution's packages, for the simulator's report test
# (sim/report), which renders failure reports in a real headless browser. Safe to run
# repeatedly: when a Chromium is already on PATH it only prints its version.
set -euo pipefail

for bin in chromium chromium-browser google-chrome; do
	if command -v "$bin" >/dev/null 2>&1; then
		"$bin" --version 2>/dev/null || true
		exit 0
	fi
done

run_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "install-chromium.sh: not root and sudo is unavailable; cannot run: $*" >&2
		return 1
	fi
}

export DEBIAN_FRONTEND=noninteractive
if ! apt-cache policy chromium 2>/dev/null | grep -q 'Candidate: [0-9]'; then
	run_root apt-get update
fi
run_root apt-get install -y --no-install-recommends chromium
chromium --version
