/*
 * pull_cmd.c - "orchctl pull", "orchctl models" and "orchctl rm hf:..." over the
 * model store (common/store): pull fetches a Hugging Face reference into it
 * (a progress bar on a terminal, a line every 10 % otherwise), models lists
 * what it holds and which of orchd's models use it, rm removes a reference
 * unless a model orchd serves uses its file.
 *
 * The store is --model-dir DIR, else $ORCH_MODEL_DIR, else the default
 * (store_default_dir). The token for gated repositories: --token-file F,
 * else $HF_TOKEN, else $HF_TOKEN_PATH or ~/.cache/huggingface/token (where
 * huggingface-cli login puts it). --endpoint URL or $HF_ENDPOINT: a mirror.
 * --offline or HF_HUB_OFFLINE=1: never touch the network.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/readfile.h"
#include "gguf/gguf.h"
#include "gguf/ident.h"
#include "orchctl.h"
#include "store/hf.h"
#include "store/store.h"

/* The options pull, models and rm share. */
struct store_opts {
	const char *dir, *token_file, *endpoint;
	bool offline;
};

/* Parse the shared options of @argv (getopt from optind 1); -1 on a bad one. */
static int
store_args(int argc, char **argv, struct store_opts *o, bool pull)
{
	static const struct option longs[] = {{"model-dir", required_argument, NULL, 'd'},
	                                      {"token-file", required_argument, NULL, 't'},
	                                      {"endpoint", required_argument, NULL, 'e'},
	                                      {"offline", no_argument, NULL, 'o'},
	                                      {NULL, 0, NULL, 0}};
	int c;

	memset(o, 0, sizeof(*o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'd')
			o->dir = optarg;
		else if (pull && c == 't')
			o->token_file = optarg;
		else if (pull && c == 'e')
			o->endpoint = optarg;
		else if (pull && c == 'o')
			o->offline = true;
		else
			return -1;
	}
	const char *env = getenv("HF_HUB_OFFLINE");
	if (env != NULL && (strcmp(env, "1") == 0 || strcasecmp(env, "true") == 0))
		o->offline = true;
	return 0;
}

static bool orchd_running(const char *sock);
static bool orchd_status(cJSON **ret);

/* The model store of a running orchd into @buf (its /admin/status); false: none is running. */
static bool
orchd_store(char *buf, size_t n)
{
	cJSON *st = NULL;
	bool ok = false;

	if (orchd_running(orchctl_socket(NULL)) && orchd_status(&st) && st != NULL) {
		const char *dir = orchctl_str(st, "model_dir");
		ok = strcmp(dir, "-") != 0 && snprintf(buf, n, "%s", dir) < (int)n;
	}
	cJSON_Delete(st);
	return ok;
}

/*
 * The store the options name: --model-dir, else the running orchd's, else the default;
 * opened (made with @create). NULL with the reason printed, or with *@none set when
 * there is no store there (@create false).
 */
static struct store *
open_store(const struct store_opts *o, bool create, bool *none)
{
	char dir[PATH_MAX];
	struct orch_errinfo e = {0};
	struct store *s = NULL;

	*none = false;
	if (o->dir != NULL)
		snprintf(dir, sizeof(dir), "%s", o->dir);
	else if (!orchd_store(dir, sizeof(dir)) &&
	         store_default_dir(dir, sizeof(dir), &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: %s\n", e.msg);
		return NULL;
	}
	orch_err rv = store_open(dir, create, &s, &e);
	if (rv == ORCH_ENOTFOUND && !create)
		*none = true;
	else if (rv != ORCH_OK)
		fprintf(stderr, "orchctl: %s\n", e.msg);
	return s;
}

char *
orchctl_hf_token(const char *token_file, bool *bad)
{
	const char *env = getenv("HF_TOKEN"), *path = token_file, *home = getenv("HOME");
	char def[PATH_MAX], *text = NULL;
	size_t n = 0;
	struct orch_errinfo e = {0};

	*bad = false;
	if (path == NULL && env != NULL && env[0])
		return orch_strndup(env, strlen(env));
	if (path == NULL && (path = getenv("HF_TOKEN_PATH")) == NULL && home != NULL) {
		snprintf(def, sizeof(def), "%s/.cache/huggingface/token", home);
		if (access(def, R_OK) != 0)
			return NULL;
		path = def;
	}
	if (path == NULL)
		return NULL;
	if (orch_read_file(path, 4096, &text, &n, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: the token file: %s\n", e.msg);
		*bad = true;
		return NULL;
	}
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
		text[--n] = '\0';
	return text;
}

/* ---- progress ---- */

struct pull_view {
	bool tty;
	uint64_t t0_ms, last_ms;
	int last_tenth;
	char file[256]; /* the file shown: a new one restarts the rate and the tenths */
};

static void
on_progress(void *ctx, const struct hf_progress *p)
{
	struct pull_view *v = ctx;
	uint64_t now = orch_mono_ms();
	double mib = 1024.0 * 1024.0,
	       pct = p->total ? 100.0 * (double)p->done / (double)p->total : 100;

	if (strcmp(v->file, p->path) != 0 || v->t0_ms == 0) { /* a new file */
		snprintf(v->file, sizeof(v->file), "%s", p->path);
		v->t0_ms = now;
		v->last_tenth = -1;
	}
	double s = (double)(now - v->t0_ms) / 1000.0;
	double rate = s > 0.05 ? (double)(p->done - p->resumed_from) / s : 0;
	double eta = rate > 0 ? (double)(p->total - p->done) / rate : 0;
	if (v->tty) {
		int w = (int)(pct / 5);
		fprintf(stderr, "\r%s [%.*s%*s] %5.1f%% %.1f/%.1f MiB %.1f MiB/s ETA %.0fs\033[K",
		        p->path, w, "####################", 20 - w, "", pct, (double)p->done / mib,
		        (double)p->total / mib, rate / mib, eta);
		if (p->finished)
			fputc('\n', stderr);
		return;
	}
	int tenth = (int)(pct / 10);
	if (p->finished || tenth > v->last_tenth || now - v->last_ms > 10000) {
		fprintf(stderr, "pull: %s (%u of %u) %.0f%% %.1f/%.1f MiB %.1f MiB/s%s\n", p->path,
		        p->index + 1, p->n_files, pct, (double)p->done / mib,
		        (double)p->total / mib, rate / mib, p->finished ? " done" : "");
		v->last_tenth = tenth;
		v->last_ms = now;
	}
}

/* ---- pull ---- */

static bool orchd_running(const char *sock);
static void print_json(cJSON *o);

/* The entry of @ref in orchd's GET /admin/pulls (a copy: cJSON_Delete it), or NULL. */
static cJSON *
orchd_pull_entry(const char *sock, const char *ref)
{
	int status = 0;
	char *body = NULL;
	cJSON *root, *found = NULL;
	const cJSON *it;

	if (orchctl_request(sock, "GET", "/admin/pulls", NULL, &status, &body) != 0)
		return NULL;
	root = status == 200 ? cJSON_Parse(body) : NULL;
	free(body);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(root, "pulls"))
	{
		if (strcmp(orchctl_str(it, "model"), ref) == 0 &&
		    cJSON_GetObjectItemCaseSensitive(it, "for") == NULL) {
			found = cJSON_Duplicate(it, true);
			break;
		}
	}
	cJSON_Delete(root);
	return found;
}

/*
 * orchd runs: it pulls @r into its own store (where its models look), and this follows the
 * pull's progress in GET /admin/pulls. An interrupted orchctl leaves the pull running.
 */
static int
pull_via_orchd(const char *sock, const struct hf_ref *r, const char *token)
{
	cJSON *req = cJSON_CreateObject(), *e = NULL;
	struct pull_view view = {.tty = isatty(2) == 1};
	int status = 0, rc = ORCHCTL_EXIT_FAILED;
	char *body, *resp = NULL, what[1000];

	cJSON_AddStringToObject(req, "model", r->canon);
	if (token != NULL)
		cJSON_AddStringToObject(req, "token", token);
	body = cJSON_PrintUnformatted(req);
	cJSON_Delete(req);
	int sent = orchctl_request(sock, "POST", "/admin/pulls", body, &status, &resp);
	free(body);
	if (sent != 0) {
		free(resp);
		return ORCHCTL_EXIT_UNREACHABLE;
	}
	snprintf(what, sizeof(what), "pull %s", r->canon);
	if (status != 202) {
		rc = orchctl_refused(what, status, resp);
		free(resp);
		return rc;
	}
	free(resp);
	if (!arg_json)
		fprintf(stderr,
		        "pull: orchd pulls it into its model store (orchctl status shows it; if "
		        "this stops, orchd goes on and orchctl pull again follows it)\n");
	for (;;) {
		cJSON_Delete(e);
		if ((e = orchd_pull_entry(sock, r->canon)) == NULL) {
			fprintf(stderr, "orchctl: %s: orchd no longer lists the pull\n", what);
			break;
		}
		const char *state = orchctl_str(e, "state");
		if (strcmp(state, "pulling") != 0) {
			if (strcmp(state, "done") == 0 && arg_json)
				print_json(cJSON_Duplicate(e, true));
			else if (strcmp(state, "done") == 0)
				printf("%s: in orchd's model store\n  serve it with: model = %s (or path = "
				       "%s)\n",
				       r->canon, r->canon, orchctl_str(e, "path"));
			else
				fprintf(stderr, "orchctl: %s: %s\n", what, orchctl_str(e, "error"));
			rc = strcmp(state, "done") == 0 ? 0 : ORCHCTL_EXIT_FAILED;
			break;
		}
		struct hf_progress p = {.path = orchctl_str(e, "file"),
		                        .index = (uint32_t)orchctl_num(e, "file_index"),
		                        .n_files = (uint32_t)orchctl_num(e, "files"),
		                        .done = (uint64_t)orchctl_num(e, "bytes_done"),
		                        .total = (uint64_t)orchctl_num(e, "bytes_total")};
		if (p.total > 0 && !arg_json)
			on_progress(&view, &p);
		usleep(200000);
	}
	cJSON_Delete(e);
	return rc;
}

/* @en as pull --json and models --json show it: the index's fields, the reference, the path
 * to serve and the total size. */
static cJSON *
entry_json(const struct store *s, const struct store_entry *en)
{
	cJSON *o = store_entry_json(en);
	char path[PATH_MAX];
	uint64_t size = 0;

	cJSON_AddStringToObject(o, "ref", en->ref);
	if (store_model_path(s, en, path, sizeof(path), NULL) == ORCH_OK)
		cJSON_AddStringToObject(o, "path", path);
	for (uint32_t i = 0; i < en->n_files; i++)
		size += en->files[i].size;
	cJSON_AddNumberToObject(o, "size", (double)size);
	return o;
}

static void
print_json(cJSON *o)
{
	char *t = cJSON_Print(o);

	if (t != NULL)
		puts(t);
	free(t);
	cJSON_Delete(o);
}

int
orchctl_pull(int argc, char **argv)
{
	struct store_opts so;
	struct hf_ref r;
	struct orch_errinfo e = {0};
	struct store_entry en = {0};
	struct pull_view view = {.tty = isatty(2) == 1};
	bool bad = false;

	if (store_args(argc, argv, &so, true) != 0 || optind != argc - 1) {
		fprintf(stderr, "usage: orchctl pull hf:ORG/REPO[:QUANT][@REV] | "
		                "hf:ORG/REPO/FILE.gguf[@REV] [--model-dir DIR] [--token-file F] "
		                "[--endpoint URL] [--offline] [--json]\n");
		return ORCHCTL_EXIT_USAGE;
	}
	/* ORG/REPO[:QUANT] alone, as llama.cpp's -hf takes it, is a Hugging Face reference too */
	char given[1024];
	const char *a = argv[optind];
	snprintf(given, sizeof(given), "%s%s",
	         strncmp(a, "hf:", 3) != 0 && strchr(a, '/') && a[0] != '/' && a[0] != '.' ? "hf:"
	                                                                                   : "",
	         a);
	if (hf_ref_parse(given, &r, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: pull: %s\n", e.msg);
		return ORCHCTL_EXIT_USAGE;
	}
	char *token = orchctl_hf_token(so.token_file, &bad);
	const char *sock = orchctl_socket(NULL);
	if (!bad && so.dir == NULL && !so.offline && so.endpoint == NULL && orchd_running(sock)) {
		int rc = pull_via_orchd(sock, &r, token); /* into the store orchd's models use */
		orch_free(token);
		return rc;
	}
	bool none;
	struct store *s = bad ? NULL : open_store(&so, true, &none);
	if (s == NULL) {
		orch_free(token);
		return ORCHCTL_EXIT_FAILED;
	}
	struct hf_opts ho = {.endpoint = so.endpoint,
	                     .token = token,
	                     .offline = so.offline,
	                     .progress = on_progress,
	                     .progress_ctx = &view};
	orch_err rv = hf_pull(s, &r, &ho, &en, &e);
	orch_free(token);
	if (rv != ORCH_OK) {
		fprintf(stderr, "orchctl: pull %s: %s\n", r.canon, e.msg);
		store_close(s);
		return ORCHCTL_EXIT_FAILED;
	}
	if (arg_json) {
		print_json(entry_json(s, &en));
	} else {
		char path[PATH_MAX] = "";
		uint64_t size = 0;
		for (uint32_t i = 0; i < en.n_files; i++)
			size += en.files[i].size;
		store_model_path(s, &en, path, sizeof(path), NULL);
		printf("%s: %u file%s, %.1f MiB, commit %.12s\n  serve it with: model = %s (or path "
		       "= %s)\n",
		       en.ref, en.n_files, en.n_files == 1 ? "" : "s", (double)size / (1 << 20),
		       en.commit[0] ? en.commit : "-", en.ref, path);
	}
	store_entry_fini(&en);
	store_close(s);
	return 0;
}

/* ---- models, rm ---- */

/* Whether @en's file @i is kept by another reference in @all (@n). */
static bool
kept_by_other(const struct store_entry *en, uint32_t i, const struct store_entry *all, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t f = 0; strcmp(all[k].ref, en->ref) != 0 && f < all[k].n_files; f++)
			if (strcmp(all[k].files[f].sha256, en->files[i].sha256) == 0)
				return true;
	return false;
}

/*
 * The models of orchd that name @en or serve one of its files (their names, ", "-joined, in
 * @buf; "" none). For a removal (@all: the store's references, @n): only models loading or
 * running, and only files no other reference keeps.
 */
static void
used_by(const cJSON *status, const struct store *s, const struct store_entry *en,
        const struct store_entry *all, uint32_t n_all, char *buf, size_t n)
{
	const cJSON *m;
	size_t at = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(status, "models"))
	{
		const char *path = orchctl_str(m, "path"), *state = orchctl_str(m, "state");
		char real[PATH_MAX], blob[PATH_MAX], breal[PATH_MAX];
		bool uses =
		        strcmp(orchctl_str(m, "model"), en->ref) == 0; /* model = the reference */
		if (all != NULL && (strcmp(state, "stopped") == 0 || strcmp(state, "failed") == 0))
			continue;
		for (uint32_t i = 0; !uses && i < en->n_files && realpath(path, real) != NULL; i++)
			uses = (all == NULL || !kept_by_other(en, i, all, n_all)) &&
			       store_blob_path(s, en->files[i].sha256, "", blob, sizeof(blob),
			                       NULL) == ORCH_OK &&
			       realpath(blob, breal) != NULL && strcmp(real, breal) == 0;
		if (uses && at + 2 < n)
			at += (size_t)snprintf(buf + at, n - at, "%s%s", at ? ", " : "",
			                       orchctl_str(m, "name"));
	}
}

/* Whether orchd listens on @sock: false when there is no socket, or nobody behind it. */
static bool
orchd_running(const char *sock)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd, rc;

	if (strlen(sock) >= sizeof(a.sun_path) || access(sock, F_OK) != 0)
		return false;
	memcpy(a.sun_path, sock, strlen(sock) + 1);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0)
		return true; /* cannot tell: ask, and let the asking say why */
	rc = connect(fd, (struct sockaddr *)&a, sizeof(a));
	int err = errno;
	close(fd);
	return rc == 0 || (err != ECONNREFUSED && err != ENOENT);
}

/*
 * orchd's /admin/status into *@ret: NULL when orchd is not running (nothing uses the store
 * then); false when it runs but could not be asked (printed).
 */
static bool
orchd_status(cJSON **ret)
{
	const char *sock = orchctl_socket(NULL);
	int status = 0;
	char *body = NULL;

	*ret = NULL;
	if (!orchd_running(sock))
		return true;
	if (orchctl_request(sock, "GET", "/admin/status", NULL, &status, &body) != 0)
		return false;
	if (status == 200)
		*ret = cJSON_Parse(body);
	free(body);
	if (*ret == NULL)
		fprintf(stderr, "orchctl: orchd at %s answered /admin/status with HTTP %d\n", sock,
		        status);
	return *ret != NULL;
}

/* The architecture and quant kind of @path's GGUF header ("-" when unreadable). */
static void
describe(const char *path, char *arch, size_t an, char *quant, size_t qn)
{
	struct gguf_file *f = NULL;
	struct gguf_str a;

	snprintf(arch, an, "-");
	snprintf(quant, qn, "-");
	if (gguf_open(path, &f, NULL) != ORCH_OK)
		return;
	if (gguf_get_str(f, "general.architecture", &a) == ORCH_OK)
		snprintf(arch, an, "%.*s", (int)(a.len < 64 ? a.len : 64), a.ptr);
	const char *q = gguf_dominant_type(f);
	snprintf(quant, qn, "%s", q ? q : "-");
	gguf_close(f);
}

int
orchctl_models(int argc, char **argv)
{
	struct store_opts so;
	struct orch_errinfo e = {0};
	struct store_entry *v = NULL;
	uint32_t n = 0;

	if (store_args(argc, argv, &so, false) != 0 || optind != argc) {
		fprintf(stderr, "usage: orchctl models [--model-dir DIR] [--json]\n");
		return ORCHCTL_EXIT_USAGE;
	}
	bool none;
	struct store *s = open_store(&so, false, &none);
	if (s == NULL && none) { /* nothing pulled yet */
		if (arg_json)
			puts("[]");
		else
			printf("no model store yet (orchctl pull puts one there); the models orchd "
			       "serves now: orchctl status\n");
		return 0;
	}
	if (s == NULL)
		return ORCHCTL_EXIT_FAILED;
	if (!arg_json)
		printf("store: %s\n", store_dir(s));
	if (store_list(s, &v, &n, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: models: %s\n", e.msg);
		store_close(s);
		return ORCHCTL_EXIT_FAILED;
	}
	cJSON *status = NULL, *out = cJSON_CreateArray();
	if (!orchd_status(&status))
		fprintf(stderr, "orchctl: models: which models use each file is not known\n");
	if (!arg_json)
		printf("%-48s %-40s %10s %-10s %-10s %-14s %s\n", "REFERENCE", "FILE", "SIZE",
		       "ARCH", "QUANT", "SHA256", "USED BY");
	for (uint32_t i = 0; i < n; i++) {
		char path[PATH_MAX] = "", arch[80], quant[32], users[512];
		uint64_t size = 0;
		for (uint32_t k = 0; k < v[i].n_files; k++)
			size += v[i].files[k].size;
		store_model_path(s, &v[i], path, sizeof(path), NULL);
		describe(path, arch, sizeof(arch), quant, sizeof(quant));
		used_by(status, s, &v[i], NULL, 0, users, sizeof(users));
		if (arg_json) {
			cJSON *o = entry_json(s, &v[i]);
			cJSON_AddStringToObject(o, "architecture", arch);
			cJSON_AddStringToObject(o, "quant", quant);
			cJSON *u = cJSON_AddArrayToObject(o, "used_by");
			for (char *tok = strtok(users, ", "); tok; tok = strtok(NULL, ", "))
				cJSON_AddItemToArray(u, cJSON_CreateString(tok));
			cJSON_AddItemToArray(out, o);
			continue;
		}
		printf("%-48s %-40s %8.1fMi %-10s %-10s %.12s   %s\n", v[i].ref,
		       v[i].n_files ? v[i].files[0].path : "-", (double)size / (1 << 20), arch,
		       quant, v[i].n_files ? v[i].files[0].sha256 : "-", users[0] ? users : "-");
	}
	if (arg_json)
		print_json(out);
	else
		cJSON_Delete(out);
	cJSON_Delete(status);
	store_entries_free(v, n);
	store_close(s);
	return 0;
}

int
orchctl_rm_ref(int argc, char **argv)
{
	struct store_opts so;
	struct orch_errinfo e = {0};
	struct hf_ref r;
	struct store_entry en = {0};
	char users[512] = "";

	if (store_args(argc, argv, &so, false) != 0 || optind != argc - 1) {
		fprintf(stderr, "usage: orchctl rm hf:REFERENCE [--model-dir DIR]\n");
		return ORCHCTL_EXIT_USAGE;
	}
	if (hf_ref_parse(argv[optind], &r, &e) != ORCH_OK) {
		fprintf(stderr, "orchctl: rm: %s\n", e.msg);
		return ORCHCTL_EXIT_USAGE;
	}
	bool none;
	struct store *s = open_store(&so, false, &none);
	if (s == NULL) {
		if (none)
			fprintf(stderr, "orchctl: rm %s: there is no model store yet\n", r.canon);
		return ORCHCTL_EXIT_FAILED;
	}
	orch_err rv = store_find(s, r.canon, &en, &e);
	cJSON *status = NULL;
	if (rv == ORCH_OK && !orchd_status(&status))
		rv = orch_errf(
		        &e, ORCH_EIO,
		        "orchd runs but could not be asked whether it serves %s: nothing was "
		        "removed",
		        r.canon);
	struct store_entry *all = NULL;
	uint32_t n_all = 0;
	if (rv == ORCH_OK && (rv = store_list(s, &all, &n_all, &e)) == ORCH_OK) {
		used_by(status, s, &en, all, n_all, users, sizeof(users));
		if (users[0])
			rv = orch_errf(&e, ORCH_EINVAL,
			               "%s is in use by %s: unload it first (orchctl unload NAME)",
			               r.canon, users);
		else
			rv = store_remove(s, r.canon, &e);
	}
	cJSON_Delete(status);
	store_entries_free(all, n_all);
	store_entry_fini(&en);
	store_close(s);
	if (rv != ORCH_OK) {
		fprintf(stderr, "orchctl: rm %s: %s\n", r.canon, e.msg);
		return ORCHCTL_EXIT_FAILED;
	}
	printf("%s removed\n", r.canon);
	return 0;
}
