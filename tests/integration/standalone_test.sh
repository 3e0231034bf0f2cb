#!/usr/bin/env bash
# standalone_test.sh - a clone with nothing beside it, and the first minutes of a
# new user (issue 18): tests that need ../shared/testdata skip (exit 77) and say
# so; 'make run' (scripts/run.sh) serves the repository's model on PORT;
# orchd --model FILE serves one model with no config; --version; --check-config
# checks files and devices; a busy port and an unwritable runtime directory are
# sentences that say what to do.
set -uo pipefail
bin=${ORCH_BIN:?ORCH_BIN not set}
src=${ORCH_SRC:?ORCH_SRC not set}
tmp=$(mktemp -d)
chmod 755 "$tmp"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
model=$src/models/stories260K.gguf
gone=$tmp/no/testdata

# 1. without the shared data, the tests that need it skip with a line that says why
for t in gguf_test tokenizer_test; do
	out=$(ORCH_TESTDATA=$gone "$bin/$t" 2>&1)
	rc=$?
	[[ $rc -eq 77 && $out == *"skipped: needs the shared test data"* ]] && ok || bad "$t without data: rc=$rc $out"
done
out=$(ORCH_TESTDATA=$gone ORCH_BIN=$bin python3 "$src/tests/integration/orchd_test.py" 2>&1)
rc=$?
[[ $rc -eq 77 && $out == *skipped* ]] && ok || bad "orchd_test without data: rc=$rc $out"
out=$(ORCH_TESTDATA=$gone ORCH_BIN=$bin "$src/tests/integration/run_test.sh" 2>&1)
rc=$?
[[ $rc -eq 77 && $out == *skipped* ]] && ok || bad "run_test without data: rc=$rc $out"

# a free port below the ephemeral range
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
pick_port() {
	local p=$((20000 + ($$ + $1) % 10000))
	while ! port_free $p; do p=$((p + 1)); done
	echo $p
}
# wait_ready PORT - until /ready answers 200 (60 s: a loaded machine, ASan)
wait_ready() {
	for _ in $(seq 600); do
		[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$1/ready") == 200 ]] && return 0
		sleep 0.1
	done
	return 1
}

# 2. make run's script on PORT, with the repository's own model
port=$(pick_port 1)
PORT=$port ORCH_RUN_DIR=$tmp/run "$src/scripts/run.sh" "$bin/.." >"$tmp/run.out" 2>&1 &
pids+=($!)
if wait_ready "$port"; then
	ok
	grep -q "orchd on http://127.0.0.1:$port" "$tmp/run.out" && ok || bad "run.sh does not name its port: $(head -3 "$tmp/run.out")"
	body=$(curl -s "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' \
		-d '{"model":"stories260k","prompt":"Once upon a time","max_tokens":8}')
	[[ $body == *'"finish_reason":"length"'* ]] && ok || bad "make run completion: $body"
else
	bad "make run on PORT=$port never ready: $(tail -5 "$tmp/run.out")"
fi
kill "${pids[-1]}" 2>/dev/null
out=$(PORT=http "$src/scripts/run.sh" "$bin/.." 2>&1)
[[ $? -eq 2 && $out == *"PORT wants 1-65535"* ]] && ok || bad "PORT=http: $out"

# 3. orchd --model FILE: one model, no config file; its name is the file's
port=$(pick_port 2)
"$bin/orchd" --model "$model" --port "$port" --runtime-dir "$tmp/rt" --context 256 >"$tmp/m.out" 2>&1 &
pids+=($!)
if wait_ready "$port"; then
	ok
	body=$(curl -s "http://127.0.0.1:$port/v1/models/stories260K")
	[[ $body == *'"context_length":256'* ]] && ok || bad "--model --context: $body"
	[[ -S $tmp/rt/orchd.sock ]] && ok || bad "admin socket not in --runtime-dir"
	# a second orchd on the same port: a sentence that says what to do, no API error code
	out=$("$bin/orchd" --model "$model" --port "$port" --runtime-dir "$tmp/rt2" 2>&1)
	[[ $? -ne 0 && $out == *"port is in use"*"--port"* && $out != *MODEL_LOAD_FAILED* ]] && ok ||
		bad "busy port: $out"
else
	bad "orchd --model never ready: $(tail -5 "$tmp/m.out")"
fi

# 4. --version, the usage's mistakes
out=$("$bin/orchd" --version)
[[ $out == "orchd orch-"* ]] && ok || bad "orchd --version: $out"
out=$("$bin/orchd" --device cpu 2>&1)
[[ $? -eq 2 && $out == *"without --model"* ]] && ok || bad "--device alone: $out"
out=$("$bin/orchd" --port 0 --model "$model" 2>&1)
[[ $? -ne 0 && $out == *"--port wants"* ]] && ok || bad "--port 0: $out"

# a runtime directory others can write is refused (they could plant pidfiles orchd kills)
mkdir -p "$tmp/ww" && chmod 777 "$tmp/ww"
out=$("$bin/orchd" --model "$model" --port "$(pick_port 4)" --runtime-dir "$tmp/ww" 2>&1)
[[ $? -ne 0 && $out == *"is not orchd's own"* ]] && ok || bad "a world-writable runtime dir: $out"
out=$("$bin/orchd" --name x 2>&1)
[[ $? -eq 2 && $out == *"without --model"* ]] && ok || bad "--name alone: $out"

# 5. --check-config: files that exist and are GGUF, devices that are here
printf 'not a model\n' >"$tmp/text.gguf"
cat >"$tmp/bad.conf" <<CONF
[server]
nvml_library = $tmp/no-libnvidia-ml.so
[model "gone"]
path = $tmp/missing.gguf
[model "text"]
path = $tmp/text.gguf
[model "gpu"]
path = $model
device = cuda:7
[model "good"]
path = $model
CONF
out=$("$bin/orchd" --config "$tmp/bad.conf" --check-config 2>&1)
rc=$?
[[ $rc -eq 1 ]] && ok || bad "--check-config of a bad config: rc=$rc"
[[ $out == *"model 'gone'"*"No such file"* ]] && ok || bad "missing file not reported: $out"
[[ $out == *"model 'text'"*"not a GGUF file"* ]] && ok || bad "non-GGUF file not reported: $out"
[[ $out == *"model 'gpu': device cuda:7 is not here"* ]] && ok || bad "absent device not reported: $out"
[[ $out == *"model 'good'"*": ok"* && $out == *"3 problems"* ]] && ok || bad "summary: $out"
out=$("$bin/orchd" --model "$model" --check-config 2>&1)
[[ $? -eq 0 && $out == *"ok (1 model)"* ]] && ok || bad "--check-config --model: $out"

# 6. not root: a runtime directory of the user's own, or a sentence naming --runtime-dir
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
if [[ $(id -u) -eq 0 ]] && command -v setpriv >/dev/null &&
	as_nobody test -x "$bin/orchd" -a -x "$bin/orch-worker" -a -r "$model"; then
	port=$(pick_port 3)
	mkdir -p "$tmp/xdg" && chown 65534 "$tmp/xdg"
	(cd "$tmp" && exec setpriv --reuid=65534 --regid=65534 --clear-groups env XDG_RUNTIME_DIR="$tmp/xdg" HOME="$tmp" "$bin/orchd" --model "$model" --port "$port" >"$tmp/u.out" 2>&1) &
	pids+=($!)
	if wait_ready "$port"; then
		[[ -S $tmp/xdg/orchd/orchd.sock ]] && ok || bad "a user's orchd: no socket in \$XDG_RUNTIME_DIR/orchd"
		# and the same user's orchctl finds it with no --socket
		out=$(as_nobody env -u ORCHD_SOCKET XDG_RUNTIME_DIR="$tmp/xdg" "$bin/orchctl" status 2>&1)
		[[ $? -eq 0 && $out == *stories260K* ]] && ok || bad "a user's orchctl status: $out"
	else
		bad "orchd as a user never ready: $(tail -3 "$tmp/u.out")"
	fi
	out=$(as_nobody "$bin/orchd" --model "$model" --port "$port" --runtime-dir /run/orch-test-$$ 2>&1)
	[[ $out == *"Permission denied"*"--runtime-dir"* ]] && ok || bad "unwritable runtime dir: $out"
else
	echo "standalone_test: not root, no setpriv, or the build is not readable by others: the non-root checks are skipped"
fi

echo "standalone_test: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
