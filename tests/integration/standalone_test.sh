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

# 1. without the shared data, tests read the repository's tests/data (and what make deps
# fetched there: tests/data/SOURCE.md); they pass, or skip naming the file they lack
# (issue 52, B1). gpt_oss_test's model is the shared data's only: it always skips so.
for t in gguf_test tokenizer_test engine_test; do
	out=$(ORCH_TESTDATA=$gone ORCH_SRC=$src "$bin/$t" 2>&1)
	rc=$?
	[[ $rc -eq 0 || ($rc -eq 77 && $out == *"skipped: needs "*" of the shared test data"*) ]] && ok ||
		bad "$t without data: rc=$rc $(tail -3 <<<"$out")"
done
out=$(ORCH_TESTDATA=$gone ORCH_SRC=$src "$bin/gpt_oss_test" 2>&1)
[[ $? -eq 77 && $out == *"skipped: needs models/"*"gpt-oss-tiny"* ]] && ok || bad "gpt_oss_test without data: $out"
for t in orchd_test.py run_test.sh; do
	case $t in *.py) run=(python3 "$src/tests/integration/$t") ;; *) run=("$src/tests/integration/$t") ;; esac
	out=$(ORCH_TESTDATA=$gone ORCH_BIN=$bin "${run[@]}" 2>&1)
	rc=$?
	[[ $rc -eq 0 || ($rc -eq 77 && $out == *"skipped: needs "*) ]] && ok || bad "$t without data: rc=$rc $(tail -3 <<<"$out")"
done

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
	# a second make run on the same directory touches nothing of the first's (issue 52, A3)
	cp "$tmp/run/orchd.conf" "$tmp/run.conf.before"
	out=$(PORT=$(pick_port 5) ORCH_RUN_DIR=$tmp/run "$src/scripts/run.sh" "$bin/.." 2>&1)
	[[ $? -ne 0 && $out == *"already runs from $tmp/run"* ]] && ok || bad "a second make run: $out"
	cmp -s "$tmp/run/orchd.conf" "$tmp/run.conf.before" && ok || bad "a second make run rewrote orchd.conf"
	[[ -S $tmp/run/orchd.sock ]] && ok || bad "a second make run removed the admin socket"
	# orchctl finds make run's orchd with no ORCHD_SOCKET (the discovery directory; when
	# other tests' orchds run too it takes the newest and names the others) (issue 52, B4)
	# (other tests' orchds come and go meanwhile: the newest may stop between orchctl's
	# listing and its request, so a few tries)
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		out=$(env -u ORCHD_SOCKET "$bin/orchctl" status 2>&1)
		rc=$?
		[[ $rc -eq 0 && ($out == *stories260k* || $out == *"$tmp/run/orchd.sock"*) ]] && break
		sleep 0.5
	done
	[[ $rc -eq 0 && ($out == *stories260k* || $out == *"$tmp/run/orchd.sock"*) ]] && ok ||
		bad "orchctl status without ORCHD_SOCKET (10 tries): $out"
	# ... and prefers make run's orchd of its own build (BUILD/run beside BUILD/bin/orchctl) to a
	# newer one started elsewhere
	mkdir -p "$tmp/bin" && cp "$bin/orchctl" "$tmp/bin/orchctl"
	"$bin/orchd" --model "$model" --port "$(pick_port 8)" --runtime-dir "$tmp/newer" >"$tmp/newer.out" 2>&1 &
	pids+=($!)
	for _ in $(seq 100); do [[ -S $tmp/newer/orchd.sock ]] && break; sleep 0.1; done
	out=$(env -u ORCHD_SOCKET "$tmp/bin/orchctl" status 2>&1 >/dev/null)
	[[ $out == *"this is make run's of this build, at $tmp/run/orchd.sock"* ]] && ok ||
		bad "orchctl of a build prefers its make run's orchd: $out"
	kill "${pids[-1]}" 2>/dev/null
	unset 'pids[-1]'
	# make run checks before it builds: run.sh --check says the same and writes nothing
	out=$(PORT=$(pick_port 5) ORCH_RUN_DIR=$tmp/run "$src/scripts/run.sh" --check "$bin/.." 2>&1)
	[[ $? -ne 0 && $out == *"already runs from $tmp/run"* ]] && ok || bad "run.sh --check: $out"
	# a closed terminal (SIGHUP to make run) stops orchd, where SIGHUP to orchd reloads
	kill -HUP "${pids[-1]}"
	for _ in $(seq 100); do
		curl -s -o /dev/null "http://127.0.0.1:$port/health" || break
		sleep 0.1
	done
	curl -s -o /dev/null "http://127.0.0.1:$port/health" && bad "make run after SIGHUP: orchd still serves" || ok
	wait "${pids[-1]}" 2>/dev/null
	grep -q 'event=stopping why="signal 15"' "$tmp/run.out" && ok || bad "SIGHUP to make run: $(tail -3 "$tmp/run.out")"
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
	# OpenAI's APIs without "model" take the one model served, as llama-server does
	body=$(curl -s "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
		-d '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}')
	[[ $body == *'"model":"stories260k"'* && $body == *'"finish_reason":"length"'* ]] && ok || bad "chat without model: $body"
	body=$(curl -s "http://127.0.0.1:$port/v1/models/stories260k") # the name in lower case, as make run's
	[[ $body == *'"context_length":256'* ]] && ok || bad "--model --context: $body"
	[[ -S $tmp/rt/orchd.sock ]] && ok || bad "admin socket not in --runtime-dir"
	# a second orchd on the same runtime directory, or on the same admin socket, stops and
	# leaves the first's socket where it was, answering (issue 52, A3)
	out=$("$bin/orchd" --model "$model" --port "$(pick_port 6)" --runtime-dir "$tmp/rt" 2>&1)
	[[ $? -ne 0 && $out == *"in use by another orchd"* ]] && ok || bad "a second orchd on the runtime dir: $out"
	out=$("$bin/orchd" --model "$model" --port "$(pick_port 7)" --runtime-dir "$tmp/rt3" --admin-socket "$tmp/rt/orchd.sock" 2>&1)
	[[ $? -ne 0 && $out == *"admin socket $tmp/rt/orchd.sock is in use by another orchd"* ]] && ok ||
		bad "a second orchd on the admin socket: $out"
	out=$(ORCHD_SOCKET=$tmp/rt/orchd.sock "$bin/orchctl" status 2>&1)
	[[ $? -eq 0 && $out == *stories260k* ]] && ok || bad "the first orchd's admin socket after two refused starts: $out"
	out=$(ORCHD_SOCKET=$tmp/rt/orchd.sock "$bin/orchctl" status --json 2>&1)
	[[ $out == *'"context_length":256'* ]] && ok || bad "status --json: the context the worker took: $out"
	# a second orchd on the same port: a sentence that says what to do, no API error code
	out=$("$bin/orchd" --model "$model" --port "$port" --runtime-dir "$tmp/rt2" 2>&1)
	[[ $? -ne 0 && $out == *"port is in use"*"--port"* && $out != *MODEL_LOAD_FAILED* ]] && ok ||
		bad "busy port: $out"
else
	bad "orchd --model never ready: $(tail -5 "$tmp/m.out")"
fi

# 3b. under umask 0, in a runtime directory of mode 0755: nothing orchd or its worker makes
# there is writable by others (pidfiles name what the next orchd kills) (issue 52, A4)
port=$(pick_port 8)
mkdir -m 755 "$tmp/um"
(umask 0 && exec "$bin/orchd" --model "$model" --port "$port" --runtime-dir "$tmp/um" --context 256 >"$tmp/um.out" 2>&1) &
pids+=($!)
if wait_ready "$port"; then
	modes=$(cd "$tmp/um" && stat -c '%a %n' worker-* orchd.sock orchd.lock 2>&1)
	[[ $modes == *".pid"* ]] && ok || bad "umask 0: no pidfile: $modes"
	writable=""
	while read -r m n; do # other's digit, group's (the admin socket is the group's: 0660)
		if (((${m: -1} & 2) != 0)) || { (((${m: -2:1} & 2) != 0)) && [[ $n != orchd.sock ]]; }; then
			writable+=" $m $n"
		fi
	done <<<"$modes"
	[[ -z $writable ]] && ok || bad "umask 0: files others (or the group) can write:$writable"
else
	bad "orchd under umask 0 never ready: $(tail -3 "$tmp/um.out")"
fi
kill "${pids[-1]}" 2>/dev/null

# 3c. orchd --model BAD stops, exit status 1, saying why (as llama-server -m does)
printf 'not a model\n' >"$tmp/notgguf.gguf"
for bad_model in "$tmp/notgguf.gguf" "$tmp/missing.gguf"; do
	out=$(timeout 60 "$bin/orchd" --model "$bad_model" --port "$(pick_port 9)" --runtime-dir "$tmp/bm" 2>&1)
	rc=$?
	[[ $rc -eq 1 && $out == *start_failed*"$bad_model"* ]] && ok || bad "orchd --model $bad_model: rc=$rc $(tail -3 <<<"$out")"
done

# a config's model serving and a failing --model beside it: orchd drains and exits 1
cat >"$tmp/good.conf" <<CONF
[server]
listen = 127.0.0.1:$(pick_port 10)
runtime_dir = $tmp/gm
[model "good"]
path = $model
context = 256
CONF
out=$(timeout 60 "$bin/orchd" --config "$tmp/good.conf" --model "$tmp/notgguf.gguf" 2>&1)
rc=$?
[[ $rc -eq 1 && $out == *start_failed* && $out == *"event=stopping"* ]] && ok ||
	bad "--config with a failing --model: rc=$rc $(tail -3 <<<"$out")"

# 4. --version, the usage's mistakes
for p in orchd orchctl orch-worker; do # the same build id, each program's name first
	out=$("$bin/$p" --version)
	[[ $out == "$p orch-"* ]] && ok || bad "$p --version: $out"
done
for p in orchctl orch-worker; do # "version" and "help [COMMAND]" as git takes them
	out=$("$bin/$p" version) && [[ $out == "$p orch-"* ]] && ok || bad "$p version: $out"
	out=$("$bin/$p" help) && [[ $out == "usage: $p COMMAND"* ]] && ok || bad "$p help: $out"
done
out=$("$bin/orch-worker" help run) && [[ $out == "usage: orch-worker run --model"* ]] && ok ||
	bad "orch-worker help run: $out"
out=$("$bin/orchd" --device cpu 2>&1)
[[ $? -eq 2 && $out == *"without --model"* ]] && ok || bad "--device alone: $out"
out=$("$bin/orchd" --port 0 --model "$model" 2>&1)
[[ $? -ne 0 && $out == *"--port wants"* ]] && ok || bad "--port 0: $out"

# a runtime directory others can write is refused (they could plant pidfiles orchd kills)
mkdir -p "$tmp/ww" && chmod 777 "$tmp/ww"
out=$("$bin/orchd" --model "$model" --port "$(pick_port 4)" --runtime-dir "$tmp/ww" 2>&1)
[[ $? -ne 0 && $out == *"is not orchd's own"* ]] && ok || bad "a world-writable runtime dir: $out"
# ... and one whose parent everyone can write, unless sticky (/tmp): anyone could replace it
out=$("$bin/orchd" --model "$model" --port "$(pick_port 4)" --runtime-dir "$tmp/ww/run/" 2>&1)
[[ $? -ne 0 && $out == *"its parent $tmp/ww is writable by everyone and not sticky"* && ! -e $tmp/ww/run ]] &&
	ok || bad "a runtime dir under a world-writable parent: $out"
chmod 1777 "$tmp/ww"
out=$(timeout 3 "$bin/orchd" --model "$model" --port "$(pick_port 4)" --runtime-dir "$tmp/ww/run" 2>&1)
[[ $out != *"not sticky"* && -e $tmp/ww/run/orchd.lock ]] && ok || bad "a sticky world-writable parent is refused: $out"
# a symbolic link is not followed, and the message says so
mkdir -m 700 "$tmp/real-run" && ln -s "$tmp/real-run" "$tmp/link-run"
out=$("$bin/orchd" --model "$model" --port "$(pick_port 4)" --runtime-dir "$tmp/link-run" 2>&1)
[[ $? -ne 0 && $out == *"is a symbolic link"* ]] && ok || bad "a symlinked runtime dir: $out"
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
