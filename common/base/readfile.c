#include "readfile.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "sbuf.h"

orch_err
orch_read_file(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
               struct orch_errinfo *reterr)
{
	bool is_stdin = strcmp(path, "-") == 0;
	FILE *fp = is_stdin ? stdin : fopen(path, "rb");
	struct sbuf b = {0};
	char chunk[65536];
	size_t k;
	orch_err rv = ORCH_OK;

	if (fp == NULL)
		return orch_errf(reterr, ORCH_EIO, "%s: %s", path, strerror(errno));
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
	if (!is_stdin)
		fclose(fp);
	if (rv == ORCH_OK && (*ret = sbuf_take(&b, ret_n)) == NULL)
		rv = orch_errf(reterr, ORCH_ENOMEM, "%s: out of memory", path);
	sbuf_fini(&b);
	return rv;
}
