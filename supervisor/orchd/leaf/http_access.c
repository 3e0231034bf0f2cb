/*
 * http_access.c - the public listener's access log (http_access.h): a line
 * built as the request goes (first byte, head, route, bytes out) and
 * written once, when it ends.
 */
#include "http_access.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/log.h"

void
http_access_begin(struct http_access *a, uint64_t now_ns)
{
	*a = (struct http_access){.open = true, .start_ns = now_ns};
	snprintf(a->method, sizeof(a->method), "-");
	snprintf(a->path, sizeof(a->path), "-");
}

/* Bytes of @p (@n) before @stop or a byte outside @lo..0x7e, at most @max: their count. */
static size_t
span(const char *p, size_t n, const char *stop, unsigned char lo, size_t max)
{
	size_t k = 0;

	while (k < n && k < max && (unsigned char)p[k] >= lo && (unsigned char)p[k] < 0x7f &&
	       strchr(stop, p[k]) == NULL)
		k++;
	return k;
}

/* FNV-1a of @p (@n bytes), mixed (MurmurHash3's finalizer) and folded to 32 bits: a
 * job id's stand-in in the log, the same for the same id, unlike for ids one byte apart. */
static uint32_t
id_hash(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (uint32_t)h;
}

/* Whether @p (@n bytes) holds a run of 16 or more hex digits: a job's uid, maybe encoded. */
static bool
has_hex_run(const char *p, size_t n)
{
	size_t run = 0;

	for (size_t i = 0; i < n; i++) {
		bool hex = (p[i] >= '0' && p[i] <= '9') ||
		           ((p[i] | 0x20) >= 'a' && (p[i] | 0x20) <= 'f');
		run = hex ? run + 1 : 0;
		if (run >= 16)
			return true;
	}
	return false;
}

/* Whether segment @p (@n bytes) names a place whose next segment is a job's id. */
static bool
before_id(const char *p, size_t n)
{
	return (n == 4 && strncasecmp(p, "jobs", 4) == 0) ||
	       (n == 6 && strncasecmp(p, "cancel", 6) == 0);
}

/*
 * @path (@n bytes) into @out with every segment that may be a job's id as a hash of
 * it: the one after "jobs" or "cancel" (any case, however the path is written:
 * "//jobs/ID", "/./jobs/ID", an absolute form), and any holding a run of 16 hex
 * digits ("/jobs%2FID"). The id is a capability (whoever has it follows the job),
 * also in a request refused before its route, or one no route takes.
 */
static void
hide_ids(const char *path, size_t n, char *out, size_t cap)
{
	size_t o = 0, i = 0;
	bool after = false;

	out[0] = '\0';
	while (i <= n && o + 1 < cap) {
		size_t j = i;
		while (j < n && path[j] != '/')
			j++;
		int w;
		if (j > i && (after || has_hex_run(path + i, j - i)))
			w = snprintf(out + o, cap - o, "{id:%08x}", id_hash(path + i, j - i));
		else
			w = snprintf(out + o, cap - o, "%.*s", (int)(j - i), path + i);
		if (w < 0 || (size_t)w >= cap - o)
			return;
		o += (size_t)w;
		after = before_id(path + i, j - i);
		if (j < n && o + 1 < cap)
			out[o++] = '/', out[o] = '\0';
		i = j + 1;
	}
}

void
http_access_head(struct http_access *a, const char *head, size_t n)
{
	size_t m = span(head, n, " ", 0x21, sizeof(a->method) - 1), t, k;

	if (m > 0 && m < n && head[m] == ' ') {
		snprintf(a->method, sizeof(a->method), "%.*s", (int)m, head);
		t = m + 1;
		k = span(head + t, n - t, " ?#", 0x21, HTTP_ACCESS_PATH_MAX);
		if (k > 0)
			hide_ids(head + t, k, a->path, sizeof(a->path));
	}
}

void
http_access_note(struct http_access *a, const char *path, const char *job)
{
	if (path != NULL)
		snprintf(a->path, sizeof(a->path), "%s", path);
	if (job != NULL)
		snprintf(a->job, sizeof(a->job), "%s", job);
}

void
http_access_sent(struct http_access *a, uint64_t n)
{
	if (a->open)
		a->bytes += n;
}

void
http_access_end(struct http_access *a, int status, const char *end, uint64_t now_ns)
{
	double ms = now_ns > a->start_ns ? (double)(now_ns - a->start_ns) / 1e6 : 0.0;

	const char *job = a->job[0] ? a->job : "-";

	if (!a->open)
		return;
	a->open = false;
	if (end == NULL) /* orch_log quotes what a conversion adds: a field is there or not */
		orch_log(ORCH_LOG_INFO, "http_access",
		         "method=%s path=%s status=%d bytes=%llu ms=%.1f job=%s", a->method,
		         a->path, status, (unsigned long long)a->bytes, ms, job);
	else
		orch_log(ORCH_LOG_INFO, "http_access",
		         "method=%s path=%s status=%d bytes=%llu ms=%.1f job=%s end=%s", a->method,
		         a->path, status, (unsigned long long)a->bytes, ms, job, end);
}
