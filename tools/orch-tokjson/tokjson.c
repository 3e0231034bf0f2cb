#include "tokjson.h"

#include <stdio.h>
#include <string.h>

#include "base/sbuf.h"
#include "gguf/gguf.h"
#include "text/tokenizer.h"

static void
json_str(struct sbuf *b, const char *s, size_t n)
{
	sbuf_putc(b, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			sbuf_printf(b, "\\%c", c);
		else if (c < 0x20)
			sbuf_printf(b, "\\u%04x", c);
		else
			sbuf_putc(b, (char)c);
	}
	sbuf_putc(b, '"');
}

static void
put_pretok(struct sbuf *b, const char *pre)
{
	if (strcmp(pre, "gpt-2") == 0 || strcmp(pre, "default") == 0) {
		sbuf_puts(
		        b,
		        "{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}");
		return;
	}
	sbuf_puts(
	        b,
	        "{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":");
	json_str(b, tok_pre_regex(pre), strlen(tok_pre_regex(pre)));
	sbuf_puts(
	        b,
	        "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":false,\"use_regex\":false}]}");
}

static void
put_model(struct sbuf *b, const struct gguf_arr *tokens, const struct gguf_arr *merges, bool pairs,
          bool ignore_merges)
{
	sbuf_printf(
	        b,
	        "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":%s,\"vocab\":{",
	        ignore_merges ? "true" : "false");
	for (uint64_t i = 0; i < tokens->n; i++) {
		if (i)
			sbuf_putc(b, ',');
		json_str(b, tokens->strs[i].ptr, tokens->strs[i].len);
		sbuf_printf(b, ":%llu", (unsigned long long)i);
	}
	sbuf_puts(b, "},\"merges\":[");
	for (uint64_t i = 0; i < merges->n; i++) {
		const char *m = merges->strs[i].ptr;
		size_t n = merges->strs[i].len;
		const char *sp = n > 1 ? memchr(m + 1, ' ', n - 1) : NULL;
		if (i)
			sbuf_putc(b, ',');
		if (pairs && sp != NULL) {
			sbuf_putc(b, '[');
			json_str(b, m, (size_t)(sp - m));
			sbuf_putc(b, ',');
			json_str(b, sp + 1, n - (size_t)(sp - m) - 1);
			sbuf_putc(b, ']');
		} else {
			json_str(b, m, n);
		}
	}
	sbuf_puts(b, "]}");
}

orch_err
tokjson_write(const struct gguf_file *f, const char *path, bool pairs, struct orch_errinfo *reterr)
{
	const struct gguf_arr *tokens, *merges, *types = NULL;
	struct gguf_str model, pre = {"default", 7};
	char pre_name[64];
	struct sbuf b = {0};
	bool first = true;
	orch_err rv = ORCH_OK;

	if (gguf_get_str(f, "tokenizer.ggml.model", &model) != ORCH_OK || model.len != 4 ||
	    memcmp(model.ptr, "gpt2", 4) != 0 ||
	    gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &tokens) != ORCH_OK ||
	    gguf_get_arr(f, "tokenizer.ggml.merges", GGUF_VTYPE_STRING, &merges) != ORCH_OK)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: not a byte-level BPE (gpt2) vocabulary", gguf_name(f));
	gguf_get_str(f, "tokenizer.ggml.pre", &pre);
	snprintf(pre_name, sizeof(pre_name), "%.*s", (int)(pre.len > 60 ? 60 : pre.len), pre.ptr);
	if (tok_pre_regex(pre_name) == NULL)
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "%s: pre-tokenizer '%s' is not supported", gguf_name(f), pre_name);
	gguf_get_arr(f, "tokenizer.ggml.token_type", GGUF_VTYPE_COUNT, &types);
	sbuf_puts(&b,
	          "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[");
	for (uint64_t i = 0; types != NULL && i < types->n && i < tokens->n; i++) {
		int64_t ty = gguf_arr_int(types, i);
		if (ty != TOK_TYPE_CONTROL && ty != TOK_TYPE_USER_DEFINED)
			continue;
		sbuf_printf(&b, "%s{\"id\":%llu,\"content\":", first ? "" : ",",
		            (unsigned long long)i);
		json_str(&b, tokens->strs[i].ptr, tokens->strs[i].len);
		sbuf_printf(
		        &b,
		        ",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,\"normalized\":false,\"special\":%s}",
		        ty == TOK_TYPE_CONTROL ? "true" : "false");
		first = false;
	}
	sbuf_puts(&b, "],\"normalizer\":null,\"pre_tokenizer\":");
	put_pretok(&b, pre_name);
	sbuf_puts(
	        &b,
	        ",\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},");
	put_model(&b, tokens, merges, pairs, strcmp(pre_name, "llama-bpe") == 0);
	sbuf_puts(&b, "}\n");
	if (sbuf_err(&b) != ORCH_OK) {
		sbuf_fini(&b);
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	}
	FILE *fp = fopen(path, "wb");
	if (fp == NULL || fwrite(b.p, 1, b.n, fp) != b.n)
		rv = orch_errf(reterr, ORCH_EIO, "%s: cannot write", path);
	if (fp != NULL && fclose(fp) != 0 && rv == ORCH_OK)
		rv = orch_errf(reterr, ORCH_EIO, "%s: cannot write", path);
	sbuf_fini(&b);
	return rv;
}
