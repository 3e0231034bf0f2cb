#pragma once
/*
 * parse.h - strict parsing of numbers from command lines and config files,
 * and the value of one hex digit (escapes: GBNF's, URIs').
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

/*
 * orch_parse_double - the whole of @s as a finite decimal number in [@min,
 * @max] into *@out ("0.9", "1", ".5", "1e-3"; no leading sign, no hex, no
 * inf or nan). ORCH_EINVAL for anything else, and for a number too large for
 * a double ("1e999"); ORCH_ERANGE outside [@min, @max]. *@out is untouched on
 * failure.
 */
orch_err orch_parse_double(const char *s, double min, double max, double *out);

/* orch_hex_digit - the value of the hex digit @c ('0'-'9', 'a'-'f', 'A'-'F'); -1 for another. */
int orch_hex_digit(char c);
