#!/usr/bin/env bash
# run.sh BUILD - what 'make run' does: start orchd on 127.0.0.1:8080 (PORT=N
# or LISTEN=HOST:PORT elsewhere) with
# the default model, stories260K (a real 1.1 MB Llama model kept in the
# repository: models/, see NOTICE), on the best device present: cuda:0 when
# nvidia-smi lists a GPU and the CUDA module was built, else the cpu
# (ORCH_DEVICE=cpu|cuda:N chooses). Runtime files go in BUILD/run.
# ORCH_MODEL=FILE serves another GGUF instead. run.sh --check BUILD: only the checks
# (PORT, the model, an orchd already running there, a busy port), which make run does
# before it builds anything.
# orchd runs in a session of its own and run.sh passes it the terminal's signals:
# Ctrl-C (SIGINT) drains, a second one stops at once; a closed terminal (SIGHUP,
# which to orchd means reload) stops it as SIGTERM does.
set -euo pipefail
check_only=false
if [[ ${1:-} == --check ]]; then
	check_only=true
	shift
fi
root=$(cd "$(dirname "$0")/.." && pwd)
$check_only || mkdir -p "${1:-build}"
# the physical path: orchctl finds make run's orchd of its build by /proc/self/exe's
build=$(cd "${1:-build}" 2>/dev/null && pwd -P || echo "${1:-build}")
run=${ORCH_RUN_DIR:-$build/run}
model=${ORCH_MODEL:-$root/models/stories260K.gguf}
port=${PORT:-8080}
listen=${LISTEN:-127.0.0.1:$port}
if [[ ! $port =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
	echo "make run: PORT wants 1-65535, got '$port'" >&2
	exit 2
fi
url=http://$listen
[[ $listen == 0.0.0.0:* ]] && url=http://127.0.0.1:${listen##*:}
device=${ORCH_DEVICE:-}
if [[ -z $device ]]; then
	device=cpu
	if [[ -e $build/lib/liborch-cuda.so ]] && nvidia-smi -L 2>/dev/null | grep -q '^GPU 0'; then
		device=cuda:0
	fi
fi
if [[ ! -f $model ]]; then
	echo "make run: $model is missing (the default model is models/stories260K.gguf in the repository)" >&2
	exit 1
fi
# an orchd already serving from this directory keeps its config and sockets: say so, touch nothing
if [[ -e $run/orchd.lock ]] && ! flock -n "$run/orchd.lock" true 2>/dev/null; then
	echo "make run: an orchd already runs from $run (it holds $run/orchd.lock): stop it first, or give this one another directory with ORCH_RUN_DIR=DIR" >&2
	exit 1
fi
# something already answers on the port: say what to change before announcing anything
host=${listen%:*}
[[ $host == 0.0.0.0 || -z $host ]] && host=127.0.0.1
if (exec 3<>"/dev/tcp/$host/${listen##*:}") 2>/dev/null; then
	echo "make run: $listen is in use (something answers there): pick another port with make run PORT=N (or LISTEN=HOST:PORT)" >&2
	exit 1
fi
$check_only && exit 0
mkdir -p "$run"
cat >"$run/orchd.conf" <<CONF
# written by scripts/run.sh (make run)
[server]
listen = $listen
admin_socket = $run/orchd.sock
runtime_dir = $run

[model "stories260k"]
path = $model
device = $device
slots = 8
preload = yes
CONF
echo "make run: orchd on $url (a chat page at $url/), model on $device, admin socket $run/orchd.sock"
echo "make run: try  curl -N $url/v1/completions -H 'Content-Type: application/json' -d '{\"model\":\"stories260k\",\"prompt\":\"Once upon a time\",\"max_tokens\":32}'"
echo "make run: and  $build/bin/orchctl status   (it finds this one, make run's of this build; its admin socket is $run/orchd.sock)"
# without job control setsid does not fork (orchd is no group leader here), so $! is orchd
setsid "$build/bin/orchd" --config "$run/orchd.conf" &
pid=$!
trap 'kill -INT "$pid" 2>/dev/null || true' INT
trap 'kill -TERM "$pid" 2>/dev/null || true' TERM HUP
while kill -0 "$pid" 2>/dev/null; do
	wait "$pid" 2>/dev/null || true # a trapped signal ends a wait early
done
wait "$pid" 2>/dev/null
