#!/usr/bin/env bash
# gpu-deps.sh - fetch, here, the Debian packages a GPU machine may lack for
# building orch (PCRE2, cJSON, NNG, protobuf-c, libevent, libinih, libsystemd
# and pkg-config), into .gpudeps/ at the repository root (ignored by git).
# The device tool carries that folder (carry: [".gpudeps"]); tests/gpu/run.sh
# unpacks it into a private prefix there when the machine's own pkg-config
# cannot find the libraries. Nothing is installed on either machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=$root/.gpudeps

pkgs=(
	pkgconf pkgconf-bin libpkgconf3
	libpcre2-dev libpcre2-8-0 libpcre2-16-0 libpcre2-32-0 libpcre2-posix3
	libcjson-dev libcjson1
	libnng-dev libnng1 libmbedtls14 libmbedcrypto7 libmbedx509-1
	libprotobuf-c-dev libprotobuf-c1 protobuf-c-compiler libprotoc32 libprotobuf32
	libevent-dev libevent-2.1-7 libevent-core-2.1-7 libevent-extra-2.1-7 libevent-pthreads-2.1-7
	libinih-dev libinih1 libinireader0
	libsystemd-dev libsystemd0
)

rm -rf "$dir"
mkdir -p "$dir"
cd "$dir"
if ! apt-get download "${pkgs[@]}" >/dev/null; then
	echo "gpu-deps: apt-get download failed (run 'apt-get update' first?)" >&2
	exit 1
fi
echo "gpu-deps: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in $dir"
