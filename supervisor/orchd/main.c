/*
 * orchd - the supervisor daemon (DESIGN.md §5): flags and configuration,
 * the event loop, start-up (listeners, preloaded models), systemd
 * notifications, SIGHUP reload, and the SIGTERM drain.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "admin_listen.h"
#include "admin_pull.h"
#include "admin_state.h"
#include "base/build_id.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/parse.h"
#include "check.h"
#include "core.h"
#include "http_listen.h"
#include "inspect.h"
#include "jobs.h"
#include "models.h"
#include "notify.h"
#include "offload.h"
#include "orchd.h"
#include "reload.h"
#include "rundir.h"
#include "workers.h"

/* ---- configuration ---- */

/* api_keys_file at start: unreadable, or without a key, stops orchd (keys fail closed). */
static orch_err
load_api_keys(struct orchd *d, struct orch_errinfo *e)
{
	if (d->cfg.api_keys_file[0] == '\0')
		return ORCH_OK;
	orch_err rv = keys_load(d->cfg.api_keys_file, &d->keys, e);
	if (rv == ORCH_OK)
		orch_log(ORCH_LOG_INFO, "api_keys", "file=%s keys=%u", d->cfg.api_keys_file,
		         d->keys.n);
	return rv;
}

/* ---- shutdown ---- */

/* after shutdown_timeout_s has cut the running jobs: the loop runs this long for their ends */
enum { SHUTDOWN_FLUSH_MIN_MS = 300, SHUTDOWN_FLUSH_MAX_MS = 2000 };

/*
 * Jobs left at the end of a shutdown (shutdown_timeout_s passed, or no worker is
 * left to run them): each ends now with its API's terminal form (native:
 * WORKER_LOST, retriable; OpenAI: an error chunk and [DONE]), and the loop runs
 * on a little so that the streams carry it out. No stream ends without one.
 */
static void
cut_running(struct orchd *d)
{
	uint32_t n = 0;

	d->cut_ms = orch_mono_ms();
	for (struct job *j = d->live; j != NULL; j = d->live) {
		jobs_fail(d, j, ORCH_EWORKER_LOST, "orchd shut down before the job finished");
		n++;
		if (d->live == j) /* not ended (cannot happen): stop rather than spin */
			break;
	}
	orch_log(ORCH_LOG_WARNING, "shutdown_cut", "jobs=%u timeout_s=%u", n,
	         d->cfg.shutdown_timeout_s);
}

static void
on_shutdown_tick(evutil_socket_t fd, short what, void *arg)
{
	struct orchd *d = arg;
	bool live = false;
	uint64_t now = orch_mono_ms();

	(void)fd;
	(void)what;
	for (struct model_entry *m = d->models; m; m = m->next)
		for (uint32_t i = 0; i < m->n_workers; i++)
			live |= m->workers[i]->pid > 0;
	bool over = !live || d->stop_now || now - d->stop_ms > d->cfg.shutdown_timeout_s * 1000ull;
	if (over && d->cut_ms == 0 && d->live != NULL) {
		/* out of time, or the workers gone with jobs left (a worker lost while draining:
		 * its jobs have nowhere to run): each ends in its API's form, then orchd exits */
		cut_running(d);
		return;
	}
	/* after a cut, the streams write their ends: a few ticks, more while any is open */
	uint64_t since = now - d->cut_ms;
	bool flushing = d->cut_ms != 0 && (since < SHUTDOWN_FLUSH_MIN_MS ||
	                                   (d->n_conns > 0 && since < SHUTDOWN_FLUSH_MAX_MS));
	if (over && !flushing) {
		orch_log(ORCH_LOG_INFO, "shutdown", "workers_left=%s", live ? "killed" : "none");
		event_base_loopexit(d->base, NULL);
	}
}

static void begin_stop(struct orchd *d, const char *why);

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct orchd *d = arg;

	(void)what;
	if (sig == SIGHUP) {
		reload_start(d); /* read off the loop, applied on it (reload.h) */
		return;
	}
	if (d->stopping) { /* a second SIGINT or SIGTERM: do not wait for the running jobs */
		if (!d->stop_now)
			orch_log(ORCH_LOG_WARNING, "stopping_now", "signal=%d", (int)sig);
		d->stop_now = true;
		return;
	}
	char why[32];
	snprintf(why, sizeof(why), "signal %d", (int)sig);
	begin_stop(d, why);
}

/*
 * Drain and exit: new requests get 503 OVERLOADED, queued jobs end, running ones finish
 * within shutdown_timeout_s (then each ends in its API's terminal form). SIGTERM, SIGINT
 * and the admin API's POST /admin/shutdown (orchd.stop) all come here; once.
 */
static void
begin_stop(struct orchd *d, const char *why)
{
	if (d->stopping)
		return;
	uint32_t running = 0;
	for (const struct job *j = d->live; j; j = j->live_next)
		running += j->state == JOB_RUNNING;
	d->stopping = true;
	d->stop_ms = orch_mono_ms();
	/* on a terminal, what Ctrl-C now waits for and how not to */
	if (running > 0)
		orch_log(
		        ORCH_LOG_INFO, "stopping",
		        "why=\"%s\" running_jobs=%u wait_s=%u hint=\"running jobs may finish first: "
		        "a second SIGINT (Ctrl-C) or SIGTERM ends them now\"",
		        why, running, d->cfg.shutdown_timeout_s);
	else
		orch_log(ORCH_LOG_INFO, "stopping", "why=\"%s\" running_jobs=0", why);
	for (struct model_entry *m = d->models; m; m = m->next) {
		models_fail_queued(d, m, ORCH_EOVERLOADED, "orchd is shutting down");
		for (uint32_t i = 0; i < m->n_workers; i++)
			workers_drain(d, m->workers[i]);
	}
	struct timeval tick = {0, 100000};
	d->ev_shutdown = event_new(d->base, -1, EV_PERSIST, on_shutdown_tick, d);
	event_add(d->ev_shutdown, &tick);
	struct notify_status s;
	models_status(d, &s);
	notify_stopping(d, &s);
}

/* ---- main ---- */

static void
usage(FILE *out)
{
	fprintf(out,
	        "usage: orchd [--config FILE] [--check-config] [--listen HOST:PORT] [--port N]\n"
	        "             [--admin-socket PATH] [--runtime-dir DIR] [--worker-bin PATH]\n"
	        "             [--log-level err|warning|notice|info|debug] [--version]\n"
	        "       orchd --model FILE [--name NAME] [--device cpu|cuda:N] [--context N]\n"
	        "             [--slots N] [other options as above]\n"
	        "Without --config, orchd reads /etc/orchd/orchd.conf when it exists and no\n"
	        "--model is given. --model serves one GGUF file with no config file.\n");
}

/* orch-worker next to this binary. */
static void
default_worker_bin(char *out, size_t n)
{
	char self[CFG_PATH_MAX - 16];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (k <= 0) {
		snprintf(out, n, "orch-worker");
		return;
	}
	self[k] = '\0';
	char *slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, n, "%s/orch-worker", self);
}

/*
 * orchd cannot start: one log line (with no wire code: nobody asked over the API),
 * and on a terminal the plain sentence too.
 */
static void
start_failed(const struct orch_errinfo *e, const char *what, const char *value)
{
	orch_log(ORCH_LOG_ERR, "start_failed", "part=%s value=%s code=%s msg=\"%s\"", what, value,
	         orch_err_name(e->code), e->msg);
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "orchd: %s\n", e->msg);
}

/*
 * Where workers cache the models' digests (keyed by path, size, mtime and inode): the
 * state directory's model-hashes, made 0750 if missing, so that they outlive a reboot
 * where runtime_dir does not; runtime_dir itself when it cannot be made. Beside the
 * model only with hash_cache_beside = yes.
 */
static void
hash_dir(struct orchd *d)
{
	char state[CFG_PATH_MAX];

	admin_state_dir(d, state, sizeof(state));
	snprintf(d->hash_dir, sizeof(d->hash_dir), "%s/model-hashes", state);
	if (mkdir(state, 0750) != 0 && errno != EEXIST)
		d->hash_dir[0] = '\0';
	else if (mkdir(d->hash_dir, 0750) != 0 && errno != EEXIST)
		d->hash_dir[0] = '\0';
	if (d->hash_dir[0] == '\0')
		orch_log(ORCH_LOG_WARNING, "hash_dir_failed",
		         "dir=%s/model-hashes err=\"%s\" using=%s", state, strerror(errno),
		         d->cfg.runtime_dir);
}

/* Descriptors, the runtime directory, the loop and its signals. */
static bool
prepare(struct orchd *d)
{
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct rlimit nofile; /* each stream is a socket: take all the descriptors allowed */

	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	struct orch_errinfo e = {0};
	if (rundir_claim(d, &e) != ORCH_OK) { /* one orchd per directory; what a dead one left */
		start_failed(&e, "runtime_dir", d->cfg.runtime_dir);
		return false;
	}
	hash_dir(d);
	if ((d->base = event_base_new()) == NULL)
		return false;
	core_init(d);
	/* cuda:N is NVML's index N (PCI bus order); make the workers' CUDA agree */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	devices_open(&d->devices, d->cfg.nvml_library);
	for (int i = 0; i < 3; i++) {
		d->ev_signal[i] = evsignal_new(d->base, sigs[i], on_signal, d);
		event_add(d->ev_signal[i], NULL);
	}
	return true;
}

/* Listeners and the configured models. */
static bool
start(struct orchd *d)
{
	struct orch_errinfo e = {0};

	if (load_api_keys(d, &e) != ORCH_OK) {
		start_failed(&e, "api_keys_file", d->cfg.api_keys_file);
		return false;
	}
	if (http_start(d, &e) != ORCH_OK) {
		start_failed(&e, "listen", d->cfg.listen);
		return false;
	}
	if (admin_start(d, &e) != ORCH_OK) {
		start_failed(&e, "admin_socket", d->cfg.admin_socket);
		return false;
	}
	for (uint32_t i = 0; i < d->cfg.n_models; i++) {
		struct model_entry *m;
		if (models_add(d, &d->cfg.models[i], &m, &e) != ORCH_OK) {
			orch_log_err(e.code, &e, "model_add_failed", "model=%s",
			             d->cfg.models[i].name);
			return false;
		}
		if (m->cfg.preload)
			models_start(d, m);
	}
	return true;
}

/* Drained or out of time: whatever is left goes now. */
static void
teardown(struct orchd *d)
{
	while (d->jobs)
		jobs_free(d, d->jobs);
	while (d->models) {
		struct model_entry *m = d->models;
		d->models = m->next;
		models_free(d, m);
	}
	admin_stop(d);
	admin_pulls_free(d);
	http_stop(d);
	offload_stop(d);
	for (int i = 0; i < 3; i++)
		if (d->ev_signal[i])
			event_free(d->ev_signal[i]);
	notify_stop(d);
	if (d->ev_shutdown)
		event_free(d->ev_shutdown);
	if (d->base)
		event_base_free(d->base);
	devices_close(&d->devices);
	rundir_release(d);
}

static int
run(struct orchd *d)
{
	int rc = 1;

	if (prepare(d) && start(d)) {
		struct notify_status s;
		notify_watchdog_start(d);
		models_status(d, &s);
		notify_state(d, &s);
		event_base_dispatch(d->base);
		rc = d->exit_code;
	}
	teardown(d);
	return rc;
}

/* --log-level @v; false when it names no level. */
static bool
set_log_level(const char *v)
{
	static const char *const lv[] = {"err", "warning", "notice", "info", "debug"};

	for (int i = 0; i < 5; i++)
		if (strcmp(v, lv[i]) == 0) {
			orch_log_set_level((enum orch_log_level)(ORCH_LOG_ERR + i));
			return true;
		}
	return false;
}

/* Flags that set a [server] key or describe the --model model. */
struct flags {
	const char *kv[8][2]; /* [server] key, value */
	int n;
	bool check;
	const char *port;
	const char *model, *name; /* --model FILE: its [model] keys in mkv */
	const char *mkv[8][2];
	int nm;
};

/* --port N: the port of @listen replaced; false when N is not a port. */
static bool
apply_port(char *listen, size_t n, const char *port)
{
	uint64_t p;
	char host[128];
	const char *colon = strrchr(listen, ':');

	if (orch_parse_u64(port, 1, 65535, &p) != ORCH_OK)
		return false;
	snprintf(host, sizeof(host), "%.*s", colon ? (int)(colon - listen) : 0, listen);
	if (snprintf(listen, n, "%.100s:%llu", host[0] ? host : "127.0.0.1",
	             (unsigned long long)p) >= (int)n)
		return false;
	return true;
}

/*
 * The --model model's name: the file's name less ".gguf", in lower case (as make run's
 * "stories260k" and Ollama's names), other characters as '-'.
 */
static void
model_name_of(const char *path, char *out, size_t n)
{
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	size_t len = strlen(base), k = 0;

	if (len > 5 && strcasecmp(base + len - 5, ".gguf") == 0)
		len -= 5;
	for (size_t i = 0; i < len && k + 1 < n; i++) {
		char ch = base[i];
		out[k++] = isalnum((unsigned char)ch) || strchr("._-", ch)
		                   ? (char)tolower((unsigned char)ch)
		                   : '-';
	}
	out[k] = '\0';
	if (k == 0)
		snprintf(out, n, "model");
}

/* The command line; -1 to go on, else main's exit code. */
static int
parse_flags(int argc, char **argv, struct orchd *d, struct flags *f)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"check-config", no_argument, NULL, 'C'},
	                                         {"listen", required_argument, NULL, 'l'},
	                                         {"port", required_argument, NULL, 'p'},
	                                         {"admin-socket", required_argument, NULL, 'a'},
	                                         {"runtime-dir", required_argument, NULL, 'r'},
	                                         {"worker-bin", required_argument, NULL, 'w'},
	                                         {"log-level", required_argument, NULL, 'L'},
	                                         {"model", required_argument, NULL, 'm'},
	                                         {"name", required_argument, NULL, 'N'},
	                                         {"device", required_argument, NULL, 'd'},
	                                         {"context", required_argument, NULL, 'x'},
	                                         {"slots", required_argument, NULL, 's'},
	                                         {"version", no_argument, NULL, 'V'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static const struct {
		int opt;
		const char *key;
	} keys[] = {{'l', "listen"},     {'a', "admin_socket"}, {'r', "runtime_dir"},
	            {'w', "worker_bin"}, {'d', "device"},       {'x', "context"},
	            {'s', "slots"}};
	int c;

	while ((c = getopt_long(argc, argv, "m:hV", longopts, NULL)) != -1) {
		bool known = false;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (keys[i].opt == c) {
				bool model_key = c == 'd' || c == 'x' || c == 's';
				int *k = model_key ? &f->nm : &f->n;
				if (*k == 8) {
					fprintf(stderr, "orchd: too many options\n");
					return 2;
				}
				const char **kv = model_key ? f->mkv[(*k)++] : f->kv[(*k)++];
				kv[0] = keys[i].key;
				kv[1] = optarg;
				known = true;
			}
		if (known)
			continue;
		if (c == 'c')
			d->config_path = optarg;
		else if (c == 'C')
			f->check = true;
		else if (c == 'p')
			f->port = optarg;
		else if (c == 'm')
			f->model = optarg;
		else if (c == 'N')
			f->name = optarg;
		else if (c == 'V') {
			printf("orchd %s\n", orch_build_id());
			return 0;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else if (c != 'L' || !set_log_level(optarg)) {
			if (c == 'L')
				fprintf(stderr,
				        "orchd: --log-level wants err, warning, notice, info "
				        "or debug, got '%s'\n",
				        optarg);
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "orchd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if ((f->nm > 0 || f->name != NULL) && f->model == NULL) {
		fprintf(stderr, "orchd: --name, --device, --context and --slots describe the "
		                "--model model; without --model, set them in the config file\n");
		return 2;
	}
	return -1;
}

/* --model FILE: one [model] section, preloaded; 0 or main's exit code. */
static int
add_flag_model(struct orchd *d, const struct flags *f)
{
	char name[CFG_NAME_MAX], section[CFG_NAME_MAX + 16];
	struct orch_errinfo e = {0};

	if (f->name)
		snprintf(name, sizeof(name), "%s", f->name);
	else
		model_name_of(f->model, name, sizeof(name));
	snprintf(section, sizeof(section), "model \"%s\"", name);
	snprintf(d->flag_model, sizeof(d->flag_model), "%s", name);
	if (cfg_model_find(&d->cfg, name) != NULL) {
		fprintf(stderr,
		        "orchd: --model: the config already has a model '%s' (pick "
		        "another with --name)\n",
		        name);
		return 1;
	}
	if (cfg_set(&d->cfg, section, "path", f->model, &e) != ORCH_OK ||
	    cfg_set(&d->cfg, section, "preload", "yes", &e) != ORCH_OK) {
		fprintf(stderr, "orchd: --model: %s\n", e.msg);
		return 1;
	}
	for (int i = 0; i < f->nm; i++)
		if (cfg_set(&d->cfg, section, f->mkv[i][0], f->mkv[i][1], &e) != ORCH_OK) {
			fprintf(stderr, "orchd: --%s: %s\n", f->mkv[i][0], e.msg);
			return 1;
		}
	return 0;
}

/*
 * Not root and nothing said where the runtime files go: /run/orchd is root's
 * (systemd makes it), so a user's orchd keeps them in $XDG_RUNTIME_DIR/orchd,
 * or /tmp/orchd-UID, as orchctl looks for them (docs/configuration.md).
 */
static void
user_runtime_dir(struct orchd *d)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct orchd_config def;

	cfg_defaults(&def);
	if (geteuid() == 0 || strcmp(d->cfg.runtime_dir, def.runtime_dir) != 0 ||
	    access(def.runtime_dir, W_OK) == 0)
		return;
	if (xdg != NULL && xdg[0] == '/')
		snprintf(d->cfg.runtime_dir, sizeof(d->cfg.runtime_dir), "%s/orchd", xdg);
	else
		snprintf(d->cfg.runtime_dir, sizeof(d->cfg.runtime_dir), "/tmp/orchd-%u",
		         (unsigned)geteuid());
}

/* admin_socket left at its default lives in the runtime directory, wherever that is. */
static void
admin_socket_default(struct orchd *d)
{
	struct orchd_config def;

	cfg_defaults(&def);
	if (strcmp(d->cfg.admin_socket, def.admin_socket) == 0 &&
	    strcmp(d->cfg.runtime_dir, def.runtime_dir) != 0)
		snprintf(d->cfg.admin_socket, sizeof(d->cfg.admin_socket), "%.*s/orchd.sock",
		         (int)sizeof(d->cfg.admin_socket) - 16, d->cfg.runtime_dir);
}

/* The file, then the flags over it, then the whole-config checks; 0 or main's exit code. */
static int
configure(struct orchd *d, const struct flags *f)
{
	struct orch_errinfo e = {0};

	/* --model alone is a one-model server: no system config beneath it */
	if (d->config_path == NULL && f->model == NULL &&
	    access("/etc/orchd/orchd.conf", R_OK) == 0)
		d->config_path = "/etc/orchd/orchd.conf";
	if (d->config_path != NULL && cfg_load(&d->cfg, d->config_path, &e) != ORCH_OK) {
		fprintf(stderr, "orchd: %s\n", e.msg);
		return 1;
	}
	for (int i = 0; i < f->n; i++) /* flags override the file */
		if (cfg_set(&d->cfg, "server", f->kv[i][0], f->kv[i][1], &e) != ORCH_OK) {
			fprintf(stderr, "orchd: --%s: %s\n", f->kv[i][0], e.msg);
			return 1;
		}
	if (f->port && !apply_port(d->cfg.listen, sizeof(d->cfg.listen), f->port)) {
		fprintf(stderr, "orchd: --port wants 1-65535, got '%s'\n", f->port);
		return 1;
	}
	if (f->model != NULL && add_flag_model(d, f) != 0)
		return 1;
	user_runtime_dir(d);
	admin_socket_default(d);
	if (cfg_check(&d->cfg, &e) != ORCH_OK) {
		fprintf(stderr, "orchd: %s: %s\n", d->config_path ? d->config_path : "flags",
		        e.msg);
		return 1;
	}
	return 0;
}

int
main(int argc, char **argv)
{
	static struct orchd d;
	struct flags f = {0};
	int rc;

	cfg_defaults(&d.cfg);
	if ((rc = parse_flags(argc, argv, &d, &f)) >= 0 || (rc = configure(&d, &f)) != 0) {
		cfg_free(&d.cfg);
		return rc;
	}
	if (f.check) {
		rc = check_config(&d);
		cfg_free(&d.cfg);
		return rc;
	}
	if (d.cfg.worker_bin[0])
		snprintf(d.worker_bin, sizeof(d.worker_bin), "%s", d.cfg.worker_bin);
	else
		default_worker_bin(d.worker_bin, sizeof(d.worker_bin));
	/* what orchd and its workers create (pidfiles, sockets, the state file) is
	 * nobody else's to write or connect to, whatever umask it was started with */
	umask(umask(0) | 027);
	d.stop = begin_stop;
	d.started_ms = orch_mono_ms();
	d.started_unix = orch_unix_ms();
	srandom((unsigned)(d.started_unix ^ (uint64_t)getpid()));
	rc = run(&d);
	keys_free(&d.keys);
	cfg_free(&d.cfg);
	return rc;
}
