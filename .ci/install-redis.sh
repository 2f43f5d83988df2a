#!/usr/bin/env bash
# Installs the Redis binaries that the integration tests need (redis-server,
# redis-sentinel and redis-cli) from the distribution's packages.
#
# The tests start their own servers on random loopback ports, so any system
# service the packages start is stopped again. Safe to run repeatedly: when
# all three binaries are already on PATH it only prints their versions.
set -euo pipefail

binaries=(redis-server redis-sentinel redis-cli)
packages=(redis-server redis-sentinel redis-tools)

have_all() {
	local bin
	for bin in "${binaries[@]}"; do
		command -v "$bin" >/dev/null 2>&1 || return 1
	done
}

print_versions() {
	local bin
	for bin in "${binaries[@]}"; do
		printf '%s: %s\n' "$(command -v "$bin")" "$("$bin" --version 2>&1 | head -n 1)"
	done
}

# run_root runs a command as root, through sudo when needed.
run_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		echo "install-redis.sh: not root and sudo is unavailable; cannot run: $*" >&2
		return 1
	fi
}

# stop_services stops any Redis daemon that package installation started, so
# it does not hold ports 6379/26379. Failures are ignored on purpose.
stop_services() {
	local svc pidfile pid
	for svc in redis-server redis-sentinel; do
		if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
			run_root systemctl stop "$svc" >/dev/null 2>&1 || true
		fi
		if command -v service >/dev/null 2>&1; then
			run_root service "$svc" stop >/dev/null 2>&1 || true
		fi
	done
	# Without an init system the init scripts may not work: kill the daemons
	# by the pid files the packaged configurations write.
	for pidfile in /run/redis/redis-server.pid /run/sentinel/redis-sentinel.pid \
		/var/run/redis/redis-server.pid /var/run/sentinel/redis-sentinel.pid; do
		if [ -r "$pidfile" ]; then
			pid="$(cat "$pidfile" 2>/dev/null || true)"
			case "$pid" in
			'' | *[!0-9]*) ;;
			*) run_root kill "$pid" >/dev/null 2>&1 || true ;;
			esac
		fi
	done
}

if have_all; then
	print_versions
	exit 0
fi

echo "install-redis.sh: installing ${packages[*]}"
run_root env DEBIAN_FRONTEND=noninteractive apt-get update
run_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
stop_services

if ! have_all; then
	echo "install-redis.sh: ${binaries[*]} still not all on PATH after installation" >&2
	exit 1
fi
print_versions
