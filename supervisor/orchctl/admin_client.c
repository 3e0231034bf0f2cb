/*
 * admin_client.c - orchctl's side of the admin API: one HTTP/1.1 request
 * over orchd's unix socket (--socket PATH, else $ORCHD_SOCKET, else
 * /run/orchd/orchd.sock, or a user orchd's, else make run's of this build, else the
 * newest orchd of the user's discovery directory, base/discover.h), JSON helpers, and the read
 * commands status and ps.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/discover.h"
#include "base/sbuf.h"
#include "orchctl.h"

#define DEFAULT_SOCKET "/run/orchd/orchd.sock"

/*
 * Where a user's orchd puts its socket when it cannot write /run/orchd (orchd's
 * main.c): $XDG_RUNTIME_DIR/orchd, else /tmp/orchd-UID. Root's is the default.
 */
static const char *
user_socket(void)
{
	static char path[512];
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0 || access(DEFAULT_SOCKET, F_OK) == 0)
		return DEFAULT_SOCKET;
	if (xdg != NULL && xdg[0] == '/')
		snprintf(path, sizeof(path), "%.480s/orchd/orchd.sock", xdg);
	else
		snprintf(path, sizeof(path), "/tmp/orchd-%u/orchd.sock", (unsigned)geteuid());
	struct stat st; /* the user's own orchd's only: not a socket someone else put there */
	return stat(path, &st) == 0 && st.st_uid == geteuid() ? path : DEFAULT_SOCKET;
}

/* Whether @sock is make run's admin socket of this orchctl's own build: BUILD/run/orchd.sock
 * beside BUILD/bin/orchctl. */
static bool
own_build(const char *sock)
{
	char exe[PATH_MAX], want[PATH_MAX + 32];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (k <= 0)
		return false;
	exe[k] = '\0';
	for (int up = 0; up < 2; up++) { /* BUILD/bin/orchctl -> BUILD */
		if ((slash = strrchr(exe, '/')) == NULL)
			return false;
		*slash = '\0';
	}
	snprintf(want, sizeof(want), "%s/run/orchd.sock", exe);
	return strcmp(sock, want) == 0;
}

const char *
orchctl_socket(const char *flag)
{
	static char found[16][ORCH_DISCOVER_PATH_MAX];
	static bool warned;
	const char *env = getenv("ORCHD_SOCKET"), *def;

	if (flag == NULL)
		flag = arg_socket;
	if (flag != NULL || (env != NULL && env[0]))
		return flag ? flag : env;
	def = user_socket();
	if (orch_discover_answers(def))
		return def;
	/* none at the default place: the orchds this user started elsewhere (make run's):
	 * the one make run started from this build, else the newest */
	size_t n = orch_discover_list(found, 16), pick = 0;
	for (size_t i = 0; i < n; i++)
		if (own_build(found[i])) {
			pick = i;
			break;
		}
	if (n > 1 && !warned) {
		warned = true;
		fprintf(stderr,
		        "orchctl: %zu orchds of yours run; this is %s, at %s (--socket "
		        "chooses another: %s%s)\n",
		        n, own_build(found[pick]) ? "make run's of this build" : "the newest's",
		        found[pick], found[pick == 0 ? 1 : 0], n > 2 ? ", …" : "");
	}
	return n > 0 ? found[pick] : def;
}

/* Where orchctl looked for an orchd, for the error of one it cannot reach. */
static void
looked(const char *sock, char *out, size_t n)
{
	char dir[400];
	const char *env = getenv("ORCHD_SOCKET");

	orch_discover_dir(dir, sizeof(dir));
	if (arg_socket != NULL && strcmp(sock, arg_socket) == 0)
		snprintf(out, n, "the socket --socket names");
	else if (env != NULL && env[0] && strcmp(sock, env) == 0)
		snprintf(out, n, "the socket $ORCHD_SOCKET names");
	else
		snprintf(
		        out, n,
		        "no --socket or $ORCHD_SOCKET, nothing at %s, and no orchd of yours listed in "
		        "%s: start one (make run, orchd --model FILE), or give --socket PATH",
		        sock, dir);
}

int
orchctl_refused(const char *what, int status, const char *body)
{
	cJSON *j = cJSON_Parse(body);
	const cJSON *e = cJSON_GetObjectItem(j, "error");
	const char *msg = cJSON_IsString(cJSON_GetObjectItem(e, "message"))
	                          ? cJSON_GetObjectItem(e, "message")->valuestring
	                          : NULL;

	if (arg_json)
		printf("%s%s", body, body[0] && body[strlen(body) - 1] == '\n' ? "" : "\n");
	if (msg)
		fprintf(stderr, "orchctl: %s: %s\n", what, msg);
	else
		fprintf(stderr, "orchctl: %s: orchd answered HTTP %d without an error message\n",
		        what, status);
	cJSON_Delete(j);
	return ORCHCTL_EXIT_FAILED;
}

int
orchctl_request(const char *sock, const char *method, const char *path, const char *body,
                int *status, char **ret)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct sbuf in = {0};
	char buf[8192];
	int fd;

	*ret = NULL;
	if (strlen(sock) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "orchctl: socket path too long: %s\n", sock);
		return -1;
	}
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		int err = errno;
		char where[1024];
		looked(sock, where, sizeof(where));
		fprintf(stderr, "orchctl: cannot reach orchd at %s: %s (is it running? %s)\n", sock,
		        strerror(err), where);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	int n = snprintf(buf, sizeof(buf),
	                 "%s %s HTTP/1.1\r\nHost: orchd\r\nConnection: close\r\n"
	                 "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	                 method, path, body ? strlen(body) : 0);
	if (write(fd, buf, (size_t)n) != n ||
	    (body && write(fd, body, strlen(body)) != (ssize_t)strlen(body))) {
		fprintf(stderr, "orchctl: write to %s: %s\n", sock, strerror(errno));
		close(fd);
		return -1;
	}
	ssize_t k;
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		sbuf_put(&in, buf, (size_t)k);
	close(fd);
	if (in.p == NULL || sscanf(in.p, "HTTP/1.%*d %d", status) != 1) {
		fprintf(stderr, "orchctl: no HTTP answer from %s\n", sock);
		sbuf_fini(&in);
		return -1;
	}
	char *bodyp = strstr(in.p, "\r\n\r\n");
	*ret = strdup(bodyp ? bodyp + 4 : "");
	sbuf_fini(&in);
	return *ret ? 0 : -1;
}

cJSON *
orchctl_get_json(const char *sock, const char *path, char **raw, int *rc)
{
	int status = 0;
	char *body;

	if (orchctl_request(sock, "GET", path, NULL, &status, &body) != 0) {
		*rc = ORCHCTL_EXIT_UNREACHABLE;
		return NULL;
	}
	cJSON *j = cJSON_Parse(body);
	if (status != 200 || j == NULL) {
		char what[300];
		snprintf(what, sizeof(what), "GET %.256s", path);
		*rc = orchctl_refused(what, status, body);
		cJSON_Delete(j);
		free(body);
		return NULL;
	}
	*raw = body;
	return j;
}

const char *
orchctl_str(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsString(v) ? v->valuestring : "-";
}

double
orchctl_num(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItem(o, k);
	return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

cJSON *
orchctl_find_worker(const char *sock, const char *name, int *rc)
{
	char *raw = NULL;
	cJSON *all = orchctl_get_json(sock, "/admin/workers", &raw, rc), *found = NULL;
	const cJSON *w;
	struct sbuf ids = {0};
	int of_model = 0;

	if (all == NULL)
		return NULL;
	cJSON_ArrayForEach(w, all)
	{
		if (strcmp(orchctl_str(w, "id"), name) == 0) {
			found = (cJSON *)w;
			of_model = 1;
			break;
		}
		if (strcmp(orchctl_str(w, "model"), name) == 0) {
			found = (cJSON *)w;
			sbuf_printf(&ids, "%s%s", of_model++ ? ", " : "", orchctl_str(w, "id"));
		}
	}
	*rc = ORCHCTL_EXIT_FAILED;
	if (found == NULL)
		fprintf(stderr, "orchctl: no worker or model '%s' (see orchctl ps)\n", name);
	else if (of_model > 1)
		fprintf(stderr, "orchctl: model '%s' has %d workers (%s): name one\n", name,
		        of_model, ids.p);
	cJSON *ret = found && of_model == 1 ? cJSON_Duplicate(found, true) : NULL;
	sbuf_fini(&ids);
	cJSON_Delete(all);
	free(raw);
	return ret;
}

void
orchctl_print_json(cJSON *o)
{
	char *s = cJSON_PrintUnformatted(o);

	printf("%s\n", s ? s : "{}");
	fflush(stdout);
	free(s);
	cJSON_Delete(o);
}

/* --socket and --json, shared by the read commands. */
static bool
read_opts(int argc, char **argv, const char **sock, bool *json)
{
	static const struct option longopts[] = {{"socket", required_argument, NULL, 's'},
	                                         {"json", no_argument, NULL, 'j'},
	                                         {NULL, 0, NULL, 0}};
	const char *flag = NULL;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 's')
			flag = optarg;
		else if (c == 'j')
			*json = true;
		else
			return false;
	}
	*sock = orchctl_socket(flag);
	*json = *json || arg_json;
	return optind == argc;
}

/* Per worker of @model in status @s: its KV pool (paged), and why one is unhealthy or was last
 * restarted. */
static void
print_worker_notes(const cJSON *s, const char *model)
{
	const cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItem(s, "workers"))
	{
		if (strcmp(orchctl_str(w, "model"), model) != 0)
			continue;
		double total = orchctl_num(w, "kv_blocks_total");
		if (total > 0) { /* paged KV */
			double used = orchctl_num(w, "kv_blocks_used");
			double q = orchctl_num(w, "prefix_query_tokens");
			printf("  worker %s kv %.0f/%.0f blocks of %.0f (%.1f %%), %.0f cached; "
			       "prefix cache %s, %.0f of %.0f prompt tokens hit; %.0f preemptions\n",
			       orchctl_str(w, "id"), used, total, orchctl_num(w, "kv_block_tokens"),
			       100.0 * used / total, orchctl_num(w, "kv_blocks_cached"),
			       cJSON_IsTrue(cJSON_GetObjectItem(w, "prefix_cache")) ? "on" : "off",
			       orchctl_num(w, "prefix_hit_tokens"), q,
			       orchctl_num(w, "preemptions"));
		}
		if (cJSON_GetObjectItem(w, "reason"))
			printf("  worker %s unhealthy: %s (draining, then a restart)\n",
			       orchctl_str(w, "id"), orchctl_str(w, "reason"));
		if (cJSON_GetObjectItem(w, "last_restart_reason"))
			printf("  worker %s last restart: %s\n", orchctl_str(w, "id"),
			       orchctl_str(w, "last_restart_reason"));
	}
}

static void
print_models(const cJSON *s)
{
	const cJSON *m;

	printf("%-24s %-10s %-9s %-8s %6s %6s %8s  %s\n", "MODEL", "STATE", "HEALTH", "DEVICE",
	       "SLOTS", "QUEUED", "RESTARTS", "PATH");
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(s, "models"))
	{
		const cJSON *devs = cJSON_GetObjectItem(m, "devices");
		printf("%-24s %-10s %-9s %-8s %6.0f %6.0f %8.0f  %s\n", orchctl_str(m, "name"),
		       orchctl_str(m, "state"), orchctl_str(m, "health"),
		       cJSON_IsString(cJSON_GetArrayItem(devs, 0))
		               ? cJSON_GetArrayItem(devs, 0)->valuestring
		               : "-",
		       orchctl_num(m, "slots"), orchctl_num(m, "queued"),
		       orchctl_num(m, "restarts"), orchctl_str(m, "path"));
		if (cJSON_GetObjectItem(m, "model"))
			printf("  model: %s%s\n", orchctl_str(m, "model"),
			       cJSON_IsTrue(cJSON_GetObjectItem(m, "pull")) ? " (pull = yes)" : "");
		if (cJSON_GetObjectItem(m, "error"))
			printf("  error: %s\n", orchctl_str(m, "error"));
		print_worker_notes(s, orchctl_str(m, "name"));
	}
	cJSON_ArrayForEach(m, cJSON_GetObjectItem(s, "pulls")) /* running pulls */
	{
		double done = orchctl_num(m, "bytes_done"), total = orchctl_num(m, "bytes_total");
		printf("pulling %s%s%s: %s %.0f%% (%.1f/%.1f MiB)\n", orchctl_str(m, "model"),
		       cJSON_GetObjectItem(m, "for") ? " for " : "",
		       cJSON_GetObjectItem(m, "for") ? orchctl_str(m, "for") : "",
		       orchctl_str(m, "file"), total > 0 ? 100 * done / total : 0.0, done / 1048576,
		       total / 1048576);
	}
}

int
orchctl_status(int argc, char **argv)
{
	const char *sock;
	bool json = false;
	char *raw = NULL;

	if (!read_opts(argc, argv, &sock, &json)) {
		fprintf(stderr, "usage: orchctl status [--json] [--socket PATH]\n");
		return 2;
	}
	int rc = 0;
	cJSON *s = orchctl_get_json(sock, "/admin/status", &raw, &rc);
	if (s == NULL)
		return rc;
	if (json) {
		printf("%s", raw);
	} else {
		const cJSON *d;
		printf("orchd %s  pid %.0f  up %.0f s  listen %s  %s\n", orchctl_str(s, "version"),
		       orchctl_num(s, "pid"), orchctl_num(s, "uptime_s"), orchctl_str(s, "listen"),
		       cJSON_IsTrue(cJSON_GetObjectItem(s, "ready")) ? "ready" : "not ready");
		printf("jobs: %.0f running, %.0f queued, %.0f open streams\n",
		       orchctl_num(s, "running"), orchctl_num(s, "queued"),
		       orchctl_num(s, "open_streams"));
		print_models(s);
		printf("%-8s %10s %10s %10s  %s\n", "DEVICE", "TOTAL_MIB", "FREE_MIB", "OURS_MIB",
		       "NAME");
		cJSON_ArrayForEach(d, cJSON_GetObjectItem(s, "devices")) printf(
		        "%-8s %10.0f %10.0f %10.1f  %s\n", orchctl_str(d, "id"),
		        orchctl_num(d, "memory_total_bytes") / 1048576.0,
		        orchctl_num(d, "memory_free_bytes") / 1048576.0,
		        orchctl_num(d, "memory_used_bytes") / 1048576.0, orchctl_str(d, "name"));
		if (cJSON_GetObjectItem(s, "devices_note"))
			printf("(%s)\n", orchctl_str(s, "devices_note"));
	}
	cJSON_Delete(s);
	free(raw);
	return 0;
}

int
orchctl_ps(int argc, char **argv)
{
	const char *sock;
	bool json = false;
	char *raw = NULL;
	const cJSON *w;

	if (!read_opts(argc, argv, &sock, &json)) {
		fprintf(stderr, "usage: orchctl ps [--json] [--socket PATH]\n");
		return 2;
	}
	int rc = 0;
	cJSON *a = orchctl_get_json(sock, "/admin/workers", &raw, &rc);
	if (a == NULL)
		return rc;
	if (json) {
		printf("%s", raw);
	} else {
		printf("%-24s %-20s %-8s %-9s %8s %10s %9s %8s\n", "WORKER", "MODEL", "DEVICE",
		       "STATE", "PID", "MEM_MIB", "SLOTS", "RESTARTS");
		cJSON_ArrayForEach(w, a)
		{
			char slots[32];
			snprintf(slots, sizeof(slots), "%.0f/%.0f", orchctl_num(w, "slots_busy"),
			         orchctl_num(w, "slots_total"));
			printf("%-24s %-20s %-8s %-9s %8.0f %10.1f %9s %8.0f\n",
			       orchctl_str(w, "id"), orchctl_str(w, "model"),
			       orchctl_str(w, "device"), orchctl_str(w, "state"),
			       orchctl_num(w, "pid"),
			       orchctl_num(w, "memory_used_bytes") / 1048576.0, slots,
			       orchctl_num(w, "restarts"));
		}
	}
	cJSON_Delete(a);
	free(raw);
	return 0;
}
