/*
 * http_fuzz.c - libFuzzer target for orchd's request checks. A first byte
 * below 0x80 picks an API (byte % 3: /execute, /v1/completions,
 * /v1/chat/completions) and the rest is its body (request.c, params.c);
 * 0x80 and up: the rest is raw request bytes for the head reader
 * (http_head.c), fed in pieces of (byte & 0x3f) + 1 bytes, or whole when 0.
 * Any bytes give ORCH_OK or a refusal with a message, never a crash, a leak
 * or an out-of-bounds read. An accepted body satisfies the limits and ends
 * with its JSON object (only whitespace after the closing brace); an
 * accepted head ends where the reader said, has CRLF line ends only, one
 * Content-Length at most, no Transfer-Encoding, and a body only on a POST
 * within max_body_bytes; fed in pieces or whole, a head gets one verdict.
 * No event loop is needed.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/limits.h"
#include "config.h"
#include "http_head.h"
#include "http_host.h"
#include "jobs.h"
#include "params.h"
#include "request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Feed @p (@n bytes) in pieces of @piece (0: whole); the verdict and the head's length. */
static orch_err
head_verdict(const char *p, size_t n, size_t piece, const struct http_head_rules *r,
             struct http_head *h, size_t *ret_len)
{
	struct http_head_scan s = {0};
	struct params_err pe = {0};
	size_t used = 0, k;
	orch_err rv = ORCH_OK;

	while (rv == ORCH_OK && !s.done && used < n) {
		size_t want = piece && piece < n - used ? piece : n - used;
		rv = http_head_feed(&s, r, p + used, want, &k, &pe);
		if (k > want || (rv == ORCH_OK && !s.done && k != want))
			abort();
		used += k;
	}
	if (rv == ORCH_OK)
		rv = s.done ? http_head_check(s.buf, s.n, r, h, &pe) : ORCH_EAGAIN;
	if (rv != ORCH_OK && rv != ORCH_EAGAIN && (pe.code != rv || pe.msg[0] == '\0'))
		abort();
	if (s.done && (s.n != used || s.n > r->max_header_bytes))
		abort();
	*ret_len = s.done ? s.n : 0;
	http_head_fini(&s);
	return rv;
}

/* Lines of an accepted head start with "Content-Length:" at most once, never with TE. */
static void
head_invariants(const char *p, size_t n, const struct http_head *h, uint64_t max_body)
{
	int lengths = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n' && (i == 0 || p[i - 1] != '\r'))
			abort();
		if (i > 0 && p[i - 1] != '\n')
			continue;
		/* the head's own bytes only: p is not NUL-terminated */
		lengths += n - i >= 15 && strncasecmp(p + i, "content-length:", 15) == 0;
		if (i > 0 && n - i >= 18 && strncasecmp(p + i, "transfer-encoding:", 18) == 0)
			abort();
	}
	if (lengths > 1 || h->content_length > max_body || (!h->post && h->content_length))
		abort();
}

static void
fuzz_head(uint8_t mode, const char *p, size_t n)
{
	struct http_hosts hosts;
	struct http_head_rules r = {.max_header_bytes = 2048, .max_body_bytes = 4096};
	struct http_head h = {0}, h2 = {0};
	size_t len, len2;

	if (http_hosts_init(&hosts, "", "127.0.0.1:8080", NULL) != ORCH_OK)
		abort();
	r.hosts = &hosts;
	orch_err whole = head_verdict(p, n, 0, &r, &h, &len);
	orch_err pieces = head_verdict(p, n, (size_t)(mode & 0x3f) + 1, &r, &h2, &len2);
	if (whole != pieces || len != len2 ||
	    (whole == ORCH_OK && (h.post != h2.post || h.content_length != h2.content_length)))
		abort();
	if (whole == ORCH_OK)
		head_invariants(p, len, &h, r.max_body_bytes);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orchd_config cfg;
	struct job_request r;
	struct params_err pe = {0};

	if (size == 0)
		return 0;
	if (data[0] & 0x80) {
		fuzz_head(data[0], (const char *)data + 1, size - 1);
		return 0;
	}
	cfg_defaults(&cfg);
	enum request_api api = (enum request_api)(data[0] % 3);
	orch_err rv = request_parse(api, &cfg, (const char *)data + 1, size - 1, &r, &pe);
	if (rv == ORCH_OK &&
	    (r.max_tokens < 1 || r.n_stops > ORCH_API_MAX_STOPS ||
	     r.metrics_every > REQUEST_METRICS_EVERY_MAX ||
	     (api != REQUEST_EXECUTE && r.metrics_every != 0) ||
	     (api == REQUEST_CHAT ? r.messages == NULL : r.prompt == NULL && r.prompt_ids == NULL)))
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
