#!/usr/bin/env bash
# Starts a Docker engine for the container sandbox tests, if none answers
# yet, and builds the local test image clawtool-test/busybox from Debian's
# busybox-static with docker import (no registry is needed). Idempotent.
#
# The engine gets no bridge network and changes no iptables rules; it
# listens only on its default unix socket. Its log is
# /var/lib/clawtool-dockerd/dockerd.log and its pid /var/run/docker.pid.
set -euo pipefail

state=/var/lib/clawtool-dockerd
image=clawtool-test/busybox:1
docker=/usr/bin/docker

if ! command -v dockerd >/dev/null 2>&1 || ! command -v busybox >/dev/null 2>&1; then
	(apt-get install -y docker.io busybox-static >/dev/null 2>&1 ||
		(apt-get update >/dev/null && apt-get install -y docker.io busybox-static >/dev/null))
fi
[ -x "$docker" ] || docker=$(command -v docker)

answers() { timeout 5 "$docker" version >/dev/null 2>&1; }

if [ -n "${DOCKER_HOST:-}" ] || answers; then
	echo "docker engine already answers"
else
	mkdir -p "$state"
	# setsid: the engine outlives this script, in a session of its own.
	setsid dockerd --bridge=none --iptables=false --ip6tables=false \
		--data-root /var/lib/docker --exec-root /var/run/docker \
		--host unix:///var/run/docker.sock \
		>"$state/dockerd.log" 2>&1 </dev/null &
	for _ in $(seq 1 60); do
		answers && break
		sleep 1
	done
	if ! answers; then
		echo "dockerd did not answer within 60s; its log:"
		tail -n 40 "$state/dockerd.log"
		exit 1
	fi
fi
"$docker" version --format 'engine {{.Server.Version}}, client {{.Client.Version}}'

if ! "$docker" image inspect "$image" >/dev/null 2>&1; then
	root=$(mktemp -d)
	trap 'rm -rf "$root"' EXIT
	mkdir -p "$root/bin" "$root/tmp" "$root/etc" "$root/workspace"
	chmod 1777 "$root/tmp"
	cp "$(command -v busybox)" "$root/bin/busybox"
	for applet in sh cat echo true false sleep ls id env printf head tail yes \
		dd cut tr wc grep sed mkdir rm touch test seq ps kill nproc; do
		ln -s busybox "$root/bin/$applet"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$root/etc/passwd"
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
	tar -C "$root" -c . | "$docker" import \
		--change 'ENV PATH=/bin' --change 'CMD ["/bin/sh"]' - "$image" >/dev/null
	echo "built $image"
fi
