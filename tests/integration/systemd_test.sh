#!/usr/bin/env bash
# systemd_test.sh - 'make install' staged into a DESTDIR: every file lands
# where systemd looks, the unit passes 'systemd-analyze verify' with no
# complaint, its 'systemd-analyze security' exposure stays at or under 2.0,
# the sysusers.d snippet creates the orch user and the tmpfiles.d snippet its
# directories (in a scratch root), the installed config passes
# 'orchd --check-config', and a second install keeps an edited config.
set -euo pipefail
bin=${ORCH_BIN:?ORCH_BIN not set}
build=$(cd "$bin/.." && pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok   $*"; }
bad() { echo "FAIL $*" >&2; fail=1; }

prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
sysdir=$(sed -n 's/^ORCH_SYSTEMD_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
stage=$tmp/stage
DESTDIR=$stage "$src/scripts/install.sh" "$build" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; bad "install into DESTDIR"; exit 1; }
for f in "$prefix/bin/orchd" "$prefix/bin/orch-worker" "$prefix/bin/orchctl" \
	"$sysdir/systemd/system/orchd.service" "$sysdir/sysusers.d/orchd.conf" \
	"$sysdir/tmpfiles.d/orchd.conf" /etc/orchd/orchd.conf \
	"$prefix/share/bash-completion/completions/orchctl" "$prefix/share/doc/orch/openapi.json" \
	"$prefix/share/man/man8/orchd.8" "$prefix/share/man/man1/orchctl.1" \
	"$prefix/share/man/man1/orch-worker.1"; do
	[[ -e $stage$f ]] && ok "installed $f" || bad "missing $stage$f"
done
# the man pages render without a warning (man-db's man, when this machine has it)
if command -v man >/dev/null; then
	for p in man8/orchd.8 man1/orchctl.1 man1/orch-worker.1; do
		out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$stage$prefix/share/man/$p" 2>&1 >/dev/null)
		[[ -z $out ]] && ok "man $p renders" || bad "man $p: $out"
	done
fi
unit=$stage$sysdir/systemd/system/orchd.service
grep -q "^ExecStart=$prefix/bin/orchd " "$unit" && ok "ExecStart names the installed orchd" ||
	bad "ExecStart: $(grep ^ExecStart "$unit")"

# verify resolves ExecStart on this system: point it at the staged binary.
sed "s#^ExecStart=$prefix/bin/orchd#ExecStart=$stage$prefix/bin/orchd#" "$unit" >"$tmp/orchd.service"
if out=$(systemd-analyze verify "$tmp/orchd.service" 2>&1) && [[ -z $out ]]; then
	ok "systemd-analyze verify"
else
	bad "systemd-analyze verify: $out"
fi
score=$(systemd-analyze security --offline=true "$tmp/orchd.service" 2>&1 |
	sed -n 's/.*Overall exposure level for orchd.service: \([0-9.]*\).*/\1/p')
if [[ -n $score ]] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
	ok "systemd-analyze security: exposure $score"
else
	bad "systemd-analyze security: exposure '${score}' (want <= 2.0)"
fi
for key in Type=notify NotifyAccess=main WatchdogSec= Restart=on-failure RuntimeDirectory=orchd \
	StateDirectory=orchd User=orch NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes \
	PrivateTmp=yes CapabilityBoundingSet= SystemCallFilter=@system-service DeviceAllow=/dev/nvidiactl; do
	grep -q "^$key" "$unit" && ok "unit has $key" || bad "unit lacks $key"
done

root=$tmp/root
mkdir -p "$root/etc"
if systemd-sysusers --root="$root" "$stage$sysdir/sysusers.d/orchd.conf" >/dev/null 2>&1 &&
	grep -q '^orch:x:[0-9]*:[0-9]*:.*:/var/lib/orchd:' "$root/etc/passwd"; then
	ok "sysusers.d creates the orch user"
else
	bad "sysusers.d: $(cat "$root/etc/passwd" 2>/dev/null)"
fi
if [[ $(id -u) -eq 0 ]]; then
	systemd-tmpfiles --root="$root" --create "$stage$sysdir/tmpfiles.d/orchd.conf" &&
		[[ -d $root/var/lib/orchd/models && -d $root/etc/orchd ]] &&
		ok "tmpfiles.d creates the directories" || bad "tmpfiles.d"
else
	echo "skip tmpfiles.d --create: needs root to chown (the file is still parsed below)"
	systemd-tmpfiles --root="$root" --cat-config >/dev/null && ok "tmpfiles.d parses" || bad "tmpfiles.d"
fi

"$stage$prefix/bin/orchd" --config "$stage/etc/orchd/orchd.conf" --check-config >"$tmp/cc" 2>&1 &&
	ok "installed config passes --check-config" || bad "installed config: $(cat "$tmp/cc")"
echo "# edited" >>"$stage/etc/orchd/orchd.conf"
DESTDIR=$stage "$src/scripts/install.sh" "$build" >"$tmp/install2.log" 2>&1
grep -q "# edited" "$stage/etc/orchd/orchd.conf" && grep -q keeping "$tmp/install2.log" &&
	ok "a second install keeps the edited config" || bad "config overwritten"
exit $fail
