/*
 * inspect.c - "orchctl inspect": describe GGUF files without a daemon.
 *
 * Text output is one "label  value" line per fact (--tensors adds one line
 * per tensor: name, type, shape, offset, bytes); --json prints one JSON
 * object per file, one per line. The memory estimate is for --context and
 * --slots (F16 KV); --kv-cache-mib (or --kv-cache-fraction, of this
 * machine's memory, as a cpu worker here would take it) and --kv-block-tokens
 * size the full-attention layers' KV as the worker's paged pool does (issue
 * 19): a budget, or without one slots × ceil(context / block) blocks, and say
 * what fits.
 * A file that fails to open gives one line on stderr ("orchctl: FILE:
 * offset N: what") and, with --json, an object with an "error" member; the
 * exit code is 1 if any file failed.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/meminfo.h"
#include "base/parse.h"
#include "gguf/ggml_type.h"
#include "gguf/gguf.h"
#include "gguf/model_info.h"
#include "orchctl.h"

struct inspect_opts {
	bool json;
	bool tensors;   /* list every tensor */
	uint32_t n_ctx; /* 0: the model's trained context */
	uint32_t slots;
	uint32_t kv_cache_mib;    /* the paged pool's budget; 0: the default pool */
	double kv_cache_fraction; /* or this share of this machine's memory (a cpu worker) */
	uint32_t kv_block_tokens; /* 0: MODEL_DEFAULT_KV_BLOCK_TOKENS */
	bool paged;               /* one of the three above was given */
};

/* The KV element bytes the estimate counts (F16 K and V, the worker's default). */
#define INSPECT_KV_ELEM_BYTES 2

static const char *
fmt_bytes(uint64_t b, char *buf, size_t n)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	size_t u = 0;

	while (v >= 1024.0 && u < 4) {
		v /= 1024.0;
		u++;
	}
	snprintf(buf, n, u ? "%.2f %s" : "%.0f %s", v, units[u]);
	return buf;
}

static const char *
fmt_count(uint64_t c, char *buf, size_t n)
{
	if (c >= 1000000000ull)
		snprintf(buf, n, "%.2fB", (double)c / 1e9);
	else if (c >= 1000000ull)
		snprintf(buf, n, "%.1fM", (double)c / 1e6);
	else if (c >= 1000ull)
		snprintf(buf, n, "%.1fK", (double)c / 1e3);
	else
		snprintf(buf, n, "%llu", (unsigned long long)c);
	return buf;
}

/* The text of token @id, for the special-token line. */
static struct gguf_str
token_text(const struct gguf_file *f, uint32_t id)
{
	const struct gguf_arr *a;
	struct gguf_str none = {"", 0};

	if (gguf_get_arr(f, "tokenizer.ggml.tokens", GGUF_VTYPE_STRING, &a) != ORCH_OK ||
	    id >= a->n)
		return none;
	return a->strs[id];
}

/* The estimate's line, and the KV cache's split when some layers slide. */
static void
print_memory(const struct model_info *mi, const struct mem_estimate *est)
{
	char b1[32], b2[32], b3[32], b4[32];

	if (est == NULL && mi->has_hparams) {
		printf("memory          n/a (out of range: the KV pool past 2^32 positions, or an overflow)\n");
		return;
	}
	if (est == NULL) {
		printf("memory          n/a (missing %s.%s)\n", mi->arch[0] ? mi->arch : "?",
		       mi->missing ? mi->missing : "?");
		return;
	}
	printf("memory          context %u x %u slot%s: weights %s + KV %s (F16) + overhead %s = %s\n",
	       est->n_ctx, est->slots, est->slots == 1 ? "" : "s",
	       fmt_bytes(est->weights, b1, sizeof(b1)), fmt_bytes(est->kv, b2, sizeof(b2)),
	       fmt_bytes(est->overhead, b3, sizeof(b3)), fmt_bytes(est->total, b4, sizeof(b4)));
	if (mi->n_layer_swa == 0)
		return;
	uint32_t full = mi->n_layer - mi->n_layer_swa, swa = mi->n_layer_swa;
	if (est->kv_block_tokens)
		printf("kv cache        full attention: %u layer%s in the pool = %s", full,
		       full == 1 ? "" : "s", fmt_bytes(est->kv_full, b1, sizeof(b1)));
	else
		printf("kv cache        full attention: %u layer%s x %u cells/slot = %s", full,
		       full == 1 ? "" : "s", est->n_ctx, fmt_bytes(est->kv_full, b1, sizeof(b1)));
	printf("; sliding window %u: %u layer%s x %u cells/slot", mi->n_swa, swa,
	       swa == 1 ? "" : "s", est->swa_cells);
	if (est->kv_block_tokens) /* paged: the window's own pool, model_swa_blocks a slot */
		printf(" (%u blocks a slot, in a pool of their own)",
		       est->swa_cells / est->kv_block_tokens);
	printf(" = %s\n", fmt_bytes(est->kv_swa, b2, sizeof(b2)));
}

/* Tokens per block: the estimate's pool, else the option, else the worker's default. */
static uint32_t
block_tokens(const struct mem_estimate *est, const struct inspect_opts *opt)
{
	if (est->kv_block_tokens)
		return est->kv_block_tokens;
	return opt->kv_block_tokens ? opt->kv_block_tokens : MODEL_DEFAULT_KV_BLOCK_TOKENS;
}

/*
 * What the KV of one position and one block costs, and with a pool what it holds:
 * its blocks, their positions and how many sequences of the context that is.
 */
static void
print_kv(const struct model_info *mi, const struct mem_estimate *est,
         const struct inspect_opts *opt)
{
	uint32_t bt = block_tokens(est, opt);
	uint64_t block = model_kv_block_bytes(mi, bt, INSPECT_KV_ELEM_BYTES);
	char b1[32], b2[32];

	if (est->kv_token_bytes == 0)
		printf("kv per token    0 B (no full-attention layer; the sliding-window rings are per slot)\n");
	else
		printf("kv per token    %s (a %u-token block %s)\n",
		       fmt_bytes(est->kv_token_bytes, b1, sizeof(b1)), bt,
		       fmt_bytes(block, b2, sizeof(b2)));
	if (!est->kv_block_tokens)
		return;
	if (opt->kv_cache_mib)
		printf("kv pool         %u MiB = ", opt->kv_cache_mib);
	else if (opt->kv_cache_fraction > 0)
		printf("kv pool         %g of this machine's memory less the rest, %s = ",
		       opt->kv_cache_fraction, fmt_bytes(est->kv_full, b1, sizeof(b1)));
	else
		printf("kv pool         %s (default: %u slot%s x %u) = ",
		       fmt_bytes(est->kv_full, b1, sizeof(b1)), est->slots,
		       est->slots == 1 ? "" : "s", est->n_ctx);
	if (est->kv_token_bytes == 0) {
		printf("0 blocks (no full-attention layer)\n");
		return;
	}
	printf("%u blocks of %u = %llu tokens", est->kv_blocks, est->kv_block_tokens,
	       (unsigned long long)est->kv_pool_tokens);
	if (est->n_ctx == 0)
		printf("\n");
	else if (est->kv_pool_tokens < est->n_ctx)
		printf(" (less than one sequence of %u: the worker refuses it)\n", est->n_ctx);
	else
		printf(" (%.1f sequences of %u)\n", (double)est->kv_pool_tokens / est->n_ctx,
		       est->n_ctx);
}

static void
print_text(const struct gguf_file *f, const struct model_info *mi, const struct mem_estimate *est,
           const struct inspect_opts *opt)
{
	char b1[32];

	printf("file            %s\n", gguf_name(f));
	printf("format          GGUF v%u, %llu bytes, alignment %u, %zu keys, %zu tensors\n",
	       gguf_version(f), (unsigned long long)gguf_size(f), gguf_alignment(f),
	       gguf_kv_count(f), gguf_tensor_count(f));
	printf("architecture    %s%s%s%s\n", mi->arch[0] ? mi->arch : "(none)",
	       mi->name[0] ? " (name \"" : "", mi->name, mi->name[0] ? "\")" : "");
	printf("parameters      %s (%llu)\n", fmt_count(mi->n_params, b1, sizeof(b1)),
	       (unsigned long long)mi->n_params);
	if (mi->has_hparams) {
		printf("context length  %u\n", mi->n_ctx_train);
		printf("shape           %u layers, n_embd %u, %u heads (%u KV, head_dim %u), n_ff %u\n",
		       mi->n_layer, mi->n_embd, mi->n_head, mi->n_head_kv, mi->head_dim, mi->n_ff);
	}
	for (uint32_t t = 0; t < GGML_TYPE_ID_LIMIT; t++)
		if (mi->types[t].tensors)
			printf("tensors %-7s %u, %s\n", ggml_type_name(t), mi->types[t].tensors,
			       fmt_bytes(mi->types[t].bytes, b1, sizeof(b1)));
	printf("tokenizer       %s%s%s, vocab %u\n", mi->tok_model[0] ? mi->tok_model : "(none)",
	       mi->tok_pre[0] ? ", pre " : "", mi->tok_pre, mi->n_vocab);
	printf("special tokens ");
	for (uint32_t i = 0; i < mi->n_special; i++) {
		struct gguf_str s = token_text(f, mi->special[i].id);
		printf(" %s=%u \"%.*s\"", mi->special[i].what, mi->special[i].id,
		       (int)(s.len > 40 ? 40 : s.len), s.ptr);
	}
	printf("%s\n", mi->n_special ? "" : " (none)");
	if (mi->chat_template_bytes)
		printf("chat template   present (%llu bytes)\n",
		       (unsigned long long)mi->chat_template_bytes);
	else
		printf("chat template   absent\n");
	print_memory(mi, est);
	if (est)
		print_kv(mi, est, opt);
}

static void
print_tensors(const struct gguf_file *f)
{
	for (size_t i = 0; i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		printf("tensor %-40s %-7s [", t->name, ggml_type_name(t->type));
		for (uint32_t d = 0; d < t->n_dims; d++)
			printf("%s%llu", d ? ", " : "", (unsigned long long)t->ne[d]);
		printf("] offset %llu, %llu bytes\n", (unsigned long long)t->offset,
		       (unsigned long long)t->nbytes);
	}
}

static cJSON *
json_tensors(const struct gguf_file *f)
{
	cJSON *arr = cJSON_CreateArray();

	for (size_t i = 0; arr && i < gguf_tensor_count(f); i++) {
		const struct gguf_tensor *t = gguf_tensor_at(f, i);
		cJSON *o = cJSON_CreateObject(), *shape = cJSON_AddArrayToObject(o, "shape");
		cJSON_AddStringToObject(o, "name", t->name);
		cJSON_AddStringToObject(o, "type", ggml_type_name(t->type));
		cJSON_AddNumberToObject(o, "type_id", t->type);
		for (uint32_t d = 0; d < t->n_dims; d++)
			cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)t->ne[d]));
		cJSON_AddNumberToObject(o, "offset", (double)t->offset);
		cJSON_AddNumberToObject(o, "bytes", (double)t->nbytes);
		cJSON_AddItemToArray(arr, o);
	}
	return arr;
}

static cJSON *
json_types(const struct model_info *mi)
{
	cJSON *types = cJSON_CreateObject();

	for (uint32_t t = 0; types && t < GGML_TYPE_ID_LIMIT; t++) {
		if (!mi->types[t].tensors)
			continue;
		cJSON *o = cJSON_AddObjectToObject(types, ggml_type_name(t));
		cJSON_AddNumberToObject(o, "tensors", mi->types[t].tensors);
		cJSON_AddNumberToObject(o, "bytes", (double)mi->types[t].bytes);
	}
	return types;
}

/* The KV facts of print_kv() into @mem. */
static void
json_kv(cJSON *mem, const struct model_info *mi, const struct mem_estimate *est,
        const struct inspect_opts *opt)
{
	uint64_t block = model_kv_block_bytes(mi, block_tokens(est, opt), INSPECT_KV_ELEM_BYTES);

	cJSON_AddNumberToObject(mem, "kv_token_bytes", (double)est->kv_token_bytes);
	cJSON_AddNumberToObject(mem, "kv_block_bytes", (double)block);
	if (!est->kv_block_tokens)
		return;
	cJSON_AddNumberToObject(mem, "kv_blocks", est->kv_blocks);
	cJSON_AddNumberToObject(mem, "kv_block_tokens", est->kv_block_tokens);
	cJSON_AddNumberToObject(mem, "kv_pool_tokens", (double)est->kv_pool_tokens);
	cJSON_AddNumberToObject(mem, "kv_pool_sequences",
	                        est->n_ctx ? (double)est->kv_pool_tokens / est->n_ctx : 0.0);
}

static cJSON *
json_model(const struct gguf_file *f, const struct model_info *mi, const struct mem_estimate *est,
           const struct inspect_opts *opt)
{
	cJSON *o = cJSON_CreateObject(), *tok, *sp, *mem;

	cJSON_AddStringToObject(o, "file", gguf_name(f));
	cJSON_AddNumberToObject(o, "gguf_version", gguf_version(f));
	cJSON_AddNumberToObject(o, "file_bytes", (double)gguf_size(f));
	cJSON_AddStringToObject(o, "architecture", mi->arch);
	cJSON_AddStringToObject(o, "name", mi->name);
	cJSON_AddNumberToObject(o, "parameters", (double)mi->n_params);
	if (mi->has_hparams) {
		cJSON_AddNumberToObject(o, "context_length", mi->n_ctx_train);
		cJSON_AddNumberToObject(o, "layers", mi->n_layer);
		cJSON_AddNumberToObject(o, "embedding_length", mi->n_embd);
		cJSON_AddNumberToObject(o, "heads", mi->n_head);
		cJSON_AddNumberToObject(o, "kv_heads", mi->n_head_kv);
		cJSON_AddNumberToObject(o, "head_dim", mi->head_dim);
		cJSON_AddNumberToObject(o, "feed_forward_length", mi->n_ff);
		cJSON_AddNumberToObject(o, "sliding_window", mi->n_swa);
		cJSON_AddNumberToObject(o, "sliding_window_layers", mi->n_layer_swa);
	}
	cJSON_AddNumberToObject(o, "tensor_count", (double)gguf_tensor_count(f));
	cJSON_AddItemToObject(o, "tensor_types", json_types(mi));
	tok = cJSON_AddObjectToObject(o, "tokenizer");
	cJSON_AddStringToObject(tok, "model", mi->tok_model);
	cJSON_AddStringToObject(tok, "pre", mi->tok_pre);
	cJSON_AddNumberToObject(tok, "vocab_size", mi->n_vocab);
	sp = cJSON_AddObjectToObject(tok, "special");
	for (uint32_t i = 0; sp && i < mi->n_special; i++)
		cJSON_AddNumberToObject(sp, mi->special[i].what, mi->special[i].id);
	cJSON_AddBoolToObject(o, "chat_template", mi->chat_template_bytes > 0);
	if (est == NULL) {
		cJSON_AddNullToObject(o, "memory");
		return o;
	}
	mem = cJSON_AddObjectToObject(o, "memory");
	cJSON_AddNumberToObject(mem, "context", est->n_ctx);
	cJSON_AddNumberToObject(mem, "slots", est->slots);
	cJSON_AddNumberToObject(mem, "weights_bytes", (double)est->weights);
	cJSON_AddNumberToObject(mem, "kv_bytes", (double)est->kv);
	cJSON_AddNumberToObject(mem, "kv_full_bytes", (double)est->kv_full);
	cJSON_AddNumberToObject(mem, "kv_sliding_bytes", (double)est->kv_swa);
	cJSON_AddNumberToObject(mem, "sliding_cells", est->swa_cells);
	cJSON_AddNumberToObject(mem, "overhead_bytes", (double)est->overhead);
	cJSON_AddNumberToObject(mem, "total_bytes", (double)est->total);
	json_kv(mem, mi, est, opt);
	return o;
}

static void
json_print(cJSON *o)
{
	char *s = o ? cJSON_PrintUnformatted(o) : NULL;

	if (s == NULL) {
		fprintf(stderr, "orchctl: out of memory\n");
	} else {
		printf("%s\n", s);
		cJSON_free(s);
	}
	cJSON_Delete(o);
}

/*
 * The estimate for @opt's context and slots, through the paged pool when one was asked
 * for. No --context: a worker's default, the trained context up to MODEL_DEFAULT_CTX.
 */
static orch_err
estimate(const struct model_info *mi, const struct inspect_opts *opt, struct mem_estimate *ret)
{
	uint32_t n_ctx = opt->n_ctx ? opt->n_ctx : model_default_ctx(mi);
	uint64_t total = 0, avail = 0;
	struct mem_kv kv = {.pool_bytes = (uint64_t)opt->kv_cache_mib << 20,
	                    .block_tokens = opt->kv_block_tokens};

	if (opt->kv_cache_fraction > 0) { /* as a cpu worker here would size it (engine.c) */
		orch_meminfo(&total, &avail);
		orch_err rv = model_kv_fraction_pool(mi, n_ctx, opt->slots, INSPECT_KV_ELEM_BYTES,
		                                     opt->kv_block_tokens, opt->kv_cache_fraction,
		                                     total, &kv.pool_bytes);
		if (rv != ORCH_OK)
			return rv;
	}
	if (!opt->paged)
		return model_mem_estimate(mi, n_ctx, opt->slots, INSPECT_KV_ELEM_BYTES, ret);
	return model_mem_estimate_kv(mi, n_ctx, opt->slots, INSPECT_KV_ELEM_BYTES, &kv, ret);
}

static int
inspect_one(const char *path, const struct inspect_opts *opt)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};
	struct model_info mi;
	struct mem_estimate est;
	bool have_est = false;
	orch_err rv;

	rv = gguf_open(path, &f, &e);
	if (rv == ORCH_OK)
		rv = model_info_get(f, &mi, &e);
	if (rv != ORCH_OK) {
		fprintf(stderr, "orchctl: %s\n", e.msg);
		if (opt->json) {
			cJSON *o = cJSON_CreateObject(), *err;
			cJSON_AddStringToObject(o, "file", path);
			err = cJSON_AddObjectToObject(o, "error");
			cJSON_AddStringToObject(err, "code", orch_err_name(rv));
			cJSON_AddStringToObject(err, "message", e.msg);
			json_print(o);
		}
		gguf_close(f);
		return 1;
	}
	if (mi.has_hparams)
		have_est = estimate(&mi, opt, &est) == ORCH_OK;
	if (opt->json) {
		cJSON *o = json_model(f, &mi, have_est ? &est : NULL, opt);
		if (o && opt->tensors)
			cJSON_AddItemToObject(o, "tensors", json_tensors(f));
		json_print(o);
	} else {
		print_text(f, &mi, have_est ? &est : NULL, opt);
		if (opt->tensors)
			print_tensors(f);
	}
	gguf_close(f);
	return 0;
}

/* @s as an integer 1..@max into *@out; -1 with a sentence on stderr when it is not one. */
static int
parse_u32(const char *flag, const char *s, uint32_t max, uint32_t *out)
{
	uint64_t v;

	if (orch_parse_u64(s, 1, max, &v) != ORCH_OK) {
		fprintf(stderr, "orchctl inspect: %s wants an integer 1..%u, got '%s'\n", flag, max,
		        s);
		return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/* One option of @c (its argument @arg); -1 for a bad one, said on stderr. */
static int
parse_opt(int c, const char *arg, struct inspect_opts *opt)
{
	const uint32_t max = 16u * 1024 * 1024;

	switch (c) {
	case 'j':
		opt->json = true;
		return 0;
	case 't':
		opt->tensors = true;
		return 0;
	case 'c':
		return parse_u32("--context", arg, max, &opt->n_ctx);
	case 's':
		return parse_u32("--slots", arg, max, &opt->slots);
	case 'm':
		opt->paged = true;
		return parse_u32("--kv-cache-mib", arg, max, &opt->kv_cache_mib);
	case 'f':
		opt->paged = true;
		if (orch_parse_double(arg, 0.001, 1, &opt->kv_cache_fraction) != ORCH_OK) {
			fprintf(stderr,
			        "orchctl inspect: --kv-cache-fraction wants a number from 0.001 to 1, "
			        "got '%s'\n",
			        arg);
			return -1;
		}
		return 0;
	case 'b':
		opt->paged = true;
		return parse_u32("--kv-block-tokens", arg, MODEL_MAX_KV_BLOCK_TOKENS,
		                 &opt->kv_block_tokens);
	}
	return -1;
}

int
orchctl_inspect(int argc, char **argv)
{
	static const struct option longopts[] = {
	        {"json", no_argument, NULL, 'j'},
	        {"tensors", no_argument, NULL, 't'},
	        {"context", required_argument, NULL, 'c'},
	        {"slots", required_argument, NULL, 's'},
	        {"kv-cache-mib", required_argument, NULL, 'm'},
	        {"kv-block-tokens", required_argument, NULL, 'b'},
	        {"kv-cache-fraction", required_argument, NULL, 'f'},
	        {NULL, 0, NULL, 0}};
	struct inspect_opts opt = {.slots = 1, .json = arg_json};
	int c, failed = 0;

	while ((c = getopt_long(argc, argv, "jtc:s:", longopts, NULL)) != -1)
		if (parse_opt(c, optarg, &opt) != 0)
			return 2;
	if (optind >= argc) {
		fprintf(stderr,
		        "usage: orchctl inspect [--json] [--tensors] [--context N] [--slots S] [--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] FILE.gguf...\n");
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		if (!opt.json && i > optind)
			printf("\n");
		failed |= inspect_one(argv[i], &opt);
	}
	return failed;
}
