#pragma once
/*
 * readfile.h - read a whole file into memory, for inputs that are parsed as
 * a whole (JSON, templates, text to tokenize).
 */
#include <stddef.h>

#include "err.h"

/*
 * orch_read_file - the contents of @path ("-": standard input) into a new
 * NUL-terminated buffer *@ret (free with orch_free) of *@ret_n bytes.
 * ORCH_EIO with errno text, ORCH_ERANGE when larger than @max_bytes, ORCH_ENOMEM.
 */
orch_err orch_read_file(const char *path, size_t max_bytes, char **ret, size_t *ret_n,
                        struct orch_errinfo *reterr);
