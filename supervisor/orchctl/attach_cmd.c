/*
 * attach_cmd.c - "orchctl attach WORKER": a worker's live debug stream
 * (ipc/debug.h) as text lines or, with --json, one JSON object per record;
 * --dump for its state dump; --gdb execs gdb -p PID. WORKER is a worker id
 * ("a-0") or a model's name when that model has one worker.
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/parse.h"
#include "base/sbuf.h"
#include "ipc/debug.h"
#include "orchctl.h"

#define MAX_TOPICS 8

/* ---- records as JSON ---- */

/*
 * A debug record ("TOPIC key=value key="quoted value" ...") as one JSON
 * object: {"topic": TOPIC, key: value...}, numbers as numbers.
 */
static cJSON *
record_json(const char *rec)
{
	cJSON *o = cJSON_CreateObject();
	size_t n = strcspn(rec, " ");
	char key[64], val[2048];

	snprintf(val, sizeof(val), "%.*s", (int)n, rec);
	cJSON_AddStringToObject(o, "topic", val);
	for (const char *p = rec + n; *p;) {
		while (*p == ' ')
			p++;
		size_t k = strcspn(p, "= ");
		if (k == 0 || p[k] != '=') { /* a bare word: keep it, keyless */
			p += k ? k : 1;
			continue;
		}
		snprintf(key, sizeof(key), "%.*s", (int)k, p);
		p += k + 1;
		size_t v;
		if (*p == '"') { /* up to a quote that ends the value */
			const char *q = p + 1;
			while (*q && !(q[0] == '"' && (q[1] == ' ' || q[1] == '\0')))
				q++;
			v = (size_t)(q - p - 1);
			snprintf(val, sizeof(val), "%.*s", (int)v, p + 1);
			p = *q ? q + 1 : q;
			cJSON_AddStringToObject(o, key, val);
			continue;
		}
		v = strcspn(p, " ");
		snprintf(val, sizeof(val), "%.*s", (int)v, p);
		p += v;
		char *end;
		double x = strtod(val, &end);
		if (v > 0 && *end == '\0' && val[0] != '+')
			cJSON_AddNumberToObject(o, key, x);
		else
			cJSON_AddStringToObject(o, key, val);
	}
	return o;
}

static void
emit_record(const char *rec, void *arg)
{
	if (*(bool *)arg) {
		orchctl_print_json(record_json(rec));
	} else {
		printf("%s\n", rec);
		fflush(stdout);
	}
}

/* --dump: one "worker ..." line and a "job ..." line per job. */
static int
dump(const char *url, bool json)
{
	struct orch_errinfo e = {0};
	struct sbuf b = {0};

	if (ipc_debug_dump(url, 5000, &b, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl attach: %s\n", e.msg);
		sbuf_fini(&b);
		return 1;
	}
	if (!json) {
		fwrite(b.p ? b.p : "", 1, b.n, stdout);
	} else {
		cJSON *o = cJSON_CreateObject(), *jobs = cJSON_AddArrayToObject(o, "jobs");
		for (char *line = b.p ? strtok(b.p, "\n") : NULL; line; line = strtok(NULL, "\n")) {
			cJSON *r = record_json(line);
			if (strncmp(line, "worker ", 7) == 0)
				cJSON_AddItemToObject(o, "worker", r);
			else
				cJSON_AddItemToArray(jobs, r);
		}
		orchctl_print_json(o);
	}
	sbuf_fini(&b);
	return 0;
}

int
orchctl_attach(int argc, char **argv)
{
	static const struct option longopts[] = {{"dump", no_argument, NULL, 'd'},
	                                         {"gdb", no_argument, NULL, 'g'},
	                                         {"topic", required_argument, NULL, 't'},
	                                         {"count", required_argument, NULL, 'n'},
	                                         {"timeout-ms", required_argument, NULL, 'T'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"socket", required_argument, NULL, 's'},
	                                         {NULL, 0, NULL, 0}};
	const char *topics[MAX_TOPICS], *sockflag = NULL;
	size_t n_topics = 0;
	uint64_t count = 0, timeout = 0;
	bool want_dump = false, gdb = false, json = false, ok = true;
	int c;

	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'd':
			want_dump = true;
			break;
		case 'g':
			gdb = true;
			break;
		case 't':
			ok = ipc_debug_add_topic(topics, &n_topics, MAX_TOPICS, optarg);
			break;
		case 'n':
			ok = orch_parse_u64(optarg, 1, UINT64_MAX, &count) == ORCH_OK;
			break;
		case 'T':
			ok = orch_parse_u64(optarg, 1, 86400000, &timeout) == ORCH_OK;
			break;
		case 'j':
			json = true;
			break;
		case 's':
			sockflag = optarg;
			break;
		default:
			ok = false;
		}
	}
	if (!ok || optind != argc - 1 || (want_dump && gdb)) {
		fprintf(stderr,
		        "usage: orchctl attach WORKER [--dump | --gdb] [--topic log|step]... "
		        "[--count N] [--timeout-ms N] [--json] [--socket PATH]\n");
		return 2;
	}
	int rc = 0;
	cJSON *w = orchctl_find_worker(orchctl_socket(sockflag), argv[optind], &rc);
	json = json || arg_json;
	if (w == NULL)
		return rc;
	char url[1024], pid[32];
	snprintf(url, sizeof(url), "%s", orchctl_str(w, "debug_endpoint"));
	snprintf(pid, sizeof(pid), "%.0f", orchctl_num(w, "pid"));
	bool running = orchctl_num(w, "pid") > 0;
	cJSON_Delete(w);
	if (!running) {
		fprintf(stderr, "orchctl attach: worker %s has no process now (orchctl ps)\n",
		        argv[optind]);
		return 1;
	}
	if (gdb) {
		execlp("gdb", "gdb", "-p", pid, (char *)NULL);
		fprintf(stderr, "orchctl attach: gdb: %s\n", strerror(errno));
		return 1;
	}
	if (want_dump)
		return dump(url, json);
	return ipc_debug_follow("orchctl attach", url, topics, n_topics, count,
	                        timeout ? (int)timeout : -1, emit_record, &json);
}
