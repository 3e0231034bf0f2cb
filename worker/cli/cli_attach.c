/*
 * cli_attach.c - "orch-worker attach URL": a minimal client of a worker's
 * debug stream (ipc/debug.h). Prints each record as one line, or with
 * --dump the worker's state dump.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/parse.h"
#include "cli.h"
#include "ipc/debug.h"

#define MAX_TOPICS 8

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

static void
print_record(const char *record, void *arg)
{
	(void)arg;
	printf("%s\n", record);
	fflush(stdout);
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
			ok = ipc_debug_add_topic(topics, &n_topics, MAX_TOPICS, optarg);
			if (!ok)
				fprintf(stderr, "orch-worker attach: --topic is log or step\n");
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
		cli_usage("attach");
		return 2;
	}
	if (dump)
		return attach_dump(argv[optind], timeout ? (int)timeout : 5000);
	return ipc_debug_follow("orch-worker attach", argv[optind], topics, n_topics, count,
	                        timeout ? (int)timeout : -1, print_record, NULL);
}
