/*
 * rundir.c - orchd's runtime directory: its lock, the workers' pidfiles, and
 * what a dead orchd left behind (rundir.h).
 */
#include "rundir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "orchd.h"

#define KILL_WAIT_MS 2000 /* how long a killed left-over worker may take to go */

unsigned long long
rundir_starttime(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long long start = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fp = fopen(path, "re")) == NULL)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	/* "PID (COMM) STATE ..." where COMM may hold anything: fields after the last ')' */
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	p += 2; /* field 3, the state */
	for (int field = 3; field < 22 && p != NULL; field++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	if (p == NULL || sscanf(p, "%llu", &start) != 1)
		return 0;
	return start;
}

static void
pidfile_path(const struct orchd *d, const char *id, char *out, size_t n)
{
	snprintf(out, n, "%s/worker-%s.pid", d->cfg.runtime_dir, id);
}

void
rundir_worker_started(struct orchd *d, const char *id, pid_t pid)
{
	char path[CFG_PATH_MAX + 128], tmp[CFG_PATH_MAX + 136];
	unsigned long long start = rundir_starttime(pid);
	FILE *fp = NULL;

	pidfile_path(d, id, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	/* its mode whatever the umask: a pidfile others can write names what orchd kills */
	int fd = start == 0
	                 ? -1
	                 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd >= 0 && (fchmod(fd, 0640) != 0 || (fp = fdopen(fd, "w")) == NULL)) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		orch_log(ORCH_LOG_WARNING, "pidfile_failed", "worker=%s path=%s err=\"%s\"", id,
		         path, start == 0 ? "the process is gone" : strerror(errno));
		return;
	}
	fprintf(fp, "%d %llu\n", (int)pid, start);
	if (fclose(fp) != 0 || rename(tmp, path) != 0) {
		orch_log(ORCH_LOG_WARNING, "pidfile_failed", "worker=%s path=%s err=\"%s\"", id,
		         path, strerror(errno));
		unlink(tmp);
	}
}

void
rundir_worker_reaped(struct orchd *d, const char *id)
{
	char path[CFG_PATH_MAX + 128];

	pidfile_path(d, id, path, sizeof(path));
	unlink(path);
	if (!d->stopping) /* a successor takes the same names; a sweep clears what is left */
		return;
	static const char *const sockets[] = {".debug", ".debug.ctl"};
	for (size_t i = 0; i < sizeof(sockets) / sizeof(sockets[0]); i++) {
		snprintf(path, sizeof(path), "%s/worker-%s%s", d->cfg.runtime_dir, id, sockets[i]);
		unlink(path);
	}
}

/*
 * Whether @pid runs d->worker_bin's program (the same file name: a worker left by
 * an older build of the same path reads "... (deleted)", and is one too).
 */
static bool
is_worker(const struct orchd *d, pid_t pid)
{
	char path[64], exe[CFG_PATH_MAX];
	const char *want =
	        strrchr(d->worker_bin, '/') ? strrchr(d->worker_bin, '/') + 1 : d->worker_bin;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	ssize_t n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	size_t k = strlen(" (deleted)");
	if ((size_t)n > k && strcmp(exe + (size_t)n - k, " (deleted)") == 0)
		exe[(size_t)n - k] = '\0';
	const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	if (strcmp(base, want) == 0)
		return true;
	/* worker_bin a link (orch-worker -> orch-worker-1.2): its target's name */
	char real[PATH_MAX];
	if (realpath(d->worker_bin, real) == NULL)
		return false;
	const char *rbase = strrchr(real, '/') ? strrchr(real, '/') + 1 : real;
	return strcmp(base, rbase) == 0;
}

/* Kill the worker @name (a pidfile in @dir) names when it still runs; remove the file. */
static void
kill_left_over(const struct orchd *d, int dir, const char *name, uint32_t *killed)
{
	char buf[64];
	int pid = 0;
	unsigned long long start = 0;
	struct stat st;
	/* O_NONBLOCK and a regular file only: a FIFO named like a pidfile cannot hang the start */
	int fd = openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	ssize_t n = fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)
	                    ? read(fd, buf, sizeof(buf) - 1)
	                    : -1;

	if (fd >= 0)
		close(fd);
	if (n > 0) {
		buf[n] = '\0';
		if (sscanf(buf, "%d %llu", &pid, &start) != 2)
			pid = 0;
	}
	/* through a pidfd, the start time checked after it is open: a pid recycled between the
	 * check and the signal is not signalled */
	int pfd = pid > 1 && start != 0 ? (int)syscall(SYS_pidfd_open, pid, 0) : -1;
	bool same = pfd >= 0 && rundir_starttime(pid) == start && is_worker(d, pid);
	bool sent = same && syscall(SYS_pidfd_send_signal, pfd, SIGKILL, NULL, 0) == 0;
	if (pfd >= 0)
		close(pfd);
	if (sent) {
		uint64_t t0 = orch_mono_ms();
		while (rundir_starttime(pid) == start && orch_mono_ms() - t0 < KILL_WAIT_MS)
			nanosleep(&(struct timespec){0, 5000000}, NULL);
		orch_log(ORCH_LOG_WARNING, "left_over_worker_killed", "pidfile=%s pid=%d gone=%s",
		         name, pid, rundir_starttime(pid) == start ? "no" : "yes");
		(*killed)++;
	}
	unlinkat(dir, name, 0);
}

static bool
has_suffix(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Left-over workers first (they hold the sockets), then the socket files. */
static void
sweep(struct orchd *d, int dirfd)
{
	uint32_t killed = 0, removed = 0;
	struct dirent *e;
	DIR *dir;

	for (int pass = 0; pass < 2; pass++) {
		int fd = dup(dirfd);
		if (fd < 0 || (dir = fdopendir(fd)) == NULL) {
			if (fd >= 0)
				close(fd);
			return;
		}
		rewinddir(dir);
		while ((e = readdir(dir)) != NULL) {
			struct stat st;
			if (strncmp(e->d_name, "worker-", 7) != 0)
				continue;
			if (pass == 0 && has_suffix(e->d_name, ".pid"))
				kill_left_over(d, dirfd, e->d_name, &killed);
			else if (pass == 1 &&
			         (has_suffix(e->d_name, ".sock") ||
			          has_suffix(e->d_name, ".debug") ||
			          has_suffix(e->d_name, ".debug.ctl")) &&
			         fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			         S_ISSOCK(st.st_mode) && unlinkat(dirfd, e->d_name, 0) == 0)
				removed++;
		}
		closedir(dir);
	}
	if (killed || removed)
		orch_log(ORCH_LOG_INFO, "runtime_dir_swept",
		         "dir=%s workers_killed=%u sockets_removed=%u", d->cfg.runtime_dir, killed,
		         removed);
}

/*
 * Whether @dir's parent lets others replace @dir: writable by everyone and not
 * sticky (/tmp is sticky: only a file's owner may rename or remove it there).
 */
static bool
parent_unsafe(const char *dir, char *parent, size_t n)
{
	struct stat st;

	snprintf(parent, n, "%s", dir);
	size_t len = strlen(parent);
	while (len > 1 && parent[len - 1] == '/') /* "a/b/" is a/b */
		parent[--len] = '\0';
	char *slash = strrchr(parent, '/');
	if (slash == NULL)
		snprintf(parent, n, ".");
	else if (slash == parent)
		parent[1] = '\0'; /* "/run" -> "/" */
	else
		*slash = '\0';
	return stat(parent, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX);
}

orch_err
rundir_claim(struct orchd *d, struct orch_errinfo *reterr)
{
	const char *dir = d->cfg.runtime_dir;
	char parent[PATH_MAX];
	struct stat lst;
	int dirfd, fd;

	if (parent_unsafe(dir, parent, sizeof(parent)))
		return orch_errf(reterr, ORCH_EIO,
		                 "runtime directory %s: its parent %s is writable by everyone "
		                 "and not sticky, so anyone could replace it: choose a directory "
		                 "under one only you can write",
		                 dir, parent);
	if ((mkdir(dir, 0750) != 0 && errno != EEXIST) ||
	    (dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
		int err = errno;
		if ((err == ELOOP || err == ENOTDIR) && lstat(dir, &lst) == 0 &&
		    S_ISLNK(lst.st_mode))
			return orch_errf(reterr, ORCH_EIO,
			                 "runtime directory %s is a symbolic link: give the "
			                 "directory's own path (orchd follows no link there, so "
			                 "none can send its pidfiles and sockets elsewhere)",
			                 dir);
		return orch_errf(reterr, ORCH_EIO, "runtime directory %s: %s%s", dir, strerror(err),
		                 err == EACCES || err == EPERM || err == EROFS
		                         ? " (run orchd as root, or give it a directory of yours "
		                           "with --runtime-dir DIR or runtime_dir in [server])"
		                         : "");
	}
	/* only ours: whoever else can write it could plant pidfiles (which orchd kills),
	 * the state file or the admin socket (a /tmp/orchd-UID made first by another user) */
	struct stat st;
	if (fstat(dirfd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
		close(dirfd);
		return orch_errf(
		        reterr, ORCH_EIO,
		        "runtime directory %s is not orchd's own (owner uid %u, mode %03o: "
		        "it must be owned by uid %u and writable by nobody else)",
		        dir, (unsigned)st.st_uid, (unsigned)(st.st_mode & 0777),
		        (unsigned)geteuid());
	}
	if ((fd = openat(dirfd, "orchd.lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640)) <
	    0) {
		int err = errno;
		close(dirfd);
		return orch_errf(reterr, ORCH_EIO, "runtime directory %s: orchd.lock: %s", dir,
		                 strerror(err));
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = errno;
		close(fd);
		close(dirfd);
		if (err == EWOULDBLOCK)
			return orch_errf(
			        reterr, ORCH_EIO,
			        "runtime directory %s is in use by another orchd (it holds "
			        "orchd.lock there): give each orchd its own runtime_dir",
			        dir);
		return orch_errf(reterr, ORCH_EIO, "runtime directory %s: lock: %s", dir,
		                 strerror(err));
	}
	d->rundir_lock = fd + 1;
	sweep(d, dirfd);
	close(dirfd);
	return ORCH_OK;
}

void
rundir_release(struct orchd *d)
{
	if (d->rundir_lock > 0)
		close(d->rundir_lock - 1); /* the lock goes with it; the file stays */
	d->rundir_lock = 0;
}
