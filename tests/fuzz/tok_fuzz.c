/*
 * tok_fuzz.c - libFuzzer target: arbitrary bytes (invalid UTF-8 included)
 * through the qwen2 (byte-level BPE) and llama-spm (SentencePiece)
 * tokenizers, with and without special-token parsing; the ids must decode
 * back to the input for the byte-level vocabulary. Vocabularies come from
 * $ORCH_TESTDATA (default ../shared/testdata).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf/gguf.h"
#include "text/tokenizer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tok *toks[2]; /* fuzz-harness state: loaded once per process */

static struct tok *
load(const char *name)
{
	const char *root = getenv("ORCH_TESTDATA") ? getenv("ORCH_TESTDATA") : "../shared/testdata";
	const char *src = getenv("ORCH_SRC") ? getenv("ORCH_SRC") : ".";
	char path[1024];
	struct gguf_file *f = NULL;
	struct tok *t = NULL;

	/* the shared data, else what make deps fetched into tests/data (tests/data/SOURCE.md) */
	if (access(root, F_OK) == 0)
		snprintf(path, sizeof(path), "%s/vocab/%s", root, name);
	else
		snprintf(path, sizeof(path), "%s/tests/data/vocab/%s", src, name);
	if (access(path, F_OK) != 0) {
		printf("skipped: tok_fuzz needs %s: the shared test data (%s) is missing and make deps "
		       "fetched no copy\n",
		       path, root);
		exit(77);
	}
	if (gguf_open(path, &f, NULL) != ORCH_OK || tok_load_gguf(f, &t, NULL) != ORCH_OK) {
		fprintf(stderr, "tok_fuzz: cannot load %s\n", path);
		abort();
	}
	gguf_close(f);
	return t;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (toks[0] == NULL) {
		toks[0] = load("ggml-vocab-qwen2.gguf");
		toks[1] = load("ggml-vocab-llama-spm.gguf");
	}
	for (int k = 0; k < 2; k++) {
		struct tok_ids ids = {0};
		unsigned flags =
		        size > 0 && (data[0] & 1) ? TOK_PARSE_SPECIAL | TOK_ADD_SPECIAL : 0;
		if (tok_encode(toks[k], (const char *)data, size, flags, &ids) != ORCH_OK)
			abort();
		char *text = NULL;
		size_t len = 0;
		if (tok_decode(toks[k], ids.v, ids.n, TOK_STRIP_PREFIX | TOK_RENDER_SPECIAL, &text,
		               &len) != ORCH_OK)
			abort();
		if (k == 0 && !(flags & TOK_ADD_SPECIAL) &&
		    (len != size || (size && memcmp(text, data, size))))
			abort(); /* byte-level BPE is lossless */
		free(text);
		tok_ids_fini(&ids);
	}
	return 0;
}
