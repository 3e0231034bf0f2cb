/*
 * cli_tok.c - "orch-worker tokenize" and "orch-worker detokenize".
 *
 * tokenize prints the ids on one line, separated by single spaces; with
 * --pieces a second line holds the decoded piece of each id as a JSON array
 * of strings. detokenize prints the text exactly, with no newline added.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/parse.h"
#include "base/readfile.h"
#include "base/sbuf.h"
#include "cli.h"
#include "gguf/gguf.h"
#include "text/model_text.h"
#include "text/tokenizer.h"

bool
cli_load_text(const char *model, const char *kind, struct model_text *mt)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};
	enum text_source src;
	bool ok;

	if (text_source_parse(kind, &src) != ORCH_OK) {
		fprintf(stderr, "orch-worker: --tokenizer wants gguf or hf-json, got '%s'\n", kind);
		return false;
	}
	ok = gguf_open(model, &f, &e) == ORCH_OK &&
	     model_text_load(model, f, src, 0, mt, &e) == ORCH_OK;
	if (!ok)
		fprintf(stderr, "orch-worker: %s\n", e.msg);
	gguf_close(f);
	return ok;
}

struct tok *
cli_load_tok(const char *model, const char *kind)
{
	struct model_text mt = {0};
	struct tok *t;

	if (!cli_load_text(model, kind, &mt))
		return NULL;
	t = mt.tok;
	mt.tok = NULL;
	model_text_fini(&mt);
	return t;
}

static void
print_pieces(const struct tok *t, const struct tok_ids *ids)
{
	char buf[1024];

	putchar('[');
	for (size_t i = 0; i < ids->n; i++) {
		size_t n = tok_piece(t, ids->v[i], TOK_RENDER_SPECIAL, buf, sizeof(buf));
		n = n < sizeof(buf) ? n : sizeof(buf);
		printf("%s\"", i ? ", " : "");
		for (size_t k = 0; k < n; k++) {
			unsigned char c = (unsigned char)buf[k];
			if (c == '"' || c == '\\')
				printf("\\%c", c);
			else if (c < 0x20)
				printf("\\u%04x", c);
			else
				putchar(c);
		}
		putchar('"');
	}
	printf("]\n");
}

int
cli_tokenize(int argc, char **argv)
{
	static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
	                                         {"tokenizer", required_argument, NULL, 'k'},
	                                         {"add-special", no_argument, NULL, 'a'},
	                                         {"parse-special", no_argument, NULL, 'p'},
	                                         {"pieces", no_argument, NULL, 'P'},
	                                         {"text", required_argument, NULL, 't'},
	                                         {"file", required_argument, NULL, 'f'},
	                                         {NULL, 0, NULL, 0}};
	const char *model = NULL, *kind = NULL, *text = NULL, *file = NULL;
	unsigned flags = 0;
	bool pieces = false;
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'm':
			model = optarg;
			break;
		case 'k':
			kind = optarg;
			break;
		case 'a':
			flags |= TOK_ADD_SPECIAL;
			break;
		case 'p':
			flags |= TOK_PARSE_SPECIAL;
			break;
		case 'P':
			pieces = true;
			break;
		case 't':
			text = optarg;
			break;
		case 'f':
			file = optarg;
			break;
		default:
			return 2;
		}
	}
	if (model == NULL || (text == NULL) == (file == NULL) || optind != argc) {
		cli_usage("tokenize");
		return 2;
	}
	size_t n = text ? strlen(text) : 0;
	char *owned = NULL;
	struct orch_errinfo e = {0};
	if (file && orch_read_file(file, CLI_MAX_INPUT, &owned, &n, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker: %s\n", e.msg);
		return 1;
	}
	struct tok *t = cli_load_tok(model, kind);
	struct tok_ids ids = {0};
	int rc = 1;
	if (t != NULL && tok_encode(t, file ? owned : text, n, flags, &ids) == ORCH_OK) {
		for (size_t i = 0; i < ids.n; i++)
			printf(i ? " %d" : "%d", ids.v[i]);
		putchar('\n');
		if (pieces)
			print_pieces(t, &ids);
		rc = 0;
	}
	tok_ids_fini(&ids);
	tok_free(t);
	orch_free(owned);
	return rc;
}

int
cli_detokenize(int argc, char **argv)
{
	static const struct option longopts[] = {{"model", required_argument, NULL, 'm'},
	                                         {"tokenizer", required_argument, NULL, 'k'},
	                                         {"special", no_argument, NULL, 's'},
	                                         {NULL, 0, NULL, 0}};
	const char *model = NULL, *kind = NULL;
	unsigned flags = TOK_STRIP_PREFIX;
	int c, rc = 1;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'm')
			model = optarg;
		else if (c == 'k')
			kind = optarg;
		else if (c == 's')
			flags |= TOK_RENDER_SPECIAL;
		else
			return 2;
	}
	if (model == NULL) {
		cli_usage("detokenize");
		return 2;
	}
	struct tok *t = cli_load_tok(model, kind);
	struct tok_ids ids = {0};
	char *text = NULL;
	size_t len = 0;
	for (int i = optind; t != NULL && i < argc; i++) {
		uint64_t v;
		if (orch_parse_u64(argv[i], 0, tok_n_vocab(t) - 1, &v) != ORCH_OK) {
			fprintf(stderr, "orch-worker: '%s' is not a token id (0..%u)\n", argv[i],
			        tok_n_vocab(t) - 1);
			rc = 2;
			goto out;
		}
		if (tok_ids_push(&ids, (int32_t)v) != ORCH_OK)
			goto out;
	}
	if (t != NULL && tok_decode(t, ids.v, ids.n, flags, &text, &len) == ORCH_OK) {
		fwrite(text ? text : "", 1, len, stdout);
		rc = 0;
	}
out:
	free(text);
	tok_ids_fini(&ids);
	tok_free(t);
	return rc;
}
