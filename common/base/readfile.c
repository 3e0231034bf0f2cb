#include "readfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "sbuf.h"

FILE *
orch_open_regular(const char *path, struct orch_errinfo *reterr)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *fp = NULL;

	if (fd < 0) {
		orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		orch_errf(reterr, ORCH_EIO, "%s is not a regular file", path);
	else if (fcntl(fd, F_SETFL, 0) != 0 || (fp = fdopen(fd, "rb")) == NULL)
		orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
	if (fp == NULL)
		close(fd);
	return fp;
}

/* The rest of @fp (@path for messages; @own: ours to close) into *@ret. */
static orch_err
read_all(FILE *fp, bool own, const char *path, size_t max_bytes, char **ret, size_t *ret_n,
         struct orch_errinfo *reterr)
{
	struct sbuf b = {0};
	char chunk[65536];
	size_t k;
	orch_err rv = ORCH_OK;

	while ((k = fread(chunk, 1, sizeof(chunk), fp)) > 0) {
		if (b.n + k > max_bytes) {
			rv = orch_errf(reterr, ORCH_ERANGE, "%s: larger than %zu bytes", path,
			               max_bytes);
			break;
		}
		sbuf_put(&b, chunk, k);
	}
	if (rv == ORCH_OK && ferror(fp))
		rv = orch_errf(reterr, ORCH_EIO, "%s: read error", path);
	if (own)
		fclose(fp);
	if (rv == ORCH_OK && (*ret = sbuf_take(&b, ret_n)) == NULL)
		rv = orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", path);
	sbuf_fini(&b);
	return rv;
}

orch_err
orch_read_file(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
               struct orch_errinfo *reterr)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *fp = is_stdin ? stdin : fopen(path, "rb");

	if (fp == NULL)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
	return read_all(fp, !is_stdin, path, max_bytes, ret, ret_n, reterr);
}

orch_err
orch_read_regular(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
                  struct orch_errinfo *reterr)
{
	FILE *fp = orch_open_regular(path, reterr);

	if (fp == NULL)
		return ORCH_EIO;
	return read_all(fp, true, path, max_bytes, ret, ret_n, reterr);
}
