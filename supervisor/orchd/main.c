/*
 * orchd - the supervisor daemon (DESIGN.md §5): flags and configuration,
 * the event loop, start-up (listeners, preloaded models), systemd
 * notifications, SIGHUP reload, and the SIGTERM drain.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>

#include "admin.h"
#include "base/clock.h"
#include "base/log.h"
#include "http.h"
#include "inspect.h"
#include "jobs.h"
#include "models.h"
#include "notify.h"
#include "orchd.h"
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

static bool
same_model(const struct cfg_model *a, const struct cfg_model *b)
{
	return memcmp(a, b, sizeof(*a)) == 0;
}

/* SIGHUP: models added start (when preloaded), removed ones unload, unchanged ones go on. */
static void
reload(struct orchd *d)
{
	struct orchd_config c;
	struct orch_errinfo e = {0};

	notify_reloading();
	/* revoked keys stop working at once; a bad file changes nothing */
	if (d->cfg.api_keys_file[0] != '\0')
		keys_reload(&d->keys, d->cfg.api_keys_file);
	cfg_defaults(&c);
	if (d->config_path == NULL || cfg_load(&c, d->config_path, &e) != ORCH_OK ||
	    cfg_check(&c, &e) != ORCH_OK) {
		orch_log_err(ORCH_EINVAL, d->config_path ? &e : NULL, "reload_failed", "config=%s",
		             d->config_path ? d->config_path : "(none)");
		cfg_free(&c);
		notify_reloaded(d);
		return;
	}
	for (struct model_entry *m = d->models, *next; m; m = next) {
		next = m->next;
		struct cfg_model *nm = cfg_model_find(&c, m->cfg.name);
		if (nm == NULL || !same_model(nm, &m->cfg)) {
			orch_log(ORCH_LOG_INFO, "reload_unload", "model=%s why=%s", m->cfg.name,
			         nm ? "changed" : "removed");
			models_unload(d, m, true);
		}
	}
	for (uint32_t i = 0; i < c.n_models; i++) {
		struct model_entry *m = models_find(d, c.models[i].name);
		if (m != NULL)
			continue; /* unchanged, or changed and still unloading: a later HUP adds it
			           */
		if (models_add(d, &c.models[i], &m, &e) != ORCH_OK) {
			orch_log_err(e.code, &e, "reload_add_failed", "model=%s", c.models[i].name);
			continue;
		}
		if (m->cfg.preload)
			models_start(d, m);
	}
	cfg_free(&c);
	orch_log(ORCH_LOG_INFO, "reloaded", "config=%s", d->config_path);
	notify_reloaded(d);
}

/* ---- shutdown ---- */

static void
on_shutdown_tick(evutil_socket_t fd, short what, void *arg)
{
	struct orchd *d = arg;
	bool live = false;

	(void)fd;
	(void)what;
	for (struct model_entry *m = d->models; m; m = m->next)
		for (uint32_t i = 0; i < m->n_workers; i++)
			live |= m->workers[i]->pid > 0;
	if (!live || orch_mono_ms() - d->stop_ms > d->cfg.shutdown_timeout_s * 1000ull) {
		orch_log(ORCH_LOG_INFO, "shutdown", "workers_left=%s", live ? "killed" : "none");
		event_base_loopexit(d->base, NULL);
	}
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct orchd *d = arg;

	(void)what;
	if (sig == SIGHUP) {
		reload(d);
		return;
	}
	if (d->stopping)
		return;
	d->stopping = true;
	d->stop_ms = orch_mono_ms();
	orch_log(ORCH_LOG_INFO, "stopping", "signal=%d", (int)sig);
	for (struct model_entry *m = d->models; m; m = m->next) {
		models_fail_queued(d, m, ORCH_EOVERLOADED, "orchd is shutting down");
		for (uint32_t i = 0; i < m->n_workers; i++)
			workers_drain(d, m->workers[i]);
	}
	struct timeval tick = {0, 100000};
	d->ev_shutdown = event_new(d->base, -1, EV_PERSIST, on_shutdown_tick, d);
	event_add(d->ev_shutdown, &tick);
	notify_stopping(d);
}

/* ---- main ---- */

static void
usage(void)
{
	fprintf(stderr,
	        "usage: orchd [--config FILE] [--check-config] [--listen HOST:PORT]\n"
	        "             [--admin-socket PATH] [--runtime-dir DIR] [--worker-bin PATH]\n"
	        "             [--log-level err|warning|info|debug]\n");
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
		orch_log_err(e.code, &e, "runtime_dir_failed", "dir=%s", d->cfg.runtime_dir);
		return false;
	}
	if ((d->base = event_base_new()) == NULL)
		return false;
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
		orch_log_err(e.code, &e, "start_failed", "api_keys_file=%s", d->cfg.api_keys_file);
		return false;
	}
	if (http_start(d, &e) != ORCH_OK || admin_start(d, &e) != ORCH_OK) {
		orch_log_err(e.code, &e, "start_failed", "listen=%s", d->cfg.listen);
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
	http_stop(d);
	inspect_stop(d);
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
		notify_watchdog_start(d);
		notify_state(d);
		event_base_dispatch(d->base);
		rc = 0;
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

/* Flags that set a [server] key, and their keys. */
struct flags {
	const char *kv[4][2];
	int n;
	bool check;
};

/* The command line; -1 to go on, else main's exit code. */
static int
parse_flags(int argc, char **argv, struct orchd *d, struct flags *f)
{
	static const struct option longopts[] = {{"config", required_argument, NULL, 'c'},
	                                         {"check-config", no_argument, NULL, 'C'},
	                                         {"listen", required_argument, NULL, 'l'},
	                                         {"admin-socket", required_argument, NULL, 'a'},
	                                         {"runtime-dir", required_argument, NULL, 'r'},
	                                         {"worker-bin", required_argument, NULL, 'w'},
	                                         {"log-level", required_argument, NULL, 'L'},
	                                         {"help", no_argument, NULL, 'h'},
	                                         {NULL, 0, NULL, 0}};
	static const struct {
		int opt;
		const char *key;
	} keys[] = {
	        {'l', "listen"}, {'a', "admin_socket"}, {'r', "runtime_dir"}, {'w', "worker_bin"}};
	int c;

	while (f->n < 4 && (c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		bool known = false;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (keys[i].opt == c) {
				f->kv[f->n][0] = keys[i].key;
				f->kv[f->n++][1] = optarg;
				known = true;
			}
		if (known)
			continue;
		if (c == 'c')
			d->config_path = optarg;
		else if (c == 'C')
			f->check = true;
		else if (c != 'L' || !set_log_level(optarg)) {
			usage();
			return c == 'h' ? 0 : 2;
		}
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	return -1;
}

/* The file, then the flags over it, then the whole-config checks; 0 or main's exit code. */
static int
configure(struct orchd *d, const struct flags *f)
{
	struct orch_errinfo e = {0};

	if (d->config_path == NULL && access("/etc/orchd/orchd.conf", R_OK) == 0)
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
		printf("orchd: %s: ok (%u models)\n", d.config_path ? d.config_path : "defaults",
		       d.cfg.n_models);
		cfg_free(&d.cfg);
		return 0;
	}
	if (d.cfg.worker_bin[0])
		snprintf(d.worker_bin, sizeof(d.worker_bin), "%s", d.cfg.worker_bin);
	else
		default_worker_bin(d.worker_bin, sizeof(d.worker_bin));
	d.started_ms = orch_mono_ms();
	d.started_unix = orch_unix_ms();
	srandom((unsigned)(d.started_unix ^ (uint64_t)getpid()));
	rc = run(&d);
	keys_free(&d.keys);
	cfg_free(&d.cfg);
	return rc;
}
