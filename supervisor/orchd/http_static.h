#pragma once
/*
 * http_static.h - the chat page (issue 18): the files of
 * supervisor/orchd/web/, compiled into orchd at build time
 * (cmake/OrchEmbed.cmake), served at GET and HEAD / (index.html),
 * /chat.js, /chat.css and /favicon.svg without an API key (the page
 * asks for one and sends it with its API calls), when [server] chat_page
 * is on.
 *
 * Each answer carries its Content-Type, an ETag (a hash of the file),
 * Cache-Control: no-cache (a browser revalidates, and If-None-Match gets
 * 304 with no body while the file is the same), X-Content-Type-Options:
 * nosniff, and a Content-Security-Policy that lets the page load and call
 * only its own origin. Thread: the loop.
 */
#include <stdbool.h>
#include <stddef.h>

struct api_req;
struct orchd;

/* One compiled-in file: its URL path, @n bytes (and a NUL past them), its quoted ETag. */
struct http_static_file {
	const char *path;
	const unsigned char *bytes;
	size_t n;
	const char *etag;
};

/* http_static_files - the table the generated web_assets.c defines, http_static_n_files rows. */
extern const struct http_static_file http_static_files[];
extern const size_t http_static_n_files;

/*
 * http_static_find - the file served at @path ("/" is "/index.html"); NULL
 * when none is. Thread: any.
 */
const struct http_static_file *http_static_find(const char *path);

/*
 * http_static_etag_match - whether an If-None-Match value @inm (NULL: no
 * field) names @etag: "*", or a comma-separated list of entity tags, weak
 * (W/) or not. Thread: any.
 */
bool http_static_etag_match(const char *inm, const char *etag);

/*
 * http_static_get - a route's handler (route.h): @req's path as a file of
 * the table, 200 (HEAD: without the body) or 304; 404 NOT_FOUND for a path
 * that is not one.
 */
void http_static_get(struct orchd *d, struct api_req *req, const char *arg);
