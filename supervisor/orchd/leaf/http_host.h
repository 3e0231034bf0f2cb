#pragma once
/*
 * http_host.h - which Host values the public listener answers (issue 16):
 * a page a browser loaded from another name must not reach orchd by making
 * that name resolve to orchd's address (DNS rebinding), so a request naming
 * a host orchd does not call its own is refused (421) before any route.
 *
 * allowed_hosts (config) "" means the default for the listen address:
 * on loopback, localhost, 127.0.0.1, [::1] and the listen host; elsewhere,
 * localhost, the listen host (unless a wildcard) and any IP literal (a
 * literal cannot be rebound; a name can). "*" allows every Host. Otherwise a
 * list of names (reg-name, IPv4 or [IPv6]) separated by commas or spaces;
 * an entry with ":PORT" wants that port, one without takes any port (an SSH
 * tunnel changes it). Names compare without case. Pure: no libevent.
 * Thread: any (no shared state).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define HTTP_HOSTS_MAX     16
#define HTTP_HOST_NAME_MAX 256

struct http_hosts {
	bool any;         /* "*": no check */
	bool ip_literals; /* any IPv4 or [IPv6] literal */
	uint32_t n;
	struct {
		char name[HTTP_HOST_NAME_MAX]; /* lower case; [v6] keeps its brackets */
		int32_t port;                  /* -1: any */
	} v[HTTP_HOSTS_MAX];
};

/*
 * http_hosts_init - the allow-list of @allowed (the config's allowed_hosts)
 * for a listener on @listen ("HOST:PORT"). ORCH_EINVAL, naming the entry,
 * for a malformed entry or more than HTTP_HOSTS_MAX.
 */
orch_err http_hosts_init(struct http_hosts *h, const char *allowed, const char *listen,
                         struct orch_errinfo *reterr);

/*
 * http_hosts_check - a Host field's value (@n bytes, no surrounding
 * whitespace) against @h: ORCH_OK, ORCH_EINVAL when it is not a host[:port]
 * at all, ORCH_EMISDIRECTED when well formed but not allowed.
 */
orch_err http_hosts_check(const struct http_hosts *h, const char *value, size_t n);

/* http_hosts_loopback - whether @host ("127.0.0.1", "[::1]", "localhost") is a loopback name. */
bool http_hosts_loopback(const char *host);
