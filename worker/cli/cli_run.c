/*
 * cli_run.c - "orch-worker run": one-shot generation without a server.
 *
 * The prompt is tokenized with the model's BOS and special text parsed
 * (with --chat it is first wrapped as one user message in the model's chat
 * template, and BOS is not added again when the template already starts
 * with it). Load progress goes to stderr. --format text streams the text;
 * jsonl prints {"i","id","t"} per token and a summary line.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/parse.h"
#include "base/readfile.h"
#include "cli.h"
#include "engine/engine.h"
#include "engine/scheduler.h"
#include "text/model_text.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

struct run_opts {
	const char *model, *device, *prompt, *prompt_file, *format, *dump_path;
	bool chat, jsonl, kv_f32, no_graphs;
	bool literal;    /* --no-parse-special: special-token text in the prompt stays text */
	bool ignore_eos; /* --ignore-eos: the end-of-generation tokens banned, as the APIs' field */
	uint32_t n, n_ctx, threads, dump_n;
	struct samp_params sp;
	bool seed_given;
	enum text_source tokenizer;
	const char *stops[ORCH_MAX_STOPS];
	uint32_t n_stops;
};

struct run_state {
	const struct run_opts *o;
	FILE *dump;
	uint32_t dumped;
	enum orch_finish why;
	orch_err err;
	char msg[512];
	bool done;
};

static void
json_text(const char *s, size_t n)
{
	cJSON *str;
	char *tmp = orch_strndup(s, n), *out;

	str = cJSON_CreateString(tmp ? tmp : "");
	out = str ? cJSON_PrintUnformatted(str) : NULL;
	fputs(out ? out : "\"\"", stdout);
	cJSON_free(out);
	cJSON_Delete(str);
	orch_free(tmp);
}

static void
on_token(void *ctx, struct sched_job *j, uint32_t index, int32_t id, const char *text, size_t n)
{
	struct run_state *st = ctx;
	const struct harmony_tag *tag = n > 0 ? sched_job_tag(j) : NULL;

	if (!st->o->jsonl) {
		fwrite(text, 1, n, stdout);
		fflush(stdout);
		return;
	}
	if (id < 0) { /* held-back text flushed at the end: attach to the last token */
		printf("{\"i\":%u,\"id\":null,\"t\":", index);
	} else {
		printf("{\"i\":%u,\"id\":%d,\"t\":", index, id);
	}
	json_text(text, n);
	if (tag != NULL) { /* harmony: the message this text is content of */
		printf(",\"message\":%u,\"channel\":", tag->message);
		json_text(tag->channel, strlen(tag->channel));
		if (tag->recipient[0]) {
			printf(",\"recipient\":");
			json_text(tag->recipient, strlen(tag->recipient));
		}
	}
	printf("}\n");
}

static void
on_logits(void *ctx, struct sched_job *j, uint32_t index, const float *logits, uint32_t n_vocab)
{
	struct run_state *st = ctx;

	(void)j;
	if (st->dump == NULL || index >= st->o->dump_n)
		return;
	fputs(index == 0 ? "[[" : ",\n[", st->dump);
	for (uint32_t i = 0; i < n_vocab; i++)
		fprintf(st->dump, i ? ",%.9g" : "%.9g", (double)logits[i]);
	fputc(']', st->dump);
	st->dumped++;
}

static void
on_end(void *ctx, struct sched_job *j, enum orch_finish why, orch_err err, const char *msg)
{
	struct run_state *st = ctx;

	st->why = why;
	st->err = err;
	snprintf(st->msg, sizeof(st->msg), "%s", msg ? msg : "");
	st->done = true;
	if (st->o->jsonl && why != ORCH_FINISH_ERROR)
		printf("{\"prompt_tokens\":%u,\"tokens_out\":%u,\"finish_reason\":\"%s\",\"prefill_ms\":%.3f,\"decode_ms\":%.3f,\"seed\":%llu}\n",
		       j->n_prompt, j->tokens_out, orch_finish_name(why), j->prefill_ms,
		       j->decode_ms, (unsigned long long)j->sp.seed);
	else if (!st->o->jsonl && why != ORCH_FINISH_ERROR)
		putchar('\n');
}

/* Load progress in steps of 10 %: on one line on a terminal, else a line each. */
static void
progress(void *ctx, uint64_t done, uint64_t total)
{
	int *last = ctx, pct = total ? (int)(100 * done / total) / 10 * 10 : 100;

	if (pct == *last)
		return;
	*last = pct;
	fprintf(stderr,
	        isatty(STDERR_FILENO) ? "\rorch-worker: loading %3d%%"
	                              : "orch-worker: loading %3d%%\n",
	        pct);
	if (pct == 100 && isatty(STDERR_FILENO))
		fputc('\n', stderr);
}

static bool
parse_float(const char *flag, const char *s, float lo, float hi, float *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || *end != '\0' || v < (double)lo || v > (double)hi) {
		fprintf(stderr, "orch-worker run: %s wants a number in [%g, %g], got '%s'\n", flag,
		        (double)lo, (double)hi, s);
		return false;
	}
	*out = (float)v;
	return true;
}

static bool
parse_count(const char *flag, const char *s, uint64_t lo, uint64_t hi, uint32_t *out)
{
	uint64_t v;

	if (orch_parse_u64(s, lo, hi, &v) != ORCH_OK) {
		fprintf(stderr, "orch-worker run: %s wants an integer in [%llu, %llu], got '%s'\n",
		        flag, (unsigned long long)lo, (unsigned long long)hi, s);
		return false;
	}
	*out = (uint32_t)v;
	return true;
}

/* The sampling options of run (--temperature ... --stop); false: not one of them or bad. */
static bool
sampling_opt(struct run_opts *o, int c, bool *ok)
{
	uint32_t k;
	uint64_t seed;

	switch (c) {
	case 't':
		*ok = parse_float("--temperature", optarg, 0, 2, &o->sp.temperature);
		break;
	case 'k':
		*ok = parse_count("--top-k", optarg, 0, 1u << 24, &k);
		o->sp.top_k = (int32_t)k;
		break;
	case 'P':
		*ok = parse_float("--top-p", optarg, 0, 1, &o->sp.top_p);
		break;
	case 'M':
		*ok = parse_float("--min-p", optarg, 0, 1, &o->sp.min_p);
		break;
	case 'r':
		*ok = parse_float("--repeat-penalty", optarg, 0, 2, &o->sp.repeat_penalty);
		break;
	case 's':
		*ok = orch_parse_u64(optarg, 0, UINT64_MAX, &seed) == ORCH_OK;
		o->sp.seed = seed;
		o->seed_given = true;
		if (!*ok)
			fprintf(stderr, "orch-worker run: --seed wants an unsigned integer\n");
		break;
	case 'S':
		if (o->n_stops == ORCH_MAX_STOPS || optarg[0] == '\0') {
			fprintf(stderr, "orch-worker run: up to %u non-empty --stop strings\n",
			        ORCH_MAX_STOPS);
			*ok = false;
		} else {
			o->stops[o->n_stops++] = optarg;
		}
		break;
	default:
		return false;
	}
	return true;
}

/* The other options of run; false for an unknown one. */
static bool
other_opt(struct run_opts *o, int c, int argc, char **argv, bool *ok)
{
	switch (c) {
	case 'm':
		o->model = optarg;
		break;
	case 'D':
		o->device = optarg;
		break;
	case 'p':
		o->prompt = optarg;
		break;
	case 'f':
		o->prompt_file = optarg;
		break;
	case 'c':
		o->chat = true;
		break;
	case 'n':
		*ok = parse_count("-n", optarg, 1, 1u << 20, &o->n);
		break;
	case 'C':
		*ok = parse_count("--context", optarg, 1, 1u << 22, &o->n_ctx);
		break;
	case 'T':
		*ok = parse_count("--threads", optarg, 1, 256, &o->threads);
		break;
	case 'F':
		o->format = optarg;
		break;
	case 'L':
		*ok = optind < argc &&
		      parse_count("--dump-logits", optarg, 1, 1u << 20, &o->dump_n);
		if (*ok)
			o->dump_path = argv[optind++];
		break;
	case 'K':
		o->kv_f32 = true;
		break;
	case 'G':
		o->no_graphs = true;
		break;
	case 'N':
		o->literal = true;
		break;
	case 'E':
		o->ignore_eos = true;
		break;
	case 'z':
		if (text_source_parse(optarg, &o->tokenizer) != ORCH_OK) {
			fprintf(stderr,
			        "orch-worker run: --tokenizer wants gguf or hf-json, got '%s'\n",
			        optarg);
			*ok = false;
		}
		break;
	default:
		return false;
	}
	return true;
}

static int
parse_args(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
	                                         {"device", required_argument, NULL, 'D'},
	                                         {"prompt", required_argument, NULL, 'p'},
	                                         {"prompt-file", required_argument, NULL, 'f'},
	                                         {"chat", no_argument, NULL, 'c'},
	                                         {"temperature", required_argument, NULL, 't'},
	                                         {"top-k", required_argument, NULL, 'k'},
	                                         {"top-p", required_argument, NULL, 'P'},
	                                         {"min-p", required_argument, NULL, 'M'},
	                                         {"repeat-penalty", required_argument, NULL, 'r'},
	                                         {"seed", required_argument, NULL, 's'},
	                                         {"stop", required_argument, NULL, 'S'},
	                                         {"context", required_argument, NULL, 'C'},
	                                         {"threads", required_argument, NULL, 'T'},
	                                         {"format", required_argument, NULL, 'F'},
	                                         {"dump-logits", required_argument, NULL, 'L'},
	                                         {"kv-f32", no_argument, NULL, 'K'},
	                                         {"no-graphs", no_argument, NULL, 'G'},
	                                         {"tokenizer", required_argument, NULL, 'z'},
	                                         {"no-parse-special", no_argument, NULL, 'N'},
	                                         {"ignore-eos", no_argument, NULL, 'E'},
	                                         {NULL, 0, NULL, 0}};
	int c;

	o->sp = samp_defaults();
	o->n = 128;
	o->device = "cpu";
	o->format = "text";
	while ((c = getopt_long(argc, argv, "n:", longopts, NULL)) != -1) {
		bool ok = true;
		if (!sampling_opt(o, c, &ok) && !other_opt(o, c, argc, argv, &ok))
			ok = false;
		if (!ok)
			return 2;
	}
	o->jsonl = strcmp(o->format, "jsonl") == 0;
	if (o->model == NULL || (o->prompt == NULL) == (o->prompt_file == NULL) || optind != argc ||
	    (!o->jsonl && strcmp(o->format, "text") != 0)) {
		cli_usage("run");
		return 2;
	}
	if (!o->seed_given)
		o->sp.seed = samp_random_seed();
	return 0;
}

/* The prompt's ids: BOS per the model, special text parsed. */
static orch_err
prompt_ids(const struct run_opts *o, const struct model_text *mt, struct tok_ids *ids,
           struct orch_errinfo *e)
{
	char *text = NULL;
	size_t n = o->prompt ? strlen(o->prompt) : 0;
	orch_err rv;

	if (o->prompt_file && (rv = orch_read_file(o->prompt_file, 64u << 20, &text, &n, e)))
		return rv;
	const char *src = text ? text : o->prompt;
	struct prompt_msg user = {"user", src, NULL};
	struct prompt_chat chat = {&user, 1, NULL};
	rv = prompt_encode(mt, src, n, o->literal, o->chat ? &chat : NULL, ids, e);
	orch_free(text);
	return rv;
}

static int
generate(const struct run_opts *o, struct engine *eng)
{
	struct orch_errinfo e = {0};
	struct tok_ids ids = {0};
	struct run_state st = {.o = o};
	struct samp_bias *ban = NULL;
	int rc = 1;
	static const struct sched_job_ops jops = {
	        .on_token = on_token, .on_logits = on_logits, .on_end = on_end};

	if (prompt_ids(o, &eng->mt, &ids, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker: %s\n", e.msg[0] ? e.msg : "out of memory");
		goto out;
	}
	if (o->dump_path && (st.dump = fopen(o->dump_path, "w")) == NULL) {
		fprintf(stderr, "orch-worker: %s: cannot write\n", o->dump_path);
		goto out;
	}
	struct sched_job j = {.id = 1,
	                      .prompt = ids.v,
	                      .n_prompt = (uint32_t)ids.n,
	                      .sp = o->sp,
	                      .max_tokens = o->n,
	                      .stops = o->stops,
	                      .n_stops = o->n_stops,
	                      .ops = &jops,
	                      .ctx = &st,
	                      .keep_space = !o->chat}; /* a raw prompt's text goes on */
	if (o->ignore_eos) { /* each end-of-generation token banned: -n tokens always come */
		const int32_t *eog;
		size_t n_eog = tok_eog(eng->mt.tok, &eog);
		if (n_eog > 0 && (ban = orch_calloc(n_eog, sizeof(*ban))) == NULL) {
			fprintf(stderr, "orch-worker: out of memory\n");
			goto out;
		}
		for (size_t i = 0; i < n_eog; i++)
			ban[i] = (struct samp_bias){eog[i], -100.0f};
		j.sp.bias = ban;
		j.sp.n_bias = (uint32_t)n_eog;
	}
	struct harmony hm;
	if (eng->mt.harmony) { /* gpt-oss: the harmony text as it is; jsonl says the channels */
		harmony_init(&hm, eng->mt.tok, &eng->mt.hv);
		j.hm = &hm;
		j.hm_raw = true;
	}
	if (sched_submit(eng->s, &j, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker: %s: %s\n", orch_err_wire(e.code), e.msg);
		goto out;
	}
	while (!st.done)
		sched_step(eng->s);
	if (st.why == ORCH_FINISH_ERROR)
		fprintf(stderr, "orch-worker: %s: %s\n", orch_err_wire(st.err), st.msg);
	else
		rc = 0;
out:
	if (st.dump != NULL) {
		fputs(st.dumped ? "]\n" : "[]\n", st.dump);
		fclose(st.dump);
	}
	orch_free(ban);
	tok_ids_fini(&ids);
	return rc;
}

int
cli_run(int argc, char **argv)
{
	struct run_opts o = {0};
	struct engine *eng = NULL;
	struct orch_errinfo e = {0};
	int last_pct = -1;
	int rc = parse_args(argc, argv, &o);

	if (rc != 0)
		return rc;
	struct engine_config cfg = {.model_path = o.model,
	                            .device = o.device,
	                            .tokenizer = o.tokenizer,
	                            .slots = 1,
	                            .n_ctx = o.n_ctx,
	                            .threads = o.threads,
	                            .kv_f32 = o.kv_f32,
	                            .no_graphs = o.no_graphs,
	                            .progress = progress,
	                            .progress_ctx = &last_pct};
	if (engine_open(&cfg, &eng, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker: %s\n", e.msg[0] ? e.msg : "out of memory");
		return 1;
	}
	rc = generate(&o, eng);
	engine_close(eng);
	return rc;
}
