/*
 * http_fuzz.c - libFuzzer target for orchd's request checks (request.c,
 * params.c): the first byte picks the API (/execute, /v1/completions,
 * /v1/chat/completions), the rest is the body. Any bytes give ORCH_OK or a
 * refusal with a message, never a crash, a leak or an out-of-bounds read;
 * an accepted request satisfies the limits and its body ends with its JSON
 * object (only whitespace after the closing brace). No event loop is needed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/limits.h"
#include "config.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orchd_config cfg;
	struct job_request r;
	struct params_err pe = {0};

	if (size == 0)
		return 0;
	cfg_defaults(&cfg);
	enum request_api api = (enum request_api)(data[0] % 3);
	orch_err rv = request_parse(api, &cfg, (const char *)data + 1, size - 1, &r, &pe);
	if (rv == ORCH_OK && (r.max_tokens < 1 || r.n_stops > ORCH_API_MAX_STOPS ||
	                      r.metrics_every > REQUEST_METRICS_EVERY_MAX ||
	                      (api != REQUEST_EXECUTE && r.metrics_every != 0) ||
	                      (api == REQUEST_CHAT ? r.messages == NULL : r.prompt == NULL)))
		abort();
	if (rv == ORCH_OK) {
		size_t k = size;
		while (k > 1 && strchr(" \t\r\n", data[k - 1]) && data[k - 1] != '\0')
			k--;
		if (data[k - 1] != '}')
			abort();
	}
	if (rv != ORCH_OK && (pe.code != rv || pe.msg[0] == '\0'))
		abort();
	job_request_fini(&r);
	return 0;
}
