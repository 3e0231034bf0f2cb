/*
 * orch-tokjson - write a Hugging Face tokenizer.json from the byte-level
 * BPE vocabulary of a GGUF file.
 *
 *   orch-tokjson [--pairs] VOCAB.gguf OUT.json
 */
#include <stdio.h>
#include <string.h>

#include "gguf/gguf.h"
#include "tokjson.h"

int
main(int argc, char **argv)
{
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};
	bool pairs = argc > 1 && strcmp(argv[1], "--pairs") == 0;
	int a = pairs ? 2 : 1;

	if (argc - a != 2) {
		fprintf(stderr, "usage: orch-tokjson [--pairs] VOCAB.gguf OUT.json\n");
		return 2;
	}
	if (gguf_open(argv[a], &f, &e) != ORCH_OK ||
	    tokjson_write(f, argv[a + 1], pairs, &e) != ORCH_OK) {
		fprintf(stderr, "orch-tokjson: %s\n", e.msg);
		gguf_close(f);
		return 1;
	}
	gguf_close(f);
	return 0;
}
