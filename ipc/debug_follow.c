/*
 * debug_follow.c - the subscriber loop shared by "orch-worker attach" and
 * "orchctl attach": they differ only in how a record is printed.
 */
#include <stdio.h>
#include <string.h>

#include "debug.h"

bool
ipc_debug_add_topic(const char **topics, size_t *n, size_t max, const char *topic)
{
	if (*n == max || (strcmp(topic, "log") != 0 && strcmp(topic, "step") != 0))
		return false;
	topics[(*n)++] = topic;
	return true;
}

int
ipc_debug_follow(const char *prog, const char *url, const char *const *topics, size_t n_topics,
                 uint64_t count, int timeout_ms, ipc_debug_emit_fn *emit, void *arg)
{
	struct orch_errinfo e = {0};
	struct ipc_debug_sub *s;
	struct sbuf rec = {0};
	uint64_t seen = 0;
	int rc = 0;

	if (ipc_debug_sub_open(url, topics, n_topics, &s, &e) != ORCH_OK) {
		fprintf(stderr, "%s: %s\n", prog, e.msg);
		return 1;
	}
	while (count == 0 || seen < count) {
		orch_err rv = ipc_debug_sub_next(s, timeout_ms, &rec, &e);
		if (rv == ORCH_EAGAIN) {
			fprintf(stderr, "%s: no record from %s for %d ms\n", prog, url, timeout_ms);
			rc = 1;
			break;
		}
		if (rv != ORCH_OK) {
			fprintf(stderr, "%s: %s\n", prog, e.msg);
			rc = 1;
			break;
		}
		emit(rec.p, arg);
		seen++;
	}
	sbuf_fini(&rec);
	fflush(stdout);
	/*
	 * Not ipc_debug_sub_close: NNG 1.5's nng_close can deadlock on a subscriber
	 * that records are still arriving at (NNG issues 1543 and 1813; seen here as
	 * `attach --count 3` hanging after its third record, about once in a hundred
	 * runs under load). The caller leaves main next, which ends the socket.
	 */
	ipc_debug_sub_leave(s);
	return rc;
}
