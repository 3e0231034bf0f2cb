/*
 * cli_attach.c - "orch-worker attach URL": a minimal client of a worker's
 * debug stream (ipc/debug.h). Prints each record as one line, or with
 * --dump the worker's state dump.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "debug.h"
#include "parse.h"

#define MAX_TOPICS 8

static void
usage(void)
{
	fprintf(stderr, "usage: orch-worker attach URL [--dump] [--topic log|step]... [--count N] "
	                "[--timeout-ms N]\n");
}

static int
attach_dump(const char *url, int timeout_ms)
{
	struct orch_errinfo e = {0};
	struct sbuf b = {0};

	if (ipc_debug_dump(url, timeout_ms, &b, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker attach: %s\n", e.msg);
		sbuf_fini(&b);
		return 1;
	}
	fwrite(b.p ? b.p : "", 1, b.n, stdout);
	sbuf_fini(&b);
	return 0;
}

static int
attach_stream(const char *url, const char *const *topics, size_t n_topics, uint64_t count,
              int timeout_ms)
{
	struct orch_errinfo e = {0};
	struct ipc_debug_sub *s;
	struct sbuf rec = {0};
	uint64_t seen = 0;
	int rc = 0;

	if (ipc_debug_sub_open(url, topics, n_topics, &s, &e) != ORCH_OK) {
		fprintf(stderr, "orch-worker attach: %s\n", e.msg);
		return 1;
	}
	while (count == 0 || seen < count) {
		orch_err rv = ipc_debug_sub_next(s, timeout_ms, &rec, &e);
		if (rv == ORCH_EAGAIN) {
			fprintf(stderr, "orch-worker attach: no record from %s for %d ms\n", url,
			        timeout_ms);
			rc = 1;
			break;
		}
		if (rv != ORCH_OK) {
			fprintf(stderr, "orch-worker attach: %s\n", e.msg);
			rc = 1;
			break;
		}
		printf("%s\n", rec.p);
		fflush(stdout);
		seen++;
	}
	sbuf_fini(&rec);
	ipc_debug_sub_close(s);
	return rc;
}

int
cli_attach(int argc, char **argv)
{
	static const struct option longopts[] = {{"dump", no_argument, NULL, 'd'},
	                                         {"topic", required_argument, NULL, 't'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"timeout-ms", required_argument, NULL, 'T'},
	                                         {NULL, 0, NULL, 0}};
	const char *topics[MAX_TOPICS];
	size_t n_topics = 0;
	uint64_t count = 0, timeout = 0;
	bool dump = false, ok = true;
	int c;

	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			dump = true;
			break;
		case 't':
			if (n_topics == MAX_TOPICS ||
			    (strcmp(optarg, "log") != 0 && strcmp(optarg, "step") != 0)) {
				fprintf(stderr, "orch-worker attach: --topic is log or step\n");
				ok = false;
			} else {
				topics[n_topics++] = optarg;
			}
			break;
		case 'n':
			ok = orch_parse_u64(optarg, 1, UINT64_MAX, &count) == ORCH_OK;
			break;
		case 'T':
			ok = orch_parse_u64(optarg, 1, 86400000, &timeout) == ORCH_OK;
			break;
		default:
			ok = false;
		}
	}
	if (!ok || optind != argc - 1) {
		usage();
		return 2;
	}
	if (dump)
		return attach_dump(argv[optind], timeout ? (int)timeout : 5000);
	return attach_stream(argv[optind], topics, n_topics, count, timeout ? (int)timeout : -1);
}
