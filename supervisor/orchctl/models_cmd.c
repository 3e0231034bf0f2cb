/*
 * models_cmd.c - "orchctl load" and "orchctl unload" through the admin API;
 * load --wait follows the model until READY (a progress bar on a terminal,
 * plain lines otherwise) or failed.
 */
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "orchctl.h"

/* The model's entry in /admin/status, or NULL; *@root to free. */
static const cJSON *
model_status(const char *sock, const char *name, cJSON **root)
{
	int status = 0;
	char *body = NULL;
	const cJSON *m;

	*root = NULL;
	if (orchctl_request(sock, "GET", "/admin/status", NULL, &status, &body) != 0)
		return NULL;
	*root = cJSON_Parse(body);
	free(body);
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(*root, "models"))
	{
		const cJSON *n = cJSON_GetObjectItem(m, "name");
		if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0)
			return m;
	}
	return NULL;
}

static int
wait_ready(const char *sock, const char *name)
{
	bool tty = isatty(STDOUT_FILENO);
	int last = -1;

	for (int i = 0; i < 6000; i++) { /* 10 minutes */
		cJSON *root;
		const cJSON *m = model_status(sock, name, &root);
		if (m == NULL) {
			cJSON_Delete(root);
			fprintf(stderr, "orchctl: model %s is gone\n", name);
			return 1;
		}
		const char *state = cJSON_GetObjectItem(m, "state")->valuestring;
		int pct = (int)cJSON_GetObjectItem(m, "load_percent")->valuedouble;
		if (pct != last) {
			if (tty)
				printf("\r%s [%-50.*s] %3d%%", name, pct / 2,
				       "##################################################", pct);
			else
				printf("%s: loading %d%%\n", name, pct);
			fflush(stdout);
			last = pct;
		}
		int rc = -1;
		if (strcmp(state, "ready") == 0) {
			printf("%s%s: ready\n", tty ? "\n" : "", name);
			rc = 0;
		} else if (strcmp(state, "failed") == 0) {
			const cJSON *e = cJSON_GetObjectItem(m, "error");
			fprintf(stderr, "%sorchctl: %s failed: %s\n", tty ? "\n" : "", name,
			        cJSON_IsString(e) ? e->valuestring : "?");
			rc = 1;
		}
		cJSON_Delete(root);
		if (rc >= 0)
			return rc;
		usleep(100000);
	}
	fprintf(stderr, "orchctl: %s is not ready after 10 minutes\n", name);
	return 1;
}

int
orchctl_load(int argc, char **argv)
{
	static const struct option longopts[] = {{"device", required_argument, NULL, 'd'},
	                                         {"slots", required_argument, NULL, 's'},
	                                         {"context", required_argument, NULL, 'c'},
	                                         {"wait", no_argument, NULL, 'w'},
	                                         {"socket", required_argument, NULL, 'S'},
	                                         {"tokenizer", required_argument, NULL, 'k'},
	                                         {NULL, 0, NULL, 0}};
	const char *sock_flag = NULL;
	bool wait = false;
	cJSON *req = cJSON_CreateObject();
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'd' || c == 'k')
			cJSON_AddStringToObject(req, c == 'd' ? "device" : "tokenizer", optarg);
		else if (c == 's' || c == 'c')
			cJSON_AddNumberToObject(req, c == 's' ? "slots" : "context", atof(optarg));
		else if (c == 'w')
			wait = true;
		else if (c == 'S')
			sock_flag = optarg;
		else
			goto usage;
	}
	if (optind != argc - 1 && optind != argc - 2)
		goto usage;
	const char *name = argv[optind], *sock = orchctl_socket(sock_flag);
	cJSON_AddStringToObject(req, "name", name);
	if (optind == argc - 2)
		cJSON_AddStringToObject(req, "path", argv[optind + 1]);
	char *body = cJSON_PrintUnformatted(req), *resp = NULL;
	int status = 0;
	cJSON_Delete(req);
	int rv = orchctl_request(sock, "POST", "/admin/models", body, &status, &resp);
	free(body);
	if (rv != 0)
		return 1;
	if (status != 202) {
		fprintf(stderr, "orchctl: load %s: HTTP %d: %s", name, status, resp);
		free(resp);
		return 1;
	}
	free(resp);
	return wait ? wait_ready(sock, name) : 0;
usage:
	cJSON_Delete(req);
	fprintf(stderr, "usage: orchctl load NAME [PATH] [--device D] [--slots N] [--context N] "
	                "[--tokenizer gguf|hf-json] [--wait] [--socket PATH]\n");
	return 2;
}

int
orchctl_unload(int argc, char **argv)
{
	static const struct option longopts[] = {{"socket", required_argument, NULL, 'S'},
	                                         {NULL, 0, NULL, 0}};
	const char *sock_flag = NULL;
	char path[256], *resp = NULL;
	int c, status = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'S') {
			fprintf(stderr, "usage: orchctl unload NAME [--socket PATH]\n");
			return 2;
		}
		sock_flag = optarg;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: orchctl unload NAME [--socket PATH]\n");
		return 2;
	}
	snprintf(path, sizeof(path), "/admin/models/%s", argv[optind]);
	if (orchctl_request(orchctl_socket(sock_flag), "DELETE", path, NULL, &status, &resp) != 0)
		return 1;
	if (status != 202)
		fprintf(stderr, "orchctl: unload %s: HTTP %d: %s", argv[optind], status, resp);
	free(resp);
	return status == 202 ? 0 : 1;
}
