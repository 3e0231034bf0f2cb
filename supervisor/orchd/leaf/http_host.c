/*
 * http_host.c - the Host allow-list (http_host.h): entries parsed once at
 * start, a request's Host split into name and port and compared.
 */
#include "http_host.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* reg-name (RFC 3986): unreserved, sub-delims and pct-encoded characters. */
static bool
reg_name_char(char c)
{
	return isalnum((unsigned char)c) || (c != '\0' && strchr("-._~!$&'()*+,;=%", c) != NULL);
}

/* A ":PORT" of 1-5 digits up to 65535 (@n bytes, colon included) into *@port. */
static bool
port_ok(const char *p, size_t n, int32_t *port)
{
	int32_t v = 0;

	if (n < 2 || n > 6 || p[0] != ':')
		return false;
	for (size_t i = 1; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return false;
		v = v * 10 + (p[i] - '0');
	}
	*port = v;
	return v <= 65535;
}

/* An IPv6 literal "[...]" of @n bytes. */
static bool
v6_literal(const char *p, size_t n)
{
	char tmp[64];
	struct in6_addr a;

	if (n < 3 || n - 2 >= sizeof(tmp) || p[0] != '[' || p[n - 1] != ']')
		return false;
	memcpy(tmp, p + 1, n - 2);
	tmp[n - 2] = '\0';
	return inet_pton(AF_INET6, tmp, &a) == 1;
}

/*
 * "host[:port]" (@n bytes) into @out (lower case, NUL-terminated, @cap
 * bytes) and *@port (-1 without one); false when it is not one.
 */
static bool
split(const char *p, size_t n, char *out, size_t cap, int32_t *port)
{
	bool v6 = n > 0 && p[0] == '[';
	const char *end = n == 0 ? NULL : memchr(p, v6 ? ']' : ':', n);
	size_t hn = end == NULL ? n : (size_t)(end - p) + v6;

	if (hn == 0 || hn >= cap || (v6 && (end == NULL || !v6_literal(p, hn))))
		return false;
	*port = -1;
	if (hn < n && !port_ok(p + hn, n - hn, port))
		return false;
	for (size_t i = 0; i < hn; i++) {
		if (!v6 && !reg_name_char(p[i]))
			return false;
		out[i] = (char)tolower((unsigned char)p[i]);
	}
	out[hn] = '\0';
	return true;
}

static bool
ip_literal(const char *name)
{
	struct in_addr a;

	return name[0] == '[' || inet_pton(AF_INET, name, &a) == 1;
}

bool
http_hosts_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	char tmp[64];
	size_t n = strlen(host);

	if (strcasecmp(host, "localhost") == 0)
		return true;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']' && n - 2 < sizeof(tmp)) {
		memcpy(tmp, host + 1, n - 2);
		tmp[n - 2] = '\0';
		host = tmp;
	}
	return inet_pton(AF_INET6, host, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static orch_err
add(struct http_hosts *h, const char *entry, size_t n, struct orch_errinfo *e)
{
	if (h->n == HTTP_HOSTS_MAX)
		return orch_errf(e, ORCH_EINVAL, "allowed_hosts: more than %d entries",
		                 HTTP_HOSTS_MAX);
	if (!split(entry, n, h->v[h->n].name, sizeof(h->v[0].name), &h->v[h->n].port))
		return orch_errf(e, ORCH_EINVAL,
		                 "allowed_hosts: '%.*s' is not a host name, IPv4 or [IPv6] address "
		                 "with an optional :PORT",
		                 (int)n, entry);
	h->n++;
	return ORCH_OK;
}

/* The default list for a listener on @listen. */
static orch_err
defaults(struct http_hosts *h, const char *listen, struct orch_errinfo *e)
{
	char host[HTTP_HOST_NAME_MAX];
	const char *colon = strrchr(listen, ':');
	size_t n = colon ? (size_t)(colon - listen) : strlen(listen);
	bool wild;

	snprintf(host, sizeof(host), "%.*s", (int)n, listen);
	wild = host[0] == '\0' || strcmp(host, "0.0.0.0") == 0 || strcmp(host, "[::]") == 0 ||
	       strcmp(host, "*") == 0;
	if (add(h, "localhost", 9, e) != ORCH_OK)
		return ORCH_EINVAL;
	if (http_hosts_loopback(host)) {
		if (add(h, "127.0.0.1", 9, e) != ORCH_OK || add(h, "[::1]", 5, e) != ORCH_OK)
			return ORCH_EINVAL;
	} else {
		h->ip_literals = true;
	}
	if (!wild && http_hosts_check(h, host, strlen(host)) != ORCH_OK)
		return add(h, host, strlen(host), e);
	return ORCH_OK;
}

orch_err
http_hosts_init(struct http_hosts *h, const char *allowed, const char *listen,
                struct orch_errinfo *reterr)
{
	static const char sep[] = ", \t";

	*h = (struct http_hosts){0};
	if (allowed[strspn(allowed, sep)] == '\0')
		return defaults(h, listen, reterr);
	for (const char *p = allowed + strspn(allowed, sep); *p; p += strspn(p, sep)) {
		size_t n = strcspn(p, sep);
		if (n == 1 && p[0] == '*')
			h->any = true;
		else if (add(h, p, n, reterr) != ORCH_OK)
			return ORCH_EINVAL;
		p += n;
	}
	return ORCH_OK;
}

orch_err
http_hosts_check(const struct http_hosts *h, const char *value, size_t n)
{
	char name[HTTP_HOST_NAME_MAX];
	int32_t port;

	if (!split(value, n, name, sizeof(name), &port))
		return ORCH_EINVAL;
	if (h->any || (h->ip_literals && ip_literal(name)))
		return ORCH_OK;
	for (uint32_t i = 0; i < h->n; i++)
		if (strcmp(name, h->v[i].name) == 0 && (h->v[i].port < 0 || h->v[i].port == port))
			return ORCH_OK;
	return ORCH_EMISDIRECTED;
}
