/*
 * http_static.c - the chat page's files, compiled in (http_static.h): the
 * lookup, the conditional GET (If-None-Match), the fields that keep a
 * browser from sniffing or loading anything from elsewhere.
 */
#include "http_static.h"

#include <stdio.h>
#include <string.h>

#include "reply.h"

/*
 * What the page may do: load its own script, style and images, and call its
 * own origin (fetch); nothing inline, no frames, no forms elsewhere.
 */
static const char csp[] = "default-src 'none'; script-src 'self'; style-src 'self'; "
                          "img-src 'self'; connect-src 'self'; base-uri 'none'; "
                          "form-action 'none'; frame-ancestors 'none'";

/* The Content-Type of a file named @path, by its extension. */
static const char *
content_type(const char *path)
{
	static const struct {
		const char *ext, *type;
	} t[] = {{".html", "text/html; charset=utf-8"},
	         {".js", "text/javascript; charset=utf-8"},
	         {".css", "text/css; charset=utf-8"},
	         {".svg", "image/svg+xml"},
	         {".png", "image/png"}};
	const char *dot = strrchr(path, '.');

	for (size_t i = 0; dot != NULL && i < sizeof(t) / sizeof(t[0]); i++)
		if (strcmp(dot, t[i].ext) == 0)
			return t[i].type;
	return "application/octet-stream";
}

const struct http_static_file *
http_static_find(const char *path)
{
	if (strcmp(path, "/") == 0)
		path = "/index.html";
	for (size_t i = 0; i < http_static_n_files; i++)
		if (strcmp(path, http_static_files[i].path) == 0)
			return &http_static_files[i];
	return NULL;
}

bool
http_static_etag_match(const char *inm, const char *etag)
{
	size_t n = strlen(etag);

	while (inm != NULL && *inm != '\0') {
		inm += strspn(inm, " \t,");
		if (*inm == '*')
			return true;
		if (strncmp(inm, "W/", 2) == 0) /* a weak comparison, as for GET (RFC 9110) */
			inm += 2;
		size_t k = strcspn(inm, ",");
		while (k > 0 && (inm[k - 1] == ' ' || inm[k - 1] == '\t'))
			k--;
		if (k == n && strncmp(inm, etag, n) == 0)
			return true;
		inm += strcspn(inm, ",");
	}
	return false;
}

void
http_static_get(struct orchd *d, struct api_req *req, const char *arg)
{
	const struct http_static_file *f = http_static_find(req->path);

	(void)d;
	(void)arg;
	if (f == NULL)
		return reply_error(req, ORCH_EROUTE_NOT_FOUND, NULL,
		                   "no file %.64s in the chat page", req->path);
	reply_header(req, "ETag", f->etag);
	reply_header(req, "Cache-Control", "no-cache");
	reply_header(req, "X-Content-Type-Options", "nosniff");
	reply_header(req, "Content-Security-Policy", csp);
	reply_header(req, "Referrer-Policy", "no-referrer");
	if (http_static_etag_match(req->if_none_match, f->etag))
		return reply_send(req, 304, NULL, NULL, 0); /* no body, no type */
	reply_send(req, 200, content_type(f->path), (const char *)f->bytes, f->n);
}
