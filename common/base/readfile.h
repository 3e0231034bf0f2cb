#pragma once
/*
 * readfile.h - read a whole file into memory, for inputs that are parsed as
 * a whole (JSON, templates, text to tokenize).
 */
#include <stddef.h>
#include <stdio.h>

#include "err.h"

/*
 * orch_read_file - the contents of @path ("-": standard input) into a new
 * NUL-terminated buffer *@ret (free with orch_free) of *@ret_n bytes.
 * ORCH_EIO with errno text, ORCH_ERANGE when larger than @max_bytes, ORCH_ENOMEM.
 */
orch_err orch_read_file(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
                        struct orch_errinfo *reterr);

/*
 * orch_open_regular - open @path for reading without blocking on the open (a FIFO,
 * a device), and only when it is a regular file: a FILE (closed with fclose), or
 * NULL with ORCH_EIO in @reterr ("... is not a regular file", or errno's text).
 * For files a daemon reads while others wait (its config, its keys).
 */
FILE *orch_open_regular(const char *path, struct orch_errinfo *reterr);

/* orch_read_regular - orch_read_file of a file orch_open_regular opens. */
orch_err orch_read_regular(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
                           struct orch_errinfo *reterr);
