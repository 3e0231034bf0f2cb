/*
 * jinja_fuzz.c - libFuzzer target: arbitrary bytes as a template. It must
 * compile or fail with ORCH_ETEMPLATE; if it compiles, rendering it with a
 * small conversation must succeed or fail with a template error, within the
 * interpreter's step, depth and output limits.
 */
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "text/jinja/jinja.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static cJSON *vars; /* fuzz-harness state: built once per process */

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jinja_tmpl *t = NULL;
	struct jinja_opts o = {.now = 0};
	struct sbuf out = {0};
	orch_err rv;

	if (vars == NULL)
		vars = cJSON_Parse(
		        "{\"messages\": [{\"role\": \"system\", \"content\": \"s\"}, "
		        "{\"role\": \"user\", \"content\": \"Hé 👋\"}], \"bos_token\": \"<s>\", "
		        "\"eos_token\": \"</s>\", \"add_generation_prompt\": true, \"tools\": null}");
	if (size > 4096)
		return 0;
	rv = jinja_compile("fuzz", (const char *)data, size, &t, NULL);
	if (rv != ORCH_OK && rv != ORCH_ETEMPLATE)
		abort();
	if (t != NULL) {
		rv = jinja_render(t, vars, &o, &out, NULL);
		if (rv != ORCH_OK && rv != ORCH_ETEMPLATE && rv != ORCH_ETEMPLATE_RAISE)
			abort();
	}
	sbuf_fini(&out);
	jinja_free(t);
	return 0;
}
