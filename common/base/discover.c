/*
 * discover.c - the discovery directory of a user's orchds (discover.h).
 */
#include "base/discover.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

void
orch_discover_dir(char *out, size_t n)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");

	if (geteuid() == 0)
		snprintf(out, n, "/run/orch");
	else if (xdg != NULL && xdg[0] == '/')
		snprintf(out, n, "%.400s/orch", xdg);
	else
		snprintf(out, n, "/tmp/orch-%u", (unsigned)geteuid());
}

/* The directory, made if missing; false when it is not the user's own or others can write it. */
static bool
own_dir(const char *dir, bool make)
{
	struct stat st;

	if (make && mkdir(dir, 0700) != 0 && errno != EEXIST)
		return false;
	return lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       (st.st_mode & 022) == 0;
}

orch_err
orch_discover_add(const char *socket, pid_t pid, struct orch_errinfo *reterr)
{
	char dir[400], link[ORCH_DISCOVER_PATH_MAX], tmp[ORCH_DISCOVER_PATH_MAX + 8];
	char abs[ORCH_DISCOVER_PATH_MAX];

	orch_discover_dir(dir, sizeof(dir));
	if (!own_dir(dir, true))
		return orch_errf(reterr, ORCH_EIO,
		                 "discovery directory %s: cannot make it, or it is not this user's "
		                 "own (owned by this user, writable by nobody else)",
		                 dir);
	/* the socket's absolute path: orchctl may run elsewhere */
	if (socket[0] != '/') {
		char cwd[256];
		if (getcwd(cwd, sizeof(cwd)) == NULL)
			return orch_errf(reterr, ORCH_EIO, "getcwd: %s", strerror(errno));
		snprintf(abs, sizeof(abs), "%s/%s", cwd, socket);
	} else {
		snprintf(abs, sizeof(abs), "%s", socket);
	}
	snprintf(link, sizeof(link), "%s/orchd-%d.sock", dir, (int)pid);
	snprintf(tmp, sizeof(tmp), "%s.new", link);
	unlink(tmp);
	if (symlink(abs, tmp) != 0 || rename(tmp, link) != 0) {
		int err = errno;
		unlink(tmp);
		return orch_errf(reterr, ORCH_EIO, "discovery entry %s: %s", link, strerror(err));
	}
	return ORCH_OK;
}

void
orch_discover_remove(pid_t pid)
{
	char dir[400], link[ORCH_DISCOVER_PATH_MAX];

	orch_discover_dir(dir, sizeof(dir));
	snprintf(link, sizeof(link), "%s/orchd-%d.sock", dir, (int)pid);
	unlink(link);
}

bool
orch_discover_answers(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};

	if (strlen(path) >= sizeof(sa.sun_path))
		return false;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	bool ok = fd >= 0 &&
	          (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 || errno == EAGAIN);
	if (fd >= 0)
		close(fd);
	return ok;
}

size_t
orch_discover_list(char (*out)[ORCH_DISCOVER_PATH_MAX], size_t max)
{
	char dir[400];
	struct {
		char path[ORCH_DISCOVER_PATH_MAX];
		long long mtime;
	} found[64];
	size_t n = 0;
	DIR *d;
	struct dirent *e;

	orch_discover_dir(dir, sizeof(dir));
	if (!own_dir(dir, false) || (d = opendir(dir)) == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < 64) {
		int pid = 0;
		char link[ORCH_DISCOVER_PATH_MAX + 300], target[ORCH_DISCOVER_PATH_MAX];
		struct stat st;
		if (sscanf(e->d_name, "orchd-%d.sock", &pid) != 1 || pid <= 0 ||
		    strstr(e->d_name, ".new") != NULL)
			continue;
		snprintf(link, sizeof(link), "%s/%s", dir, e->d_name);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (kill(pid, 0) != 0 && errno == ESRCH) { /* its orchd is gone (kill -9) */
			unlink(link);
			continue;
		}
		if (k <= 0 || lstat(link, &st) != 0)
			continue;
		target[k] = '\0';
		if (!orch_discover_answers(target))
			continue;
		snprintf(found[n].path, sizeof(found[n].path), "%s", target);
		found[n++].mtime = (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	}
	closedir(d);
	size_t m = 0;
	while (m < max && m < n) { /* newest first: a selection, n is small */
		size_t best = m;
		for (size_t i = m + 1; i < n; i++)
			if (found[i].mtime > found[best].mtime)
				best = i;
		if (best != m) {
			char p[ORCH_DISCOVER_PATH_MAX];
			long long t = found[m].mtime;
			memcpy(p, found[m].path, sizeof(p));
			memcpy(found[m].path, found[best].path, sizeof(p));
			found[m].mtime = found[best].mtime;
			memcpy(found[best].path, p, sizeof(p));
			found[best].mtime = t;
		}
		memcpy(out[m], found[m].path, ORCH_DISCOVER_PATH_MAX);
		m++;
	}
	return m;
}
