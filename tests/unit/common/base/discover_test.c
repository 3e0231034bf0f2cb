/*
 * discover_test - the discovery directory (base/discover.h): an entry added for
 * a socket that answers is listed, newest first; one whose socket does not
 * answer is not; one whose orchd is gone is removed by the listing; a removed
 * one is gone; a directory others can write is not used. Run as a user, with
 * XDG_RUNTIME_DIR pointing into a temporary directory; as root (/run/orch), the
 * entries are this process's pid and a pid that cannot run.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/discover.h"
#include "t.h"

static char tmp[] = "/tmp/discover_test.XXXXXX";

/* A listening unix socket at @path. */
static int
listener(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 4) != 0) {
		perror(path);
		abort();
	}
	return fd;
}

static size_t
listed(const char *path)
{
	char out[8][ORCH_DISCOVER_PATH_MAX];
	size_t n = orch_discover_list(out, 8), hits = 0;

	for (size_t i = 0; i < n; i++)
		hits += strcmp(out[i], path) == 0;
	return hits;
}

static void
test_add_list_remove(void)
{
	char live[256], dead[256], dir[400], link[600];
	pid_t gone = 0x3ffffff0; /* above pid_max: never a process */

	snprintf(live, sizeof(live), "%s/live.sock", tmp);
	snprintf(dead, sizeof(dead), "%s/dead.sock", tmp);
	int fd = listener(live);
	T_OK(orch_discover_add(live, getpid(), NULL));
	T_EQ(listed(live), 1);
	/* a socket nobody answers on is not listed; an orchd that is gone loses its entry */
	close(listener(dead));
	T_OK(orch_discover_add(dead, gone, NULL));
	T_EQ(listed(dead), 0);
	orch_discover_dir(dir, sizeof(dir));
	snprintf(link, sizeof(link), "%s/orchd-%d.sock", dir, (int)gone);
	T_TRUE(access(link, F_OK) != 0 && errno == ENOENT);
	orch_discover_remove(getpid());
	T_EQ(listed(live), 0);
	close(fd);
	unlink(live);
	unlink(dead);
}

/* A user's directory that others can write is not used (they could list their sockets). */
static void
test_foreign_dir(void)
{
	char dir[400];

	if (geteuid() == 0)
		return; /* root's is /run/orch, made 0700 */
	orch_discover_dir(dir, sizeof(dir));
	T_TRUE(chmod(dir, 0777) == 0);
	T_ERR(orch_discover_add("/x.sock", getpid(), NULL), ORCH_EIO);
	T_TRUE(chmod(dir, 0700) == 0);
}

int
main(void)
{
	char xdg[300];

	if (mkdtemp(tmp) == NULL || snprintf(xdg, sizeof(xdg), "%s/xdg", tmp) < 0 ||
	    mkdir(xdg, 0700) != 0) {
		perror(tmp);
		return 1;
	}
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	T_RUN(test_add_list_remove);
	T_RUN(test_foreign_dir);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmp);
	return t_done();
}
