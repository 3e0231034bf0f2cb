#!/usr/bin/env bash
# peer_cleanup_test.sh - the peer harness leaves nothing running (issue 52, B7):
# 'bench/peer/peer.sh serve' against a stand-in llama-server (a small HTTP server
# that answers /health and fails completions, so no llama.cpp build is needed)
# and the repository's model; once it exits, neither its orchd (nor its worker)
# nor the stand-in runs. Before, the EXIT trap named a local array that was out
# of scope at exit, and both were left running.
set -uo pipefail
bin=${ORCH_BIN:?ORCH_BIN not set}
src=${ORCH_SRC:?ORCH_SRC not set}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/llama-build/bin" "$tmp/llama.cpp"
cat >"$tmp/llama-build/bin/llama-server" <<'PY'
#!/usr/bin/env python3
import http.server, sys
port = int(sys.argv[sys.argv.index("--port") + 1])
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def do_POST(self):
        self.send_response(500); self.end_headers()
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", port), H).serve_forever()
PY
chmod +x "$tmp/llama-build/bin/llama-server"
port=$((20000 + ($$ % 5000) * 2))
PEER_DIR=$tmp BUILD=$bin/.. ORCH_TESTDATA=$src SERVE_MODEL=stories-f32 STREAMS=1 ROUNDS=1 \
	ORCH_PORT=$port LLAMA_PORT=$((port + 1)) timeout 120 "$src/bench/peer/peer.sh" serve >"$tmp/out" 2>&1
rc=$?
sleep 0.5
left=$(pgrep -af "$tmp" | grep -v pgrep)
fail=0
[[ $rc -eq 0 ]] || { echo "FAIL: peer.sh serve exited $rc: $(tail -5 "$tmp/out")"; fail=1; }
[[ -z $left ]] || { echo "FAIL: left running: $left"; pkill -f "$tmp"; fail=1; }
echo "peer_cleanup_test: $((fail ? 0 : 2)) passed, $fail failed"
exit $fail
