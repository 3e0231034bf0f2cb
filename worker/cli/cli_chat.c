/*
 * cli_chat.c - "orch-worker chat-template": render a chat template.
 *
 * The messages file is a JSON object: "messages" (required), and optional
 * "bos_token", "eos_token", "tools" (and any other variable the template
 * reads). With --model, bos_token and eos_token default to the text of the
 * model's BOS and EOS tokens. The prompt is printed exactly, with no
 * newline added. Exit codes: 0 rendered, 3 the template raised (its message
 * on stderr), 1 other errors, 2 usage.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/readfile.h"
#include "cli.h"
#include "text/jinja/jinja.h"
#include "text/model_text.h"
#include "text/tokenizer.h"

/* "2024-07-26T00:00:00" (UTC) → seconds; -2 when malformed. */
static int64_t
parse_now(const char *s)
{
	struct tm tm = {0};
	char *end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);

	if (end == NULL || (*end != '\0' && strcmp(end, "Z") != 0))
		return -2;
	return (int64_t)timegm(&tm);
}

/* bos_token/eos_token from the model when the messages file does not set them. */
static void
default_tokens(const struct tok *t, cJSON *vars)
{
	int32_t ids[2] = {tok_bos(t), tok_eos(t)};
	static const char *const keys[2] = {"bos_token", "eos_token"};

	for (int i = 0; i < 2; i++) {
		size_t n;
		const char *s = tok_text(t, ids[i], &n);
		char *copy = s ? strndup(s, n) : NULL;
		if (!cJSON_HasObjectItem(vars, keys[i]))
			cJSON_AddStringToObject(vars, keys[i], copy ? copy : "");
		free(copy);
	}
}

static struct jinja_tmpl *
read_template(const char *tmpl_path)
{
	struct jinja_tmpl *t = NULL;
	struct orch_errinfo e = {0};
	size_t n;
	char *src = NULL;

	if (orch_read_file(tmpl_path, CLI_MAX_INPUT, &src, &n, &e) != ORCH_OK ||
	    jinja_compile(tmpl_path, src, n, &t, &e) != ORCH_OK)
		fprintf(stderr, "orch-worker: %s\n", e.msg);
	orch_free(src);
	return t;
}

/* The model's template (taking it from @mt), saying so when it is the fallback. */
static struct jinja_tmpl *
model_template(const char *model, struct model_text *mt, cJSON *vars)
{
	struct jinja_tmpl *t = mt->tmpl;

	default_tokens(mt->tok, vars);
	if (t == NULL)
		fprintf(stderr, "orch-worker: %s\n", mt->tmpl_err.msg);
	else if (mt->origin == CHAT_FALLBACK)
		fprintf(stderr, "orch-worker: %s has no chat template; using the fallback format\n",
		        model);
	mt->tmpl = NULL;
	return t;
}

static int
render(struct jinja_tmpl *t, cJSON *vars, int64_t now)
{
	struct jinja_opts o = {.now = now};
	struct orch_errinfo e = {0};
	struct sbuf out = {0};
	orch_err rv = jinja_render(t, vars, &o, &out, &e);
	int rc = 0;

	if (rv == ORCH_OK) {
		fwrite(out.p ? out.p : "", 1, out.n, stdout);
	} else {
		fprintf(stderr, rv == ORCH_ETEMPLATE_RAISE ? "%s\n" : "orch-worker: %s\n", e.msg);
		rc = rv == ORCH_ETEMPLATE_RAISE ? 3 : 1;
	}
	sbuf_fini(&out);
	return rc;
}

int
cli_chat_template(int argc, char **argv)
{
	static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
	                                         {"template", required_argument, NULL, 't'},
	                                         {"messages", required_argument, NULL, 'j'},
	                                         {"no-generation-prompt", no_argument, NULL, 'n'},
	                                         {"now", required_argument, NULL, 'w'},
	                                         {"tokenizer", required_argument, NULL, 'k'},
	                                         {NULL, 0, NULL, 0}};
	const char *model = NULL, *tmpl = NULL, *msgs = NULL, *kind = NULL;
	bool gen = true;
	int64_t now = -1;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			model = optarg;
			break;
		case 't':
			tmpl = optarg;
			break;
		case 'j':
			msgs = optarg;
			break;
		case 'n':
			gen = false;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'w':
			if ((now = parse_now(optarg)) == -2) {
				fprintf(stderr,
				        "orch-worker: --now wants YYYY-MM-DDTHH:MM:SS, got '%s'\n",
				        optarg);
				return 2;
			}
			break;
		default:
			return 2;
		}
	}
	if ((model == NULL) == (tmpl == NULL) || msgs == NULL || optind != argc ||
	    (kind != NULL && model == NULL)) {
		cli_usage("chat-template");
		return 2;
	}
	size_t n = 0;
	char *text = NULL;
	struct orch_errinfo e = {0};
	if (orch_read_file(msgs, CLI_MAX_INPUT, &text, &n, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker: %s\n", e.msg);
		return 1;
	}
	cJSON *vars = cJSON_ParseWithLength(text, n);
	orch_free(text);
	if (!cJSON_IsObject(vars) || !cJSON_IsArray(cJSON_GetObjectItem(vars, "messages"))) {
		fprintf(stderr, "orch-worker: %s: want a JSON object with a \"messages\" array\n",
		        msgs);
		cJSON_Delete(vars);
		return 1;
	}
	cJSON_DeleteItemFromObject(vars, "add_generation_prompt");
	cJSON_AddBoolToObject(vars, "add_generation_prompt", gen);
	if (!cJSON_HasObjectItem(vars, "tools"))
		cJSON_AddNullToObject(vars, "tools");
	struct model_text mt = {0};
	struct jinja_tmpl *t = NULL;
	if (model == NULL)
		t = read_template(tmpl);
	else if (cli_load_text(model, kind, &mt))
		t = model_template(model, &mt, vars);
	if (t != NULL)
		rc = render(t, vars, now);
	jinja_free(t);
	model_text_fini(&mt);
	cJSON_Delete(vars);
	return rc;
}
