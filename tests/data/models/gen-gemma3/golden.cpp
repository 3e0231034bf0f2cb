// llama.cpp greedy goldens for orch (gemma3: gen-qwen3/golden.cpp with Gemma's chat prompt and
// a vocabulary that adds BOS): golden MODEL.gguf OUT.json
// CPU, 1 thread, n_ctx 1024, flash attention off, F16 KV cache (default).
// Writes JSON laid out as Python's json.dumps(indent=1) (ensure_ascii), floats as the
// shortest decimal that round-trips the float32 (std::to_chars). Exit 2 if a greedy step's
// top1 - top2 < 1e-3 * |top1| (too close to call for a reimplementation).
#include "llama.h"
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

// the third prompt, a chat turn in the family's format (gen-mistral3/make.sh passes Mistral's)
#ifndef CHAT_PROMPT
#define CHAT_PROMPT "<start_of_turn>user\nHello<end_of_turn>\n<start_of_turn>model\n"
#endif

static const char * PROMPTS[] = {
    "Once upon a time",
    "The old lighthouse keeper had lived on the island for almost forty years. Every night he climbed "
    "the narrow stairs, cleaned the great lamp, and watched the ships pass far out on the dark water. "
    "Most of the sailors never knew his name, but they trusted his light more than their own maps. "
    "One stormy evening in late autumn, a small fishing boat lost its way in the fog, and the keeper "
    "saw it drifting toward the rocks. He rang the bell, waved his lantern, and shouted until his "
    "voice was gone.",
    CHAT_PROMPT,
};
static const int N_PREDICT = 16;

static std::string jstr(const std::string & s) {  // Python json.dumps(ensure_ascii=True); bad UTF-8 -> U+FFFD
    std::string o = "\"";
    char b[16];
    auto u = [&](unsigned c) { snprintf(b, sizeof b, "\\u%04x", c); o += b; };
    for (size_t i = 0; i < s.size();) {
        unsigned char c = s[i];
        unsigned cp = 0; int n = 0;
        if (c < 0x80) { cp = c; n = 1; }
        else if ((c & 0xE0) == 0xC0) { cp = c & 0x1F; n = 2; }
        else if ((c & 0xF0) == 0xE0) { cp = c & 0x0F; n = 3; }
        else if ((c & 0xF8) == 0xF0) { cp = c & 0x07; n = 4; }
        bool ok = n > 0 && i + n <= s.size();
        for (int k = 1; ok && k < n; k++) { unsigned char d = s[i + k]; ok = (d & 0xC0) == 0x80; cp = (cp << 6) | (d & 0x3F); }
        if (!ok) { u(0xFFFD); i++; continue; }
        i += n;
        if (cp == '"') o += "\\\""; else if (cp == '\\') o += "\\\\";
        else if (cp == '\n') o += "\\n"; else if (cp == '\r') o += "\\r"; else if (cp == '\t') o += "\\t";
        else if (cp == '\b') o += "\\b"; else if (cp == '\f') o += "\\f";
        else if (cp >= 0x20 && cp < 0x7F) o += (char) cp;
        else if (cp < 0x10000) u(cp);
        else { cp -= 0x10000; u(0xD800 + (cp >> 10)); u(0xDC00 + (cp & 0x3FF)); }
    }
    return o + "\"";
}
static std::string jf(float x) { char b[64]; auto r = std::to_chars(b, b + sizeof b, x); return std::string(b, r.ptr); }

// minimal JSON tree, printed like json.dumps(indent=1)
struct J {
    std::string atom; bool obj = false, arr = false;
    std::vector<std::pair<std::string, J>> kv; std::vector<J> items;
    static J A(std::string s) { J j; j.atom = std::move(s); return j; }
    static J O() { J j; j.obj = true; return j; }
    static J L() { J j; j.arr = true; return j; }
    J & set(const std::string & k, J v) { kv.emplace_back(k, std::move(v)); return *this; }
    J & push(J v) { items.push_back(std::move(v)); return *this; }
    void dump(std::string & o, int d) const {
        std::string in(d + 1, ' '), out(d, ' ');
        if (obj || arr) {
            size_t n = obj ? kv.size() : items.size();
            if (!n) { o += obj ? "{}" : "[]"; return; }
            o += obj ? "{\n" : "[\n";
            for (size_t i = 0; i < n; i++) {
                o += in;
                if (obj) { o += jstr(kv[i].first) + ": "; kv[i].second.dump(o, d + 1); } else items[i].dump(o, d + 1);
                o += i + 1 < n ? ",\n" : "\n";
            }
            o += out + (obj ? "}" : "]");
        } else o += atom;
    }
};
static J I(long v) { return J::A(std::to_string(v)); }

static std::string piece(const llama_vocab * v, llama_token t, bool special) {
    char buf[256]; int n = llama_token_to_piece(v, t, buf, sizeof buf, 0, special);
    return n < 0 ? std::string() : std::string(buf, n);
}

int main(int argc, char ** argv) {
    if (argc < 3) { fprintf(stderr, "usage: %s MODEL.gguf OUT.json\n", argv[0]); return 1; }
    const char * path = argv[1];
    llama_log_set([](ggml_log_level, const char *, void *) {}, nullptr);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    llama_model * model = llama_model_load_from_file(path, mp);
    if (!model) { fprintf(stderr, "load failed\n"); return 1; }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 1024; cp.n_threads = 1; cp.n_threads_batch = 1;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = true;

    const char * base = strrchr(path, '/'); base = base ? base + 1 : path;
    J root = J::O();
    root.set("model_file", J::A(jstr(base)));
    root.set("generator", J::A(jstr("llama.cpp (de3ff81, the llama.cpp bundled in npm node-llama-cpp@3.22.1), CPU backend, 1 thread, libllama API")));
    root.set("method", J::A(jstr(
        "prompt tokenized with add_special=true (this vocab adds BOS) and parse_special=true; whole prompt decoded "
        "in one batch in a fresh context; then greedy argmax (ties: lowest id) over the logits of the last position, one token per "
        "decode, stopping at n_predict (16) or an end-of-generation token (which is recorded as the last step). "
        "'logits' = full raw logit vector (all n_vocab entries) for the first 2 steps; top5 = [id, logit] pairs "
        "for every step (sorted by logit desc, then id asc); 'piece' rendered with special=true; 'text' = the "
        "generated pieces rendered with special=false. Floats are the shortest decimals that round-trip the float32. "
        "KV cache type F16 (llama.cpp default).")));
    J settings = J::O();
    settings.set("n_ctx", I(cp.n_ctx)).set("n_batch", I(cp.n_batch)).set("n_ubatch", I(cp.n_ubatch))
            .set("n_seq_max", I(cp.n_seq_max)).set("n_threads", I(cp.n_threads)).set("n_threads_batch", I(cp.n_threads_batch))
            .set("flash_attn_type", J::A(jstr(llama_flash_attn_type_name(cp.flash_attn_type))))
            .set("type_k", J::A(jstr(cp.type_k == GGML_TYPE_F16 ? "f16" : "?")))
            .set("type_v", J::A(jstr(cp.type_v == GGML_TYPE_F16 ? "f16" : "?")))
            .set("n_gpu_layers", I(mp.n_gpu_layers)).set("rope_freq_base", J::A("0")).set("rope_freq_scale", J::A("0"))
            .set("kv_unified", J::A(cp.kv_unified ? "true" : "false")).set("n_predict", I(N_PREDICT));
    root.set("settings", settings);

    J cases = J::L();
    int rc = 0;
    for (const char * prompt : PROMPTS) {
        llama_context * ctx = llama_init_from_model(model, cp);
        std::vector<llama_token> toks(4096);
        int n = llama_tokenize(vocab, prompt, strlen(prompt), toks.data(), toks.size(), true, true);
        toks.resize(n);
        J c = J::O(), jpt = J::L(), jgen = J::L(), steps = J::L();
        for (auto t : toks) jpt.push(I(t));
        std::vector<llama_token> cur = toks;
        std::string text; float worst = INFINITY;
        for (int s = 0; s < N_PREDICT; s++) {
            if (llama_decode(ctx, llama_batch_get_one(cur.data(), cur.size()))) { fprintf(stderr, "decode failed\n"); return 1; }
            const float * lg = llama_get_logits_ith(ctx, -1);
            std::vector<int> idx(n_vocab);
            for (int i = 0; i < n_vocab; i++) idx[i] = i;
            std::partial_sort(idx.begin(), idx.begin() + 5, idx.end(), [&](int a, int b) { return lg[a] > lg[b] || (lg[a] == lg[b] && a < b); });
            llama_token t = idx[0];
            float margin = (lg[idx[0]] - lg[idx[1]]) / std::fabs(lg[idx[0]]);
            worst = std::min(worst, margin);
            if (lg[idx[0]] - lg[idx[1]] < 1e-3f * std::fabs(lg[idx[0]])) rc = 2;
            bool eog = llama_vocab_is_eog(vocab, t);
            J st = J::O(), top = J::L();
            for (int k = 0; k < 5; k++) top.push(J::L().push(I(idx[k])).push(J::A(jf(lg[idx[k]]))));
            st.set("step", I(s)).set("token", I(t)).set("piece", J::A(jstr(piece(vocab, t, true)))).set("top5", top);
            if (s < 2) { J l = J::L(); for (int i = 0; i < n_vocab; i++) l.push(J::A(jf(lg[i]))); st.set("logits", l); }
            st.set("is_eog", J::A(eog ? "true" : "false"));
            steps.push(st); jgen.push(I(t));
            text += piece(vocab, t, false);
            if (eog) break;
            cur.assign(1, t);
        }
        fprintf(stderr, "%s: prompt %d tokens, min rel margin %.4g%s\n", base, n, worst, worst < 1e-3f ? "  TOO CLOSE" : "");
        c.set("prompt", J::A(jstr(prompt))).set("add_bos", J::A(llama_vocab_get_add_bos(vocab) ? "true" : "false"))
         .set("n_vocab", I(n_vocab)).set("prompt_tokens", jpt).set("generated_tokens", jgen)
         .set("text", J::A(jstr(text))).set("steps", steps);
        cases.push(c);
        llama_free(ctx);
    }
    root.set("cases", cases);
    std::string o; root.dump(o, 0);
    FILE * f = fopen(argv[2], "wb"); fwrite(o.data(), 1, o.size(), f); fclose(f);
    llama_model_free(model);
    return rc;
}
