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

#include <systemd/sd-daemon.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/readfile.h"
#include "orchd.h"

/* ---- systemd ---- */

void
orchd_state_changed(struct orchd *d)
{
	uint32_t ready = 0, total = 0, running = 0, queued = 0;

	for (struct model *m = d->models; m; m = m->next) {
		total++;
		ready += m->state == MODEL_READY;
		queued += m->queued;
		for (uint32_t i = 0; i < m->n_workers; i++)
			running += m->workers[i]->jobs;
	}
	if (!d->ready_sent && !d->stopping && d->http && models_all_ready(d)) {
		d->ready_sent = true;
		orch_log(ORCH_LOG_INFO, "ready", "models=%u", total);
		sd_notify(0, "READY=1");
	}
	sd_notifyf(0, "STATUS=%u/%u models ready, %u jobs running, %u queued%s", ready, total,
	           running, queued, d->stopping ? ", stopping" : "");
}

static void
on_watchdog(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	sd_notify(0, "WATCHDOG=1");
}

/* ---- configuration ---- */

static orch_err
load_api_keys(struct orchd *d, struct orch_errinfo *e)
{
	char *text = NULL;
	size_t n = 0;

	if (d->cfg.api_keys_file[0] == '\0')
		return ORCH_OK;
	if (orch_read_file(d->cfg.api_keys_file, 1u << 20, &text, &n, e) != ORCH_OK)
		return ORCH_EIO;
	char *save = NULL;
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r \t")] = '\0';
		if (line[0] == '\0' || line[0] == '#')
			continue;
		char **keys = orch_reallocarray(d->api_keys, d->n_api_keys + 1, sizeof(*keys));
		if (keys == NULL ||
		    (keys[d->n_api_keys] = orch_strndup(line, strlen(line))) == NULL) {
			if (keys)
				d->api_keys = keys;
			orch_free(text);
			return orch_errf(e, ORCH_ENOMEM, "out of memory");
		}
		d->api_keys = keys;
		d->n_api_keys++;
	}
	orch_free(text);
	orch_log(ORCH_LOG_INFO, "api_keys", "file=%s keys=%u", d->cfg.api_keys_file, d->n_api_keys);
	return ORCH_OK;
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

	cfg_defaults(&c);
	if (d->config_path == NULL || cfg_load(&c, d->config_path, &e) != ORCH_OK ||
	    cfg_check(&c, &e) != ORCH_OK) {
		orch_log_err(ORCH_EINVAL, d->config_path ? &e : NULL, "reload_failed", "config=%s",
		             d->config_path ? d->config_path : "(none)");
		cfg_free(&c);
		return;
	}
	for (struct model *m = d->models, *next; m; m = next) {
		next = m->next;
		struct cfg_model *nm = cfg_model_find(&c, m->cfg.name);
		if (nm == NULL || !same_model(nm, &m->cfg)) {
			orch_log(ORCH_LOG_INFO, "reload_unload", "model=%s why=%s", m->cfg.name,
			         nm ? "changed" : "removed");
			models_unload(d, m, true);
		}
	}
	for (uint32_t i = 0; i < c.n_models; i++) {
		struct model *m = models_find(d, c.models[i].name);
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
}

/* ---- shutdown ---- */

static void
on_shutdown_tick(evutil_socket_t fd, short what, void *arg)
{
	struct orchd *d = arg;
	bool live = false;

	(void)fd;
	(void)what;
	for (struct model *m = d->models; m; m = m->next)
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
	sd_notify(0, "STOPPING=1");
	orch_log(ORCH_LOG_INFO, "stopping", "signal=%d", (int)sig);
	for (struct model *m = d->models; m; m = m->next) {
		while (m->queue_head) {
			struct job *j = m->queue_head;
			models_unqueue(j);
			jobs_fail(d, j, ORCH_EQUEUE_FULL, "orchd is shutting down");
		}
		for (uint32_t i = 0; i < m->n_workers; i++)
			workers_drain(d, m->workers[i]);
	}
	struct timeval tick = {0, 100000};
	d->ev_shutdown = event_new(d->base, -1, EV_PERSIST, on_shutdown_tick, d);
	event_add(d->ev_shutdown, &tick);
	orchd_state_changed(d);
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

static int
run(struct orchd *d)
{
	struct orch_errinfo e = {0};
	int sigs[] = {SIGTERM, SIGINT, SIGHUP};
	struct event *sev[3];
	uint64_t usec = 0;

	signal(SIGPIPE, SIG_IGN);
	struct rlimit nofile; /* each stream is a socket: take all the descriptors allowed */
	if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
		nofile.rlim_cur = nofile.rlim_max;
		setrlimit(RLIMIT_NOFILE, &nofile);
	}
	if (mkdir(d->cfg.runtime_dir, 0750) != 0 && errno != EEXIST) {
		orch_log(ORCH_LOG_ERR, "runtime_dir_failed", "dir=%s err=\"%s\"",
		         d->cfg.runtime_dir, strerror(errno));
		return 1;
	}
	if ((d->base = event_base_new()) == NULL)
		return 1;
	/* cuda:N is NVML's index N (PCI bus order); make the workers' CUDA agree */
	setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID", 0);
	devices_open(&d->devices, d->cfg.nvml_library);
	for (int i = 0; i < 3; i++) {
		sev[i] = evsignal_new(d->base, sigs[i], on_signal, d);
		event_add(sev[i], NULL);
	}
	if (load_api_keys(d, &e) != ORCH_OK || http_start(d, &e) != ORCH_OK ||
	    admin_start(d, &e) != ORCH_OK) {
		orch_log_err(e.code, &e, "start_failed", "listen=%s", d->cfg.listen);
		return 1;
	}
	for (uint32_t i = 0; i < d->cfg.n_models; i++) {
		struct model *m;
		if (models_add(d, &d->cfg.models[i], &m, &e) != ORCH_OK) {
			orch_log_err(e.code, &e, "model_add_failed", "model=%s",
			             d->cfg.models[i].name);
			return 1;
		}
		if (m->cfg.preload)
			models_start(d, m);
	}
	if (sd_watchdog_enabled(0, &usec) > 0 && usec > 0) {
		struct timeval half = {(time_t)(usec / 2000000), (suseconds_t)(usec / 2 % 1000000)};
		d->ev_watchdog = event_new(d->base, -1, EV_PERSIST, on_watchdog, d);
		event_add(d->ev_watchdog, &half);
		sd_notify(0, "WATCHDOG=1");
	}
	orchd_state_changed(d);
	event_base_dispatch(d->base);
	/* drained or out of time: whatever is left goes now */
	while (d->jobs)
		jobs_free(d, d->jobs);
	while (d->models) {
		struct model *m = d->models;
		d->models = m->next;
		models_free(d, m);
	}
	admin_stop(d);
	http_stop(d);
	for (int i = 0; i < 3; i++)
		event_free(sev[i]);
	if (d->ev_watchdog)
		event_free(d->ev_watchdog);
	if (d->ev_shutdown)
		event_free(d->ev_shutdown);
	event_base_free(d->base);
	devices_close(&d->devices);
	return 0;
}

int
main(int argc, char **argv)
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
	static struct orchd d;
	struct orch_errinfo e = {0};
	const char *flags[4][2] = {{NULL, NULL}};
	bool check = false;
	int c, nf = 0, rc;

	cfg_defaults(&d.cfg);
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			d.config_path = optarg;
			break;
		case 'C':
			check = true;
			break;
		case 'l':
			flags[nf][0] = "listen";
			flags[nf++][1] = optarg;
			break;
		case 'a':
			flags[nf][0] = "admin_socket";
			flags[nf++][1] = optarg;
			break;
		case 'r':
			flags[nf][0] = "runtime_dir";
			flags[nf++][1] = optarg;
			break;
		case 'w':
			flags[nf][0] = "worker_bin";
			flags[nf++][1] = optarg;
			break;
		case 'L': {
			static const char *const lv[] = {"err", "warning", "notice", "info",
			                                 "debug"};
			bool ok = false;
			for (int i = 0; i < 5; i++)
				if (strcmp(optarg, lv[i]) == 0) {
					orch_log_set_level((enum orch_log_level)(ORCH_LOG_ERR + i));
					ok = true;
				}
			if (!ok) {
				usage();
				return 2;
			}
			break;
		}
		default:
			usage();
			return c == 'h' ? 0 : 2;
		}
		if (nf == 4)
			break;
	}
	if (optind != argc) {
		usage();
		return 2;
	}
	if (d.config_path == NULL && access("/etc/orchd/orchd.conf", R_OK) == 0)
		d.config_path = "/etc/orchd/orchd.conf";
	if (d.config_path != NULL && cfg_load(&d.cfg, d.config_path, &e) != ORCH_OK) {
		fprintf(stderr, "orchd: %s\n", e.msg);
		return 1;
	}
	for (int i = 0; i < nf; i++) /* flags override the file */
		if (cfg_set(&d.cfg, "server", flags[i][0], flags[i][1], &e) != ORCH_OK) {
			fprintf(stderr, "orchd: --%s: %s\n", flags[i][0], e.msg);
			return 1;
		}
	if (cfg_check(&d.cfg, &e) != ORCH_OK) {
		fprintf(stderr, "orchd: %s: %s\n", d.config_path ? d.config_path : "flags", e.msg);
		return 1;
	}
	if (check) {
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
	for (uint32_t i = 0; i < d.n_api_keys; i++)
		orch_free(d.api_keys[i]);
	orch_free(d.api_keys);
	cfg_free(&d.cfg);
	return rc;
}
