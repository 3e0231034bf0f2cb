/*
 * serve_script.c - a test hook (builds with tests only): ORCH_FAULT_SCRIPT
 * makes a worker generate given text instead of what its model samples, so
 * that the tests can drive what a random-weight model cannot produce (a
 * harmony turn with reasoning and a tool call) through the whole server.
 *
 * ORCH_FAULT_SCRIPT is a JSON object {"TRIGGER": "TEXT", ...}: a job whose
 * prompt (as rendered, decoded from its ids) contains TRIGGER generates the
 * tokens of TEXT (special-token text parsed) first, the first trigger that
 * matches winning; then it samples as usual (TEXT ends in an end token to
 * stop there). Without the variable, or in a build without tests, nothing.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "serve_int.h"

void
serve_script(struct serve *sv, struct serve_job *j)
{
#ifdef ORCH_FAULT_INJECTION
	const char *env = getenv("ORCH_FAULT_SCRIPT");
	const struct tok *t = sv->eng->mt.tok;
	char *prompt = NULL;
	size_t n = 0;

	if (env == NULL)
		return;
	cJSON *root = cJSON_Parse(env), *it;
	if (cJSON_IsObject(root) &&
	    tok_decode(t, j->ids.v, j->ids.n, TOK_RENDER_SPECIAL, &prompt, &n) == ORCH_OK) {
		cJSON_ArrayForEach(it, root)
		{
			if (!cJSON_IsString(it) ||
			    memmem(prompt, n, it->string, strlen(it->string)) == NULL)
				continue;
			const char *text = it->valuestring;
			if (tok_encode(t, text, strlen(text), TOK_PARSE_SPECIAL, &j->script) ==
			    ORCH_OK) {
				j->sj.script = j->script.v;
				j->sj.n_script = (uint32_t)j->script.n;
			}
			break;
		}
	}
	free(prompt);
	cJSON_Delete(root);
#else
	(void)sv;
	(void)j;
#endif
}
