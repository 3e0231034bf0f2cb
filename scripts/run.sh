#!/usr/bin/env bash
# run.sh BUILD - what 'make run' does: start orchd on 127.0.0.1:8080 with
# the default model, stories260K (a real 1.1 MB Llama model kept in the
# repository: models/, see NOTICE), on the cpu (the CUDA backend is not yet
# verified on a GPU). Runtime files go in BUILD/run. ORCH_MODEL=FILE serves
# another GGUF instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-build}" && pwd)
run=$build/run
model=${ORCH_MODEL:-$root/models/stories260K.gguf}
mkdir -p "$run"
if [[ ! -f $model ]]; then
	echo "make run: $model is missing (the default model is models/stories260K.gguf in the repository)" >&2
	exit 1
fi
cat >"$run/orchd.conf" <<CONF
# written by scripts/run.sh (make run)
[server]
listen = 127.0.0.1:8080
admin_socket = $run/orchd.sock
runtime_dir = $run

[model "stories260k"]
path = $model
device = cpu
slots = 8
context = 512
preload = yes
CONF
echo "make run: orchd on http://127.0.0.1:8080, admin socket $run/orchd.sock"
echo "make run: try  curl -N localhost:8080/v1/completions -H 'Content-Type: application/json' -d '{\"model\":\"stories260k\",\"prompt\":\"Once upon a time\",\"max_tokens\":32}'"
echo "make run: and  ORCHD_SOCKET=$run/orchd.sock $build/bin/orchctl status"
exec "$build/bin/orchd" --config "$run/orchd.conf"
