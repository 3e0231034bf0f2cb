#include "parse.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>

orch_err
orch_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (s == NULL || !isdigit((unsigned char)s[0]))
		return ORCH_EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno != 0 || *end != '\0')
		return ORCH_EINVAL;
	if (v < min || v > max)
		return ORCH_ERANGE;
	*out = v;
	return ORCH_OK;
}

orch_err
orch_parse_double(const char *s, double min, double max, double *out)
{
	double v;
	char *end;

	if (s == NULL || !(isdigit((unsigned char)s[0]) || s[0] == '.'))
		return ORCH_EINVAL;
	for (const char *p = s; *p; p++) /* decimal only: strtod also takes hex, inf, nan */
		if (!isdigit((unsigned char)*p) && *p != '.' && *p != 'e' && *p != 'E' &&
		    *p != '-' && *p != '+')
			return ORCH_EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(v))
		return ORCH_EINVAL;
	if (v < min || v > max)
		return ORCH_ERANGE;
	*out = v;
	return ORCH_OK;
}

int
orch_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}
