/*
 * request_deadline.c - X-Deadline's value to a time (request.h, issue 62).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "params.h"
#include "request.h"

/* @n decimal digits at @p into *@ret; false unless all are digits. */
static bool
digits(const char *p, int n, int *ret)
{
	int v = 0;

	for (int i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*ret = v;
	return true;
}

/* Days from 1970-01-01 to @y-@m-@d of the proleptic Gregorian calendar. */
static int64_t
days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static bool
leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* A fraction's first three digits at @p (after its '.') as milliseconds; *@end past it all. */
static bool
fraction_ms(const char *p, const char **end, int64_t *ret)
{
	int64_t ms = 0;
	int n = 0;

	for (; *p >= '0' && *p <= '9'; p++, n++)
		if (n < 3)
			ms = ms * 10 + (*p - '0');
	if (n == 0)
		return false;
	for (int k = n; k < 3; k++)
		ms *= 10;
	*ret = ms;
	*end = p;
	return true;
}

/* RFC 3339's date-time: 2026-12-03T10:00:00[.fff](Z|+hh:mm|-hh:mm). */
static bool
rfc3339(const char *v, uint64_t *ret)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, mo, d, h, mi, s, oh = 0, om = 0, sign = 0;
	int64_t ms = 0;
	const char *p = v + 19;

	if (strlen(v) < 20 || !digits(v, 4, &y) || v[4] != '-' || !digits(v + 5, 2, &mo) ||
	    v[7] != '-' || !digits(v + 8, 2, &d) || strchr("Tt ", v[10]) == NULL ||
	    !digits(v + 11, 2, &h) || v[13] != ':' || !digits(v + 14, 2, &mi) || v[16] != ':' ||
	    !digits(v + 17, 2, &s))
		return false;
	if (*p == '.' && !fraction_ms(p + 1, &p, &ms))
		return false;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		sign = *p == '+' ? 1 : -1;
		if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 ||
		    om > 59)
			return false;
		p += 6;
	} else {
		return false;
	}
	if (*p != '\0' || y < 1970 || mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && leap(y)) || h > 23 || mi > 59 || s > 60)
		return false;
	int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (s == 60 ? 59 : s) -
	            sign * (oh * 3600 + om * 60);
	if (t < 0)
		return false;
	*ret = (uint64_t)t * 1000 + (uint64_t)ms;
	return true;
}

/* Unix seconds, a fraction allowed: 1764756000 or 1764756000.25. */
static bool
unix_seconds(const char *v, uint64_t *ret)
{
	uint64_t s = 0;
	int64_t ms = 0;
	const char *p = v;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (s > 253402300799ull) /* past 9999-12-31 */
			return false;
		s = s * 10 + (uint64_t)(*p - '0');
	}
	if (p == v || s > 253402300799ull)
		return false;
	if (*p == '.' && !fraction_ms(p + 1, &p, &ms))
		return false;
	if (*p != '\0')
		return false;
	*ret = s * 1000 + (uint64_t)ms;
	return true;
}

bool
request_deadline_header(const char *v, uint64_t *ret_unix_ms, struct params_err *pe)
{
	if (unix_seconds(v, ret_unix_ms) || rfc3339(v, ret_unix_ms)) {
		if (*ret_unix_ms ==
		    0) /* 0 is "no deadline" to the job: the epoch is 1 ms past it */
			*ret_unix_ms = 1;
		return true;
	}
	return params_fail(pe, ORCH_EINVAL, "X-Deadline",
	                   "X-Deadline must be a time: RFC 3339 (2026-12-03T10:00:00Z, an "
	                   "offset or a fraction allowed) or Unix seconds (1764756000.5)");
}
