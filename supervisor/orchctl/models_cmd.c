/*
 * models_cmd.c - "orchctl load", "unload" and "rm" through the admin API.
 * load waits (unless --no-wait) until the model is READY or failed: a
 * progress bar on a terminal (bytes, percent, rate, ETA), a plain line every
 * 10% otherwise; a failure is told in words and exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/parse.h"
#include "gguf/gguf.h"
#include "orchctl.h"

#define WAIT_POLL_US 100000
#define WAIT_MAX_S   600

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

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* How far a load is: for the bar and the plain lines. */
struct progress {
	bool tty;
	int last_pct;       /* the last one shown; -1: none */
	double started_s;   /* when the wait began */
	double file_mib;    /* the model file's size; 0: not known */
	double rate_mib_s;  /* MiB/s since the start; 0: not known yet */
	double eta_s;       /* -1: not known */
	double last_line_s; /* when the last plain line was printed */
};

/* "12.0/27.0 MiB, 3.1 MiB/s, ETA 4 s" for @pct of the file, as far as known. */
static void
facts(struct progress *p, int pct, char *out, size_t n)
{
	double done = p->file_mib * pct / 100.0, dt = now_s() - p->started_s;

	p->rate_mib_s = dt > 0.2 && done > 0 ? done / dt : 0;
	p->eta_s = p->rate_mib_s > 0 ? (p->file_mib - done) / p->rate_mib_s : -1;
	if (p->file_mib <= 0) {
		snprintf(out, n, "%.0f s", dt);
		return;
	}
	int k = snprintf(out, n, "%.1f/%.1f MiB", done, p->file_mib);
	if (k > 0 && (size_t)k < n && p->rate_mib_s > 0)
		snprintf(out + k, n - (size_t)k, ", %.1f MiB/s, ETA %.0f s", p->rate_mib_s,
		         p->eta_s);
}

static void
show(struct progress *p, const char *name, int pct)
{
	char f[96];
	double t = now_s();

	if (pct == p->last_pct && (!p->tty || t - p->last_line_s < 0.5))
		return;
	facts(p, pct, f, sizeof(f));
	if (p->tty) {
		printf("\r%s [%-30.*s] %3d%%  %s\033[K", name, pct * 30 / 100,
		       "##############################", pct, f);
	} else if (pct / 10 != p->last_pct / 10 || p->last_pct < 0) {
		printf("%s: loading %d%% (%s)\n", name, pct, f);
	} else {
		return;
	}
	fflush(stdout);
	p->last_pct = pct;
	p->last_line_s = t;
}

/* A pull orchd runs before the load (pull = yes): its file and bytes, as the load's are. */
static void
show_pull(struct progress *p, const char *name, const cJSON *pl)
{
	double done = orchctl_num(pl, "bytes_done") / 1048576.0;
	double total = orchctl_num(pl, "bytes_total") / 1048576.0;
	int pct = total > 0 ? (int)(100 * done / total) : 0;

	if (p->tty) {
		printf("\r%s pulling %s [%-30.*s] %3d%%  %.1f/%.1f MiB\033[K", name,
		       orchctl_str(pl, "file"), pct * 30 / 100, "##############################",
		       pct, done, total);
	} else if (pct / 10 != p->last_pct / 10 || p->last_pct < 0) {
		printf("%s: pulling %s %d%% (%.1f/%.1f MiB)\n", name, orchctl_str(pl, "file"), pct,
		       done, total);
	} else {
		return;
	}
	fflush(stdout);
	p->last_pct = pct;
}

/* One look at the model: 0 ready, 1 failed or gone (said why), -1 still loading. */
static int
poll_once(const char *sock, const char *name, struct progress *p)
{
	cJSON *root;
	const cJSON *m = model_status(sock, name, &root);
	int rc = -1;

	if (root == NULL) {
		rc = ORCHCTL_EXIT_UNREACHABLE;
	} else if (m == NULL) {
		fprintf(stderr, "%sorchctl: load %s: the model was removed while loading\n",
		        p->tty ? "\n" : "", name);
		rc = ORCHCTL_EXIT_FAILED;
	} else {
		const char *state = orchctl_str(m, "state");
		p->file_mib = orchctl_num(m, "file_bytes") / 1048576.0;
		if (strcmp(state, "ready") == 0) {
			show(p, name, 100);
			if (arg_json)
				orchctl_print_json(cJSON_Duplicate(m, true));
			else
				printf("%s%s: ready in %.1f s\n", p->tty ? "\n" : "", name,
				       now_s() - p->started_s);
			rc = 0;
		} else if (strcmp(state, "failed") == 0) {
			fprintf(stderr, "%sorchctl: load %s: %s (orchctl logs %s)\n",
			        p->tty ? "\n" : "", name, orchctl_str(m, "error"), name);
			rc = ORCHCTL_EXIT_FAILED;
		} else if (strcmp(state, "loading") != 0) {
			fprintf(stderr, "%sorchctl: load %s: the model is %s, not loading\n",
			        p->tty ? "\n" : "", name, state);
			rc = ORCHCTL_EXIT_FAILED;
		} else if (cJSON_GetObjectItem(m, "pulling") != NULL) {
			p->started_s = now_s(); /* the load's own wait starts after the pull */
			if (!arg_json)
				show_pull(p, name, cJSON_GetObjectItem(m, "pulling"));
		} else if (!arg_json) {
			show(p, name, (int)orchctl_num(m, "load_percent"));
		}
	}
	cJSON_Delete(root);
	return rc;
}

static int
wait_ready(const char *sock, const char *name)
{
	struct progress p = {
	        .tty = isatty(STDOUT_FILENO) && !arg_json, .last_pct = -1, .started_s = now_s()};

	while (now_s() - p.started_s < WAIT_MAX_S) {
		int rc = poll_once(sock, name, &p);
		if (rc >= 0)
			return rc;
		usleep(WAIT_POLL_US);
	}
	fprintf(stderr, "%sorchctl: load %s: not ready after %d s (orchctl status)\n",
	        p.tty ? "\n" : "", name, WAIT_MAX_S);
	return ORCHCTL_EXIT_FAILED;
}

/* A number option into @req as @key, or false with the reason printed. */
static bool
add_number(cJSON *req, const char *key, const char *v, uint64_t lo, uint64_t hi)
{
	uint64_t x;

	if (orch_parse_u64(v, lo, hi, &x) != ORCH_OK) {
		fprintf(stderr, "orchctl: load: --%s wants a number from %llu to %llu, got '%s'\n",
		        key, (unsigned long long)lo, (unsigned long long)hi, v);
		return false;
	}
	cJSON_AddNumberToObject(req, key, (double)x);
	return true;
}

/* --kv-cache-fraction into @req, or false with the reason printed. */
static bool
add_fraction(cJSON *req, const char *v)
{
	double x;

	if (orch_parse_double(v, 0.001, 1, &x) != ORCH_OK) {
		fprintf(stderr,
		        "orchctl: load: --kv-cache-fraction wants a number from 0.001 to 1, got '%s'\n",
		        v);
		return false;
	}
	cJSON_AddNumberToObject(req, "kv_cache_fraction", x);
	return true;
}

static const char *load_token_file; /* --token-file */

/* The options into @req; false on bad usage (printed). */
static bool
load_opts(int argc, char **argv, cJSON *req, bool *wait)
{
	static const struct option longopts[] = {
	        {"device", required_argument, NULL, 'd'},
	        {"slots", required_argument, NULL, 's'},
	        {"context", required_argument, NULL, 'c'},
	        {"replicas", required_argument, NULL, 'r'},
	        {"wait", no_argument, NULL, 'w'},
	        {"no-wait", no_argument, NULL, 'W'},
	        {"socket", required_argument, NULL, 'S'},
	        {"tokenizer", required_argument, NULL, 'k'},
	        {"kv-cache-mib", required_argument, NULL, 'M'},
	        {"kv-cache-fraction", required_argument, NULL, 'F'},
	        {"kv-block-tokens", required_argument, NULL, 'b'},
	        {"no-prefix-cache", no_argument, NULL, 'P'},
	        {"pull", no_argument, NULL, 'p'},
	        {"token-file", required_argument, NULL, 't'},
	        {NULL, 0, NULL, 0}};
	bool ok = true;
	int c;

	optind = 1;
	while (ok && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == 'd' || c == 'k')
			cJSON_AddStringToObject(req, c == 'd' ? "device" : "tokenizer", optarg);
		else if (c == 's')
			ok = add_number(req, "slots", optarg, 1, 256);
		else if (c == 'c')
			ok = add_number(req, "context", optarg, 16, 1u << 20);
		else if (c == 'r')
			ok = add_number(req, "replicas", optarg, 1, 64);
		else if (c == 'M')
			ok = add_number(req, "kv_cache_mib", optarg, 1, 1u << 30);
		else if (c == 'b')
			ok = add_number(req, "kv_block_tokens", optarg, 1, 256);
		else if (c == 'F')
			ok = add_fraction(req, optarg);
		else if (c == 'P')
			cJSON_AddBoolToObject(req, "enable_prefix_cache", false);
		else if (c == 'p')
			cJSON_AddBoolToObject(req, "pull", true);
		else if (c == 't')
			load_token_file = optarg;
		else if (c == 'w' || c == 'W')
			*wait = c == 'w';
		else if (c == 'S')
			arg_socket = optarg;
		else
			ok = false;
	}
	return ok && (optind == argc - 1 || optind == argc - 2);
}

/*
 * The model file checked here, as our user, before orchd is asked: missing,
 * not a regular file, not a GGUF, a truncated or corrupt header are told in
 * words (orchd's answer is one sentence for all of them). A file we may not read is left to orchd,
 * which may run as another user. False with the reason printed.
 */
static bool
file_ok(const char *name, const char *path)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	char magic[4];
	const char *why = NULL;

	if (fd < 0 && errno == EACCES)
		return true;
	if (fd < 0) {
		fprintf(stderr, "orchctl: load %s: %s: %s\n", name, path, strerror(errno));
		return false;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		why = "is not a regular file";
	else if (read(fd, magic, sizeof(magic)) != (ssize_t)sizeof(magic) ||
	         memcmp(magic, "GGUF", 4) != 0)
		why = "is not a GGUF file (bad magic)";
	close(fd);
	if (why) {
		fprintf(stderr, "orchctl: load %s: %s %s\n", name, path, why);
		return false;
	}
	/* the whole header, as orchd will read it: a truncated or corrupt file says why here
	 * (orchd answers every unusable path alike, docs/security.md) */
	struct gguf_file *f = NULL;
	struct orch_errinfo e = {0};
	if (gguf_open(path, &f, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: load %s: not a usable GGUF file: %s\n", name, e.msg);
		return false;
	}
	gguf_close(f);
	return true;
}

/* The warnings of a 202 to @verb (a context beyond the training context, a state file
 * that could not be written...) on stderr. */
static void
print_warnings(const char *verb, const char *name, const char *body)
{
	cJSON *j = cJSON_Parse(body);
	const cJSON *w;

	cJSON_ArrayForEach(w, cJSON_GetObjectItem(j, "warnings"))
	        fprintf(stderr, "orchctl: warning: %s %s: %s\n", verb, name,
	                cJSON_IsString(w) ? w->valuestring : "?");
	cJSON_Delete(j);
}

int
orchctl_load(int argc, char **argv)
{
	cJSON *req = cJSON_CreateObject();
	bool wait = true;
	char what[128], abs_path[PATH_MAX];

	if (!load_opts(argc, argv, req, &wait)) {
		cJSON_Delete(req);
		fprintf(stderr,
		        "usage: orchctl load NAME [PATH | hf:REF [--pull] [--token-file F]] [--device D] "
		        "[--slots N] [--context N] [--replicas N] [--tokenizer gguf|hf-json] "
		        "[--kv-cache-mib N | --kv-cache-fraction F] [--kv-block-tokens N] "
		        "[--no-prefix-cache] [--no-wait] [--json] [--socket PATH]\n");
		return ORCHCTL_EXIT_USAGE;
	}
	const char *name = argv[optind], *sock = orchctl_socket(NULL);
	cJSON_AddStringToObject(req, "name", name);
	bool ref = optind == argc - 2 && strncmp(argv[optind + 1], "hf:", 3) == 0;
	bool pull = cJSON_GetObjectItem(req, "pull") != NULL;
	if (!ref && (pull || load_token_file)) {
		fprintf(stderr,
		        "orchctl: load %s: --pull and --token-file go with an hf: reference "
		        "(orchctl load NAME hf:ORG/REPO:QUANT --pull)\n",
		        name);
		cJSON_Delete(req);
		return ORCHCTL_EXIT_USAGE;
	}
	if (optind == argc - 2 && !ref && access(argv[optind + 1], F_OK) != 0 &&
	    strchr(argv[optind + 1], '/') && argv[optind + 1][0] != '/' &&
	    argv[optind + 1][0] != '.')
		fprintf(stderr,
		        "orchctl: load %s: no file %s here; for a model on Hugging Face, say "
		        "hf:%s\n",
		        name, argv[optind + 1], argv[optind + 1]);
	if (optind == argc - 2 && !ref && !file_ok(name, argv[optind + 1])) {
		cJSON_Delete(req);
		return ORCHCTL_EXIT_FAILED;
	}
	if (ref) /* a reference in orchd's model store, pulled first with --pull */
		cJSON_AddStringToObject(req, "model", argv[optind + 1]);
	else if (optind == argc - 2) /* orchd's working directory is not ours: a path it can use */
		cJSON_AddStringToObject(req, "path",
		                        realpath(argv[optind + 1], abs_path) ? abs_path
		                                                             : argv[optind + 1]);
#ifdef ORCHCTL_HAVE_STORE
	bool bad = false;
	char *token = ref && pull ? orchctl_hf_token(load_token_file, &bad) : NULL;
	if (bad) {
		cJSON_Delete(req);
		return ORCHCTL_EXIT_FAILED;
	}
	if (token != NULL) /* for orchd's pull of a gated repository */
		cJSON_AddStringToObject(req, "token", token);
	free(token);
#endif
	char *body = cJSON_PrintUnformatted(req), *resp = NULL;
	int status = 0;
	cJSON_Delete(req);
	int rv = orchctl_request(sock, "POST", "/admin/models", body, &status, &resp);
	free(body);
	if (rv != 0)
		return ORCHCTL_EXIT_UNREACHABLE;
	snprintf(what, sizeof(what), "load %.100s", name);
	if (status != 202) {
		rv = orchctl_refused(what, status, resp);
		free(resp);
		return rv;
	}
	print_warnings("load", name, resp);
	if (!wait && arg_json)
		printf("%s\n", resp);
	else if (!wait)
		printf("%s: loading (orchctl status)\n", name);
	free(resp);
	return wait ? wait_ready(sock, name) : 0;
}

/* unload and rm: @method @path for model @argv[1]; the answer told. */
static int
model_verb(int argc, char **argv, const char *method, const char *suffix, const char *done)
{
	static const struct option longopts[] = {{"socket", required_argument, NULL, 'S'},
	                                         {NULL, 0, NULL, 0}};
	char path[256], what[128], *resp = NULL;
	int c, status = 0;

	optind = 1;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c != 'S')
			goto usage;
		arg_socket = optarg;
	}
	if (optind != argc - 1 || strlen(argv[optind]) > 100 || strchr(argv[optind], '/'))
		goto usage;
	snprintf(path, sizeof(path), "/admin/models/%s%s", argv[optind], suffix);
	snprintf(what, sizeof(what), "%s %s", argv[0], argv[optind]);
	if (orchctl_request(orchctl_socket(NULL), method, path, NULL, &status, &resp) != 0)
		return ORCHCTL_EXIT_UNREACHABLE;
	int rc = 0;
	if (status != 202)
		rc = orchctl_refused(what, status, resp);
	else if (arg_json)
		printf("%s\n", resp);
	else
		printf("%s: %s\n", argv[optind], done);
	if (status == 202)
		print_warnings(argv[0], argv[optind], resp);
	free(resp);
	return rc;
usage:
	fprintf(stderr, "usage: orchctl %s NAME [--json] [--socket PATH]\n", argv[0]);
	return ORCHCTL_EXIT_USAGE;
}

int
orchctl_unload(int argc, char **argv)
{
	return model_verb(argc, argv, "DELETE", "", "unloading (drain, then stop)");
}

int
orchctl_rm(int argc, char **argv)
{
	return model_verb(argc, argv, "POST", "/forget", "unloaded and forgotten");
}
