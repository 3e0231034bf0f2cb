/*
 * serve_ident_test - what a serving worker says it is (docs/protocol.md):
 * the model's SHA-256 hashed during the first load and cached beside the
 * file (Ready carries it), then read from the cache (Hello carries it),
 * stale after the file changes, cached in --hash-cache-dir where beside is
 * not writable; the tokenizer hash; and the test-only faults
 * ORCH_FAULT_RESIDENCY (heartbeats say residency_ok=false with the reason,
 * then true again) and ORCH_FAULT_BUILD_ID (a Hello orchd must refuse).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/build_id.h"
#include "base/filehash.h"
#include "gguf/gguf.h"
#include "gguf/ident.h"
#include "ipc/ipc.h"
#include "serve_harness.h"
#include "t.h"

static char dir[96], copy[160], beside[176], cache[128], fault[128];

/* A worker on @path with options @extra (NULL-terminated) and "K=V" @env (NULL: none). */
static pid_t
spawn_with(const char *path, const char *const *extra, const char *env)
{
	pid_t pid = fork();

	if (pid == 0) {
		const char *argv[40] = {
		        worker_bin,  "serve", "--endpoint",  url,  "--model",        path,
		        "--device",  "cpu",   "--worker-id", "t1", "--slots",        "1",
		        "--context", "128",   "--threads",   "1",  "--heartbeat-ms", "100"};
		int n = 18;
		for (; extra && *extra && n < 39; extra++)
			argv[n++] = *extra;
		if (env != NULL)
			putenv((char *)(uintptr_t)env);
		execv(worker_bin, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	return pid;
}

/* Hello and Ready's model digests (and Hello's build id) of a worker starting on @c. */
static void
handshake(struct ipc_chan *c, char hello_sha[65], char ready_sha[65], char build[96])
{
	Orch__Envelope *env = NULL;

	hello_sha[0] = ready_sha[0] = build[0] = '\0';
	T_OK(ipc_recv(c, 10000, &env, NULL));
	if (env == NULL)
		return;
	T_EQ(env->body_case, ORCH__ENVELOPE__BODY_HELLO);
	if (env->body_case == ORCH__ENVELOPE__BODY_HELLO) {
		snprintf(hello_sha, 65, "%s", env->hello->model_sha256);
		snprintf(build, 96, "%s", env->hello->build_id);
	}
	ipc_envelope_free(env);
	for (;;) {
		env = NULL;
		T_OK(ipc_recv(c, 10000, &env, NULL));
		if (env == NULL || env->body_case != ORCH__ENVELOPE__BODY_LOAD_PROGRESS)
			break;
		ipc_envelope_free(env);
	}
	T_TRUE(env != NULL && env->body_case == ORCH__ENVELOPE__BODY_READY);
	if (env != NULL && env->body_case == ORCH__ENVELOPE__BODY_READY)
		snprintf(ready_sha, 65, "%s", env->ready->model_sha256);
	ipc_envelope_free(env);
}

/* One worker's start on @path: Hello's and Ready's digests; it is shut down after. */
static void
one_start(const char *path, const char *const *extra, char hello_sha[65], char ready_sha[65])
{
	struct ipc_chan *c = NULL;
	char build[96];

	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid_t pid = spawn_with(path, extra, NULL);
	handshake(c, hello_sha, ready_sha, build);
	stop(c, pid);
}

static void
copy_model(void)
{
	size_t n = 0;
	void *p = t_read_file(model, &n);
	FILE *f = fopen(copy, "wb");

	T_TRUE(p != NULL && f != NULL);
	if (p && f)
		T_EQ(fwrite(p, 1, n, f), n);
	if (f)
		fclose(f);
	free(p);
}

static void
test_hash_cache(void)
{
	char h[65], r[65];
	const char *want = model_sha256();
	const char *const with_dir[] = {"--hash-cache-dir", cache, NULL};

	one_start(copy, NULL, h, r); /* first start: hashed while loading */
	T_STREQ(h, "");
	T_STREQ(r, want);
	T_EQ(access(beside, R_OK), 0);
	one_start(copy, NULL, h, r); /* from the cache: in Hello */
	T_STREQ(h, want);
	struct timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
	T_EQ(utimensat(AT_FDCWD, copy, ts, 0), 0); /* another mtime: stale */
	one_start(copy, NULL, h, r);
	T_STREQ(h, "");
	T_STREQ(r, want);
	/* FILE.sha256 cannot be written (a directory in its way): the cache directory */
	T_EQ(unlink(beside), 0);
	T_EQ(mkdir(beside, 0755), 0);
	one_start(copy, with_dir, h, r);
	T_STREQ(h, "");
	T_STREQ(r, want);
	one_start(copy, with_dir, h, r);
	T_STREQ(h, want);
	T_EQ(rmdir(beside), 0);
}

static void
test_tokenizer_hash(void)
{
	struct ipc_chan *c = NULL;
	Orch__Envelope *env = NULL;
	struct gguf_file *f = NULL;
	uint8_t d[SHA256_BYTES];
	char want[SHA256_HEX];

	T_OK(gguf_open(model, &f, NULL));
	if (f == NULL)
		return;
	gguf_kv_sha256(f, "tokenizer.ggml.", d);
	gguf_close(f);
	sha256_hex(d, want);
	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	const char *const no_beside[] = {"--no-hash-beside", NULL};
	pid_t pid = spawn_with(model, no_beside, NULL);
	T_OK(ipc_recv(c, 10000, &env, NULL));
	if (env != NULL && env->body_case == ORCH__ENVELOPE__BODY_HELLO)
		T_STREQ(env->hello->tokenizer_hash, want);
	else
		T_FAIL_("no Hello");
	ipc_envelope_free(env);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ipc_close(c);
}

/* The next heartbeat on @c with residency_ok == @ok within 5 s; its residency_error into @why. */
static bool
heartbeat_with(struct ipc_chan *c, bool ok, char *why, size_t n)
{
	for (int i = 0; i < 100; i++) {
		Orch__Envelope *env = NULL;
		if (ipc_recv(c, 100, &env, NULL) != ORCH_OK)
			continue;
		bool hit = env->body_case == ORCH__ENVELOPE__BODY_HEARTBEAT &&
		           env->heartbeat->residency_ok == ok;
		if (hit)
			snprintf(why, n, "%s", env->heartbeat->residency_error);
		ipc_envelope_free(env);
		if (hit)
			return true;
	}
	return false;
}

static void
test_residency_fault(void)
{
	struct ipc_chan *c = NULL;
	char h[65], r[65], build[96], env[160], why[256] = "";
	const char *const opts[] = {"--no-hash-beside", "--residency-check-s", "1", NULL};

	snprintf(env, sizeof(env), "ORCH_FAULT_RESIDENCY=%s", fault);
	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid_t pid = spawn_with(model, opts, env);
	handshake(c, h, r, build);
	T_TRUE(heartbeat_with(c, true, why, sizeof(why)));
	int fd = open(fault, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	T_TRUE(fd >= 0);
	close(fd);
	T_TRUE(heartbeat_with(c, false, why, sizeof(why)));
	T_TRUE(strstr(why, "injected residency fault") != NULL);
	T_EQ(unlink(fault), 0);
	T_TRUE(heartbeat_with(c, true, why, sizeof(why)));
	T_STREQ(why, "");
	stop(c, pid);
}

static void
test_build_id_fault(void)
{
	struct ipc_chan *c = NULL;
	char h[65], r[65], build[96];
	const char *const opts[] = {"--no-hash-beside", NULL};
	Orch__Hello hello = ORCH__HELLO__INIT;
	struct orch_errinfo e = {0};

	T_OK(ipc_open(url, IPC_LISTEN, &c, NULL));
	pid_t pid = spawn_with(model, opts, "ORCH_FAULT_BUILD_ID=orch-9.9.9+elsewhere");
	handshake(c, h, r, build);
	T_STREQ(build, "orch-9.9.9+elsewhere");
	hello.protocol_version = IPC_PROTOCOL_VERSION;
	hello.build_id = build;
	T_ERR(ipc_check_hello(&hello, orch_build_id(), &e), ORCH_EPROTO);
	T_TRUE(strstr(e.msg, "is build 'orch-9.9.9+elsewhere'") != NULL);
	stop(c, pid);
}

static void
setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/orch-ident-test-%d", (int)getpid());
	snprintf(copy, sizeof(copy), "%s/m.gguf", dir);
	snprintf(beside, sizeof(beside), "%s.sha256", copy);
	snprintf(cache, sizeof(cache), "%s/cache", dir);
	snprintf(fault, sizeof(fault), "%s/residency-fault", dir);
	T_EQ(mkdir(dir, 0755), 0);
	T_EQ(mkdir(cache, 0755), 0);
	copy_model();
}

static void
cleanup(void)
{
	char cmd[160];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	T_EQ(system(cmd), 0);
}

int
main(void)
{
	if (!harness_init())
		return 1;
	setup();
	T_RUN(test_hash_cache);
	T_RUN(test_tokenizer_hash);
	T_RUN(test_residency_fault);
	T_RUN(test_build_id_fault);
	cleanup();
	return t_done();
}
