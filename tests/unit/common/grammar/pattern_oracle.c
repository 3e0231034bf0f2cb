/*
 * pattern_oracle.c - the driver of pattern_oracle_test.py: each input line is
 * a schema and JSON strings, tab-separated; it prints "R" when the schema is
 * refused, else one 0/1 per string: whether the schema's grammar takes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

int
main(void)
{
	static char line[1 << 16];

	while (fgets(line, sizeof(line), stdin)) {
		char *save = NULL, *tok, *g = NULL, msg[1024];
		struct gram *gr = NULL;
		struct gram_err ge;
		cJSON *s;

		line[strcspn(line, "\n")] = '\0';
		tok = strtok_r(line, "\t", &save);
		s = tok ? cJSON_Parse(tok) : NULL;
		if (s == NULL || json_schema_gbnf(s, &g, msg, sizeof(msg)) != ORCH_OK ||
		    gram_compile(g, strlen(g), NULL, &gr, &ge) != ORCH_OK) {
			puts("R");
		} else {
			while ((tok = strtok_r(NULL, "\t", &save)) != NULL)
				putchar(gram_accepts(gr, tok, strlen(tok)) ? '1' : '0');
			putchar('\n');
		}
		gram_free(gr);
		free(g);
		cJSON_Delete(s);
	}
	return 0;
}
