/*
 * serve_debug_test - a serving worker's debug stream (log and step records,
 * the state dump, `orch-worker attach`), with serve_harness.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#include <cjson/cJSON.h>
#include <nng/nng.h>
#include <nng/protocol/pair1/pair.h>
#include <nng/protocol/reqrep0/req.h>

#include "base/clock.h"
#include "ipc/debug.h"
#include "ipc/ipc.h"
#include "serve_harness.h"
#include "t.h"

/* Read the records of @s for @ms; note a "step" one with timings and a "log" one of a job start. */
static void
scan_records(struct ipc_debug_sub *s, int ms, bool *step, bool *log)
{
	struct sbuf r = {0};

	for (int t = 0; t < ms; t += 20) {
		while (ipc_debug_sub_next(s, 20, &r, NULL) == ORCH_OK) {
			*step |= strncmp(r.p, "step step=", 10) == 0 && strstr(r.p, " forward_ms=");
			*log |= strncmp(r.p, "log level=info event=job_start ", 31) == 0;
		}
	}
	sbuf_fini(&r);
}

/*
 * Start @argv (a NULL-terminated list) with stdout on @out_fd and stderr on
 * @err_fd (-1: inherited). posix_spawn, not fork: this process has NNG's
 * threads, and a forked child of a sanitized, threaded process may hang
 * before its exec on a lock another thread held.
 */
static pid_t
start_cmd(const char *const *argv, int out_fd, int err_fd)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
	int rv = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)(uintptr_t)argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	return rv == 0 ? pid : -1;
}

/* Run @argv and return its exit status and stdout (first 8 KiB). */
static int
run_cmd(const char *const *argv, char *out, size_t n)
{
	int fds[2];
	size_t got = 0;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	pid_t pid = start_cmd(argv, fds[1], -1);
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		return -1;
	}
	ssize_t k;
	while (got + 1 < n && (k = read(fds[0], out + got, n - 1 - got)) > 0)
		got += (size_t)k;
	out[got] = '\0';
	close(fds[0]);
	int st = wait_exit(pid, 20000);
	if (st < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	return st;
}

/*
 * --debug-endpoint: log and step records reach a subscriber, a state dump
 * lists the worker and its jobs, an unknown request gets an error reply,
 * and `orch-worker attach` prints both; a bad endpoint fails the start.
 */
/* An unknown request on the control socket answers an error. */
static void
check_unknown_request(const char *dbg, char *ctl, size_t ctl_n)
{
	char bogus[] = "bogus";
	nng_socket req;
	nng_msg *m = NULL;

	T_OK(ipc_debug_ctl_url(dbg, ctl, ctl_n, NULL));
	T_TRUE(nng_req0_open(&req) == 0);
	nng_socket_set_ms(req, NNG_OPT_RECVTIMEO, 5000);
	T_TRUE(nng_dial(req, ctl, NULL, 0) == 0);
	T_TRUE(nng_send(req, bogus, 5, 0) == 0);
	T_TRUE(nng_recvmsg(req, &m, 0) == 0);
	T_TRUE(m != NULL && strncmp(nng_msg_body(m), "error unknown request", 21) == 0);
	nng_msg_free(m);
	nng_close(req);
}

/*
 * orch-worker attach: --dump, and a stream of step records while jobs run on
 * @c. Bounded in time: a subscriber that never gets its records fails the
 * check (with what it printed) instead of running jobs until ctest's timeout.
 */
static void
check_attach(struct ipc_chan *c, const char *dbg)
{
	char out[8192], errpath[64];

	const char *dump_argv[] = {worker_bin, "attach", dbg, "--dump", NULL};
	T_EQ(run_cmd(dump_argv, out, sizeof(out)), 0);
	T_TRUE(strncmp(out, "worker id=t1 ", 13) == 0);

	snprintf(errpath, sizeof(errpath), "/tmp/orch-serve-debug-attach-%d.err", (int)getpid());
	int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
	int err = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	T_TRUE(null >= 0 && err >= 0);
	const char *att_argv[] = {worker_bin, "attach",       dbg,     "--topic", "step", "--count",
	                          "3",        "--timeout-ms", "20000", NULL};
	pid_t att = start_cmd(att_argv, null, err);
	close(null);
	close(err);
	T_TRUE(att > 0);

	int st = -1;
	uint64_t id = 200, deadline = orch_mono_ms() + 60000;
	while (st < 0 && orch_mono_ms() < deadline) {
		struct job_out k = {.id = id};
		submit(c, id, p_once, 0.0f, 1, 4);
		run_until_ended(c, &k, 1, NULL);
		st = wait_exit(att, 20);
		id++;
	}
	if (st < 0) { /* where it hangs, when gdb is there to say, then gone */
		char pid[16];
		snprintf(pid, sizeof(pid), "%d", (int)att);
		const char *gdb[] = {"/usr/bin/gdb",        "-batch", "-p", pid, "-ex",
		                     "thread apply all bt", NULL};
		if (access(gdb[0], X_OK) == 0) {
			pid_t g = start_cmd(gdb, STDERR_FILENO, STDERR_FILENO);
			if (g > 0 && wait_exit(g, 30000) < 0) {
				kill(g, SIGKILL);
				waitpid(g, NULL, 0);
			}
		}
		kill(att, SIGKILL);
		waitpid(att, NULL, 0);
	}
	if (st != 0) {
		FILE *f = fopen(errpath, "r");
		size_t k = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
		out[k] = '\0';
		if (f)
			fclose(f);
		fprintf(stderr, "attach: status %d after %llu jobs; its stderr: %s\n", st,
		        (unsigned long long)(id - 200), out);
	}
	unlink(errpath);
	T_EQ(st, 0);
}

static void
test_debug(void)
{
	char dbg[128], ctl[140], out[8192];
	struct ipc_chan *c = NULL;
	struct ipc_debug_sub *sub = NULL;
	struct sbuf d = {0};
	pid_t pid = 0;

	snprintf(dbg, sizeof(dbg), "ipc:///tmp/orch-serve-debug-%d.sock", (int)getpid());
	debug_url = dbg;
	T_OK(ipc_debug_sub_open(dbg, NULL, 0, &sub, NULL));
	start(&c, &pid);

	/* records: the subscription connects in the background, so run jobs until they flow */
	bool step = false, log = false;
	for (uint64_t id = 100; id < 150 && !(step && log); id++) {
		struct job_out j = {.id = id};
		submit(c, id, p_once, 0.0f, 1, 4);
		run_until_ended(c, &j, 1, NULL);
		scan_records(sub, 40, &step, &log);
	}
	T_TRUE(step);
	T_TRUE(log);

	/* a state dump with a job running, then without it */
	struct job_out j = {.id = 77};
	submit(c, 77, p_once, 0.0f, 1, 250);
	run_until_tokens(c, &j, 1, 2, NULL);
	T_OK(ipc_debug_dump(dbg, 5000, &d, NULL));
	T_TRUE(strncmp(d.p, "worker id=t1 ", 13) == 0);
	T_TRUE(strstr(d.p, " slots_total=4 ") && strstr(d.p, " context=256 "));
	T_TRUE(strstr(d.p, "\njob id=77 ") && strstr(d.p, " state=decode "));
	control(c, ORCH__ENVELOPE__BODY_CANCEL, 77);
	run_until_ended(c, &j, 1, NULL);
	T_OK(ipc_debug_dump(dbg, 5000, &d, NULL));
	T_TRUE(strstr(d.p, "job id=77") == NULL && strstr(d.p, " jobs=0 "));

	check_unknown_request(dbg, ctl, sizeof(ctl));
	check_attach(c, dbg);
	stop(c, pid);
	ipc_debug_sub_close(sub);
	sbuf_fini(&d);

	/* no worker there: attach --dump gives up with exit 1 */
	const char *none_argv[] = {
	        worker_bin, "attach",       "ipc:///tmp/orch-no-such-worker.sock",
	        "--dump",   "--timeout-ms", "300",
	        NULL};
	T_EQ(run_cmd(none_argv, out, sizeof(out)), 1);

	debug_url = NULL;
	unlink(dbg + strlen("ipc://"));
	unlink(ctl + strlen("ipc://"));
}

/* A bad debug endpoint: Hello, then an Error naming it, then exit 1. */
static void
test_bad_endpoint(void)
{
	struct ipc_chan *c = NULL;
	pid_t pid;

	Orch__Envelope *env = NULL;
	debug_url = "bogus://x";
	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid = spawn(model, NULL);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	ipc_envelope_free(env);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_ERROR);
	T_TRUE(strstr(env->error->message, "bogus://x") != NULL);
	ipc_envelope_free(env);
	T_EQ(wait_exit(pid, 5000), 1);
	ipc_close(c);
	debug_url = NULL;
}

int
main(void)
{
	if (!harness_init())
		return 1;
	T_RUN(test_debug);
	T_RUN(test_bad_endpoint);
	return t_done();
}
