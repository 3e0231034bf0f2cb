#!/usr/bin/env bash
# deps.sh [run|test] - installs the Debian packages orch needs, and nothing when
# all are present: 'run' what building and running need (make run), 'test' those
# and what only the tests use (make test; the default). CUDA is not a Debian
# package here: it lives in /usr/local/cuda.
set -euo pipefail
what=${1:-test}

pkgs=(
	build-essential cmake pkg-config     # compilers, CMake >= 3.25
	libcjson-dev                         # JSON output (orchctl --json)
	libpcre2-dev                         # tokenizer pre-tokenizer regexes
	libnng-dev                           # supervisor <-> worker channel (ipc/)
	libprotobuf-c-dev protobuf-c-compiler # its messages (proto/orch.proto)
	libevent-dev libinih-dev libsystemd-dev # orchd: event loop + HTTP, config, sd_notify
	libcurl4-openssl-dev ca-certificates # orchctl pull, orchd pull = yes: HTTPS downloads (issue 21)
)
test_pkgs=(
	clang libclang-rt-14-dev             # libFuzzer for tests/fuzz, the clang build
	clang-format                         # format check in 'make test'
	ccache                               # 'make test': the simulated build reuses the normal build's C objects
	curl prometheus                      # orchd tests: HTTP client, promtool check metrics
	systemd                              # systemd-analyze, -sysusers, -tmpfiles: unit checks
	python3                              # JSON checks in tests/integration
	python3-jsonschema                   # a second validator of structured output (issue 56)
	gdb                                  # stacks of a hung test child
	chromium                             # the chat page's browser test (playwright-core drives it)
)
case $what in
run) ;;
test) pkgs+=("${test_pkgs[@]}") ;;
*)
	echo "usage: deps.sh [run|test]" >&2
	exit 2
	;;
esac

missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
		missing+=("$p")
	fi
done

# Node.js runs the interop tests; the machines here ship it, Debian's works too.
if [ "$what" = test ] && { ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; }; then
	missing+=(nodejs npm)
fi

install_npm() {
	[ "$what" = test ] || return 0
	# Pinned by tests/interop/package-lock.json; skipped when already installed.
	local dir
	dir="$(cd "$(dirname "$0")/.." && pwd)/tests/interop"
	if [ ! -d "$dir/node_modules/@huggingface/gguf" ] || [ ! -d "$dir/node_modules/openai" ] ||
		[ ! -d "$dir/node_modules/@apidevtools/swagger-parser" ] ||
		[ ! -d "$dir/node_modules/playwright-core" ] || [ ! -d "$dir/node_modules/ajv-formats" ] ||
		[ ! -d "$dir/node_modules/@langchain/openai" ] || [ ! -d "$dir/node_modules/zod" ]; then
		echo "deps: installing the interop test packages (npm ci in tests/interop)"
		(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error)
	fi
}

# What a clone without ../shared/testdata can fetch for the tests (tests/data/SOURCE.md).
fetch_testdata() {
	[ "$what" = test ] || return 0
	"$(dirname "$0")/testdata_fetch.sh"
}

if [ ${#missing[@]} -eq 0 ]; then
	install_npm
	fetch_testdata
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing Debian packages: ${missing[*]}" >&2
	echo "deps: run 'make deps' (or 'make deps-run' for running only) as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
install_npm
fetch_testdata
