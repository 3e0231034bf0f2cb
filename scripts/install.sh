#!/usr/bin/env bash
# install.sh BUILD - 'make install': the programs, the systemd unit, the
# sysusers.d/tmpfiles.d snippets and docs (cmake --install), the example
# configuration as /etc/orchd/orchd.conf when there is none (an existing one
# is never overwritten), and then, on the live system as root, the orch user,
# its directories and a systemd daemon-reload. DESTDIR stages it all for a
# package instead and touches nothing outside DESTDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
destdir=${DESTDIR:-}
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
sysdir=$(sed -n 's/^ORCH_SYSTEMD_LIBDIR:PATH=//p' "$build/CMakeCache.txt")

cmake --install "$build"

conf="$destdir/etc/orchd/orchd.conf"
if [ -e "$conf" ]; then
	echo "install: keeping $conf"
else
	install -D -m 0640 systemd/orchd.conf "$conf"
	echo "install: wrote $conf"
fi

if [ -n "$destdir" ] || [ "$(id -u)" -ne 0 ]; then
	echo "install: staged; on the target system run as root:"
	echo "  systemd-sysusers $sysdir/sysusers.d/orchd.conf"
	echo "  systemd-tmpfiles --create $sysdir/tmpfiles.d/orchd.conf"
	echo "  systemctl daemon-reload && systemctl enable --now orchd"
	exit 0
fi
systemd-sysusers "$sysdir/sysusers.d/orchd.conf"
systemd-tmpfiles --create "$sysdir/tmpfiles.d/orchd.conf"
chgrp orch "$conf"
if [ -d /run/systemd/system ]; then
	systemctl daemon-reload
fi
echo "install: done ($prefix). Add a model to $conf, then: systemctl enable --now orchd"
