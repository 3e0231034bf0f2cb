#pragma once
/*
 * parse.h - strict parsing of numbers from command lines and config files.
 */
#include <stdint.h>

#include "err.h"

/*
 * orch_parse_u64 - the whole of @s as an unsigned decimal (or 0x hex)
 * integer in [@min, @max] into *@out. ORCH_EINVAL for empty text, a sign,
 * trailing characters or overflow; ORCH_ERANGE outside [@min, @max].
 * *@out is untouched on failure.
 */
orch_err orch_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
