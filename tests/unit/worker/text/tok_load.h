#pragma once
/*
 * tok_load.h - the text tests' tokenizer from a GGUF under $ORCH_TESTDATA
 * (t_path): NULL, with the reason on stderr, when it cannot be loaded (the
 * checks that use it then fail). Include after t.h.
 */
#include "base/err.h"
#include "gguf/gguf.h"
#include "text/tokenizer.h"

static inline struct tok *
t_tok(const char *rel)
{
	struct gguf_file *f = NULL;
	struct tok *t = NULL;
	struct orch_errinfo e = {0};

	if (gguf_open(t_path(rel), &f, &e) != ORCH_OK || tok_load_gguf(f, &t, &e) != ORCH_OK)
		fprintf(stderr, "%s: %s\n", rel, e.msg);
	gguf_close(f);
	return t;
}
