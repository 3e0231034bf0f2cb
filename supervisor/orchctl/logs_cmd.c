/*
 * logs_cmd.c - "orchctl logs WORKER|MODEL": first why a failed model failed
 * (its error and last exit status, from GET /admin/status), then the output
 * lines orchd kept of that worker (GET /admin/workers/ID/logs), its own
 * notes about the process among them; --follow polls for new ones; --json
 * prints one JSON object per line.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/parse.h"
#include "orchctl.h"

#define FOLLOW_POLL_MS 500

static void
print_line(const cJSON *l, bool json)
{
	if (json) {
		orchctl_print_json(cJSON_Duplicate(l, true));
		return;
	}
	double ms = orchctl_num(l, "unix_ms");
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char when[32];
	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
	printf("%s.%03d %s\n", when, (int)((uint64_t)ms % 1000), orchctl_str(l, "text"));
}

/*
 * Prints the lines of one GET .../logs; *@next becomes the number to ask
 * from next time. -1 when orchd did not answer.
 */
static int
logs_once(const char *sock, const char *path, bool json, double *next)
{
	char *raw = NULL;
	int rc = 0;
	cJSON *o = orchctl_get_json(sock, path, &raw, &rc);
	const cJSON *l;

	if (o == NULL)
		return -1;
	if (*next >= 0 && orchctl_num(o, "first") > *next)
		fprintf(stderr, "orchctl logs: %.0f lines dropped before this one\n",
		        orchctl_num(o, "first") - *next);
	cJSON_ArrayForEach(l, cJSON_GetObjectItem(o, "lines")) print_line(l, json);
	fflush(stdout);
	*next = orchctl_num(o, "next");
	cJSON_Delete(o);
	free(raw);
	return 0;
}

/* When @name is a model that failed: why, as the first line. -1: orchd did not answer. */
static int
model_failure(const char *sock, const char *name, bool json)
{
	char *raw = NULL;
	int rc = 0;
	cJSON *s = orchctl_get_json(sock, "/admin/status", &raw, &rc);
	const cJSON *m;

	if (s == NULL)
		return -1;
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(s, "models"))
	{
		if (strcmp(orchctl_str(m, "name"), name) != 0 ||
		    strcmp(orchctl_str(m, "state"), "failed") != 0)
			continue;
		if (json) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddStringToObject(o, "model", name);
			cJSON_AddStringToObject(o, "state", "failed");
			cJSON_AddStringToObject(o, "error", orchctl_str(m, "error"));
			cJSON_AddStringToObject(o, "error_code", orchctl_str(m, "error_code"));
			cJSON_AddNumberToObject(o, "last_exit_status",
			                        orchctl_num(m, "last_exit_status"));
			orchctl_print_json(o);
		} else {
			printf("%s failed: %s (%s; last exit status %.0f)\n", name,
			       orchctl_str(m, "error"), orchctl_str(m, "error_code"),
			       orchctl_num(m, "last_exit_status"));
		}
	}
	cJSON_Delete(s);
	free(raw);
	return 0;
}

int
orchctl_logs(int argc, char **argv)
{
	static const struct option longopts[] = {{"lines", required_argument, NULL, 'n'},
	                                         {"follow", no_argument, NULL, 'f'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {"socket", required_argument, NULL, 's'},
	                                         {NULL, 0, NULL, 0}};
	const char *sockflag = NULL;
	uint64_t lines = 100;
	bool follow = false, json = false, ok = true;
	int c;

	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "fn:", longopts, NULL)) != -1) {
		if (c == 'n')
			ok = orch_parse_u64(optarg, 1, 100000, &lines) == ORCH_OK;
		else if (c == 'f')
			follow = true;
		else if (c == 'j')
			json = true;
		else if (c == 's')
			sockflag = optarg;
		else
			ok = false;
	}
	if (!ok || optind != argc - 1) {
		fprintf(stderr, "usage: orchctl logs WORKER [-n|--lines N] [-f|--follow] [--json] "
		                "[--socket PATH]\n");
		return 2;
	}
	const char *sock = orchctl_socket(sockflag);
	int rc = 0;
	json = json || arg_json;
	if (model_failure(sock, argv[optind], json) != 0)
		return ORCHCTL_EXIT_UNREACHABLE;
	cJSON *w = orchctl_find_worker(sock, argv[optind], &rc);
	if (w == NULL)
		return rc;
	char id[256], path[512];
	snprintf(id, sizeof(id), "%s", orchctl_str(w, "id"));
	cJSON_Delete(w);
	double next = -1;
	snprintf(path, sizeof(path), "/admin/workers/%s/logs?lines=%llu", id,
	         (unsigned long long)lines);
	if (logs_once(sock, path, json, &next) != 0)
		return 1;
	while (follow) {
		struct timespec ts = {0, FOLLOW_POLL_MS * 1000000L};
		nanosleep(&ts, NULL);
		snprintf(path, sizeof(path), "/admin/workers/%s/logs?since=%.0f", id, next);
		if (logs_once(sock, path, json, &next) != 0)
			return 1;
	}
	return 0;
}
