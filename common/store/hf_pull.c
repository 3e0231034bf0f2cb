/*
 * hf_pull.c - pulling a Hugging Face reference into the store with libcurl (hf.h).
 *
 * Per file: the blob's lock is taken (a second pull of the same file waits here and then
 * finds it in place); the partial file is hashed as far as it goes; the transfer asks for
 * the rest (Range) and hashes what arrives; an interrupted transfer is asked again from
 * where it stopped, up to opts.retries times; at the end the size and SHA-256 must be the
 * listing's, else the partial is removed. Then it is synced and renamed into place, and the
 * digest cache written beside it (filehash.h), so the worker never hashes it again.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/filehash.h"
#include "base/sbuf.h"
#include "base/sha256.h"
#include "hf.h"

#define LISTING_MAX    (16u << 20)
#define ERROR_BODY_MAX 4096
#define MAX_FILES      64

/* One HTTP exchange's outcome. */
struct xfer {
	CURL *curl;
	long status;
	char error_code[64]; /* X-Error-Code */
	char commit[64];     /* X-Repo-Commit */
	char link[1400];     /* Link (a listing's next page) */
	struct sbuf body;    /* a listing, or an error's text */
	size_t body_max;
	/* a download: appended to @fd from @offset on, hashed */
	int fd;
	uint64_t offset, got;
	struct sha256 hash;
	bool too_much; /* the server sent more than the listed size */
	int write_errno;
	const struct hf_opts *o;
	struct hf_progress *prog;
	uint64_t last_ms;
};

static const char *
endpoint(const struct hf_opts *o)
{
	const char *e = o->endpoint ? o->endpoint : getenv("HF_ENDPOINT");

	return e && e[0] ? e : HF_DEFAULT_ENDPOINT;
}

static size_t
on_header(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * n;
	static const struct {
		const char *name;
		size_t off, cap;
	} keep[] = {{"x-error-code:", offsetof(struct xfer, error_code), 64},
	            {"x-repo-commit:", offsetof(struct xfer, commit), 64},
	            {"link:", offsetof(struct xfer, link), 1400}};

	if (len > 5 && strncmp(p, "HTTP/", 5) == 0) { /* a new response (after a redirect) */
		x->error_code[0] = '\0';
		return len;
	}
	for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++) {
		size_t kn = strlen(keep[k].name);
		if (len <= kn || strncasecmp(p, keep[k].name, kn) != 0)
			continue;
		const char *v = p + kn;
		size_t vn = len - kn;
		while (vn > 0 && (*v == ' ' || *v == '\t'))
			v++, vn--;
		while (vn > 0 && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
			vn--;
		snprintf((char *)x + keep[k].off, keep[k].cap, "%.*s", (int)vn, v);
	}
	return len;
}

/* Progress at most every 200 ms (fetch_all reports the end of a file). */
static void
report(struct xfer *x)
{
	uint64_t now = orch_mono_ms();

	if (x->o->progress == NULL || x->prog == NULL || now - x->last_ms < 200)
		return;
	x->last_ms = now;
	x->o->progress(x->o->progress_ctx, x->prog);
}

static size_t
on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct xfer *x = ctx;
	size_t len = size * n;

	if (x->o->stop != NULL && atomic_load(x->o->stop))
		return 0; /* the transfer ends here; fetch_rest says why */
	/* the status of the response this body belongs to (the last, after redirects) */
	curl_easy_getinfo(x->curl, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->fd < 0 || (x->status != 200 && x->status != 206)) { /* a listing, or an error */
		if (x->body.n + len > x->body_max)
			return 0;
		sbuf_put(&x->body, p, len);
		return x->body.oom ? 0 : len;
	}
	if (x->offset + x->got + len > x->prog->total) { /* never more than the listing says */
		x->too_much = true;
		return 0;
	}
	for (size_t w = 0; w < len;) {
		ssize_t k = write(x->fd, p + w, len - w);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			x->write_errno = k < 0 ? errno : ENOSPC;
			return 0;
		}
		w += (size_t)k;
	}
	sha256_update(&x->hash, p, len);
	x->got += len;
	x->prog->done += len;
	report(x);
	return len;
}

/* A handle for @url with the options every request has; NULL when out of memory. */
static CURL *
handle(struct xfer *x, const char *url, struct curl_slist **hdrs)
{
	CURL *c = curl_easy_init();
	char auth[600];

	if (c == NULL)
		return NULL;
	x->curl = c;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt(c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https"); /* a redirect to file: is not */
	curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	/* the token is the hub's: curl does not send it on to another host (the content one) */
	curl_easy_setopt(c, CURLOPT_UNRESTRICTED_AUTH, 0L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "orch/" ORCH_STORE_VERSION);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 30L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a stalled transfer: 60 s of nothing */
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 60L);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, x);
	*hdrs = NULL;
	if (x->o->token && x->o->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", x->o->token);
		*hdrs = curl_slist_append(NULL, auth);
		curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	}
	return c;
}

/* The server's words in an error body ({"error": "..."} or text), for a message. */
static void
server_said(const struct xfer *x, char *buf, size_t n)
{
	cJSON *o = x->body.p ? cJSON_ParseWithLength(x->body.p, x->body.n) : NULL;
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "error");

	snprintf(buf, n, "%.300s", cJSON_IsString(e) ? e->valuestring : x->body.p ? x->body.p : "");
	for (char *p = buf; *p; p++) /* a server's bytes on a terminal: no control sequences */
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	cJSON_Delete(o);
}

/* An HTTP error status as the error hf_pull returns, saying what to do. */
static orch_err
http_error(const struct hf_ref *r, const struct xfer *x, const char *what,
           struct orch_errinfo *reterr)
{
	char said[320];

	server_said(x, said, sizeof(said));
	if (x->status == 401 && strcmp(x->error_code, "RepoNotFound") == 0) /* the hub's way */
		return orch_errf(
		        reterr, ORCH_ENOTFOUND,
		        "%s: no such repository, or a private one (HTTP 401%s%s): check the "
		        "name, or set HF_TOKEN to a token that may read it",
		        what, said[0] ? ": " : "", said);
	if (x->status == 401 || x->status == 403)
		return orch_errf(
		        reterr, ORCH_EUNAUTHORIZED, "%s is gated or private (HTTP %ld%s%s): %s; %s",
		        r->repo, x->status, said[0] ? ": " : "", said,
		        x->o->token && x->o->token[0]
		                ? "the token given may not read it (accept the model's terms "
		                  "on its page with that account)"
		                : "a token that may read it is needed (HF_TOKEN or orchctl's "
		                  "--token-file; for orchd's own pulls, [server] hf_token_file)",
		        what);
	if (x->status == 404) {
		const char *ec = x->error_code;
		return orch_errf(reterr, ORCH_ENOTFOUND, "%s: %s%s%s", what,
		                 strcmp(ec, "RepoNotFound") == 0       ? "no such repository"
		                 : strcmp(ec, "RevisionNotFound") == 0 ? "no such revision"
		                 : strcmp(ec, "EntryNotFound") == 0    ? "no such file"
		                                                       : "not found (HTTP 404)",
		                 said[0] ? ": " : "", said);
	}
	return orch_errf(reterr, ORCH_EIO, "%s: HTTP %ld%s%s", what, x->status, said[0] ? ": " : "",
	                 said);
}

/*
 * The next page's URL in a Link header (<URL>; rel="next") into @buf; false when there is none,
 * or it leaves the endpoint @base (the token goes with every listing request).
 */
static bool
next_page(const char *link, const char *base, char *buf, size_t n)
{
	const char *rel = strstr(link, "rel=\"next\"");
	const char *lt, *gt;

	if (rel == NULL)
		return false;
	for (lt = rel; lt > link && *lt != '<'; lt--)
		;
	if (*lt != '<' || (gt = strchr(lt, '>')) == NULL || gt > rel)
		return false;
	size_t len = (size_t)(gt - lt - 1), bn = strlen(base);
	if (len >= n || len <= bn || strncmp(lt + 1, base, bn) != 0 || lt[1 + bn] != '/')
		return false;
	memcpy(buf, lt + 1, len);
	buf[len] = '\0';
	return true;
}

/* One page of a listing at @url into @x; ORCH_OK with the body, else why not. */
static orch_err
listing_page(const struct hf_ref *r, struct xfer *x, const char *url, const char *what,
             struct orch_errinfo *reterr)
{
	struct curl_slist *h;
	CURL *c;
	CURLcode cc;

	if ((c = handle(x, url, &h)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	x->body.n = 0;
	x->link[0] = '\0';
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	if (cc == CURLE_WRITE_ERROR && x->body.n + CURL_MAX_WRITE_SIZE > x->body_max)
		return orch_errf(reterr, ORCH_EIO, "%s: the listing is larger than %u MiB", what,
		                 LISTING_MAX >> 20);
	if (cc != CURLE_OK && x->status < 400)
		return orch_errf(reterr, ORCH_EIO, "%s: %s (is the network or HF_ENDPOINT right?)",
		                 what, curl_easy_strerror(cc));
	if (x->status != 200)
		return http_error(r, x, what, reterr);
	return ORCH_OK;
}

/* The repository's listing at @r's revision, every page of it, into *@ret (cJSON_Delete it). */
static orch_err
listing(const struct hf_ref *r, const struct hf_opts *o, cJSON **ret, struct orch_errinfo *reterr)
{
	char url[1400], what[400];
	struct xfer x = {.fd = -1, .o = o, .body_max = LISTING_MAX};
	cJSON *all = cJSON_CreateArray();
	orch_err rv = all ? ORCH_OK : orch_errf(reterr, ORCH_ENOMEM, "out of memory");

	snprintf(url, sizeof(url), "%s/api/models/%s/tree/%s?recursive=true", endpoint(o), r->repo,
	         r->rev);
	snprintf(what, sizeof(what), "listing %s at %s (%s)", r->repo, r->rev, endpoint(o));
	for (uint32_t page = 0; rv == ORCH_OK; page++) {
		cJSON *part = NULL, *it;
		if (page == 100) {
			rv = orch_errf(reterr, ORCH_EIO, "%s: more than 100 pages", what);
			break;
		}
		if ((rv = listing_page(r, &x, url, what, reterr)) != ORCH_OK)
			break;
		part = cJSON_ParseWithLength(x.body.p ? x.body.p : "", x.body.n);
		if (!cJSON_IsArray(part)) {
			cJSON_Delete(part);
			rv = orch_errf(reterr, ORCH_EIO, "%s: the answer is not a file listing",
			               what);
			break;
		}
		while ((it = cJSON_DetachItemFromArray(part, 0)) != NULL)
			cJSON_AddItemToArray(all, it);
		cJSON_Delete(part);
		if (!next_page(x.link, endpoint(o), url, sizeof(url)))
			break;
	}
	sbuf_fini(&x.body);
	if (rv != ORCH_OK) {
		cJSON_Delete(all);
		return rv;
	}
	*ret = all;
	return ORCH_OK;
}

/* Room on @dir's file system for @need more bytes. */
static orch_err
space_ok(const char *dir, uint64_t need, struct orch_errinfo *reterr)
{
	struct statvfs v;

	if (need == 0 || statvfs(dir, &v) != 0)
		return ORCH_OK; /* a write that fails will say so */
	uint64_t avail = (uint64_t)v.f_bavail * v.f_frsize;
	if (avail >= need)
		return ORCH_OK;
	return orch_errf(reterr, ORCH_ERANGE,
	                 "not enough disk space in %s: the download needs %.1f MiB, %.1f MiB are "
	                 "free (%llu and %llu bytes)",
	                 dir, (double)need / (1u << 20), (double)avail / (1u << 20),
	                 (unsigned long long)need, (unsigned long long)avail);
}

/* Hash the first @n bytes of @fd (a partial download) into @h. */
static bool
hash_prefix(int fd, uint64_t n, struct sha256 *h)
{
	static char buf[1 << 16];

	sha256_init(h);
	if (lseek(fd, 0, SEEK_SET) != 0)
		return false;
	while (n > 0) {
		ssize_t k = read(fd, buf, n < sizeof(buf) ? (size_t)n : sizeof(buf));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		sha256_update(h, buf, (size_t)k);
		n -= (uint64_t)k;
	}
	return true;
}

/* The partial of @f, synced and renamed into place, its digest cache beside it. */
static orch_err
finish_blob(const struct store *s, const struct hf_file *f, int fd, const char *part,
            struct orch_errinfo *reterr)
{
	char blob[PATH_MAX];
	struct filehash_stamp st;
	enum filehash_where where;
	orch_err rv = store_blob_path(s, f->sha256, "", blob, sizeof(blob), reterr);

	if (rv != ORCH_OK)
		return rv;
	if (fsync(fd) != 0 || rename(part, blob) != 0)
		return orch_errf(reterr, ORCH_EIO, "%s: cannot move into place: %s", blob,
		                 strerror(errno));
	if (filehash_stat(blob, &st, NULL) == ORCH_OK)
		filehash_store(blob, NULL, true, &st, f->sha256, &where, NULL);
	return ORCH_OK;
}

/* One transfer of @url into @x (appending from x->offset). CURLE_OK or why it stopped. */
static CURLcode
transfer(struct xfer *x, const char *url)
{
	struct curl_slist *h;
	CURL *c = handle(x, url, &h);
	CURLcode cc;

	if (c == NULL)
		return CURLE_OUT_OF_MEMORY;
	x->status = 0;
	x->body.n = 0;
	x->error_code[0] = '\0';
	if (x->offset > 0)
		curl_easy_setopt(c, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)x->offset);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x->status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	return cc;
}

/* The URL of @path in @r's repository at its revision (spaces escaped). */
static void
resolve_url(const struct hf_ref *r, const struct hf_opts *o, const char *path, char *buf, size_t n)
{
	size_t at = (size_t)snprintf(buf, n, "%s/%s/resolve/%s/", endpoint(o), r->repo, r->rev);

	for (const char *p = path; *p && at + 4 < n; p++)
		at += (size_t)(*p == ' ' ? snprintf(buf + at, n - at, "%%20")
		                         : snprintf(buf + at, n - at, "%c", *p));
}

/* Bytes of @f the store has in a partial download (0: none). */
static uint64_t
partial_size(const struct store *s, const struct hf_file *f)
{
	char p[PATH_MAX];
	struct stat st;

	if (store_blob_path(s, f->sha256, ".partial", p, sizeof(p), NULL) != ORCH_OK ||
	    stat(p, &st) != 0 || (uint64_t)st.st_size > f->size)
		return 0;
	return (uint64_t)st.st_size;
}

/* Wait before try @k again: 0.5 s, 1 s, 2 s, then 4 s. */
static void
backoff(uint32_t k)
{
	uint64_t ms = 500ull << (k < 3 ? k : 3);
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

/* Whether a transfer that ended with @cc may go on from where it stopped. */
static bool
transient(CURLcode cc)
{
	switch (cc) {
	case CURLE_OK: /* a body shorter than the file: the connection closed early */
	case CURLE_PARTIAL_FILE:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_COULDNT_CONNECT:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_RANGE_ERROR:
		return true;
	default:
		return false;
	}
}

/* Start @x's file again from its first byte (a server that does not take Range). */
static bool
start_over(struct xfer *x)
{
	if (ftruncate(x->fd, 0) != 0 || lseek(x->fd, 0, SEEK_SET) != 0)
		return false;
	sha256_init(&x->hash);
	x->offset = 0;
	x->prog->done = x->prog->resumed_from = 0;
	return true;
}

/* Transfers into @x until @f is whole, or an error that retrying cannot help. */
static orch_err
fetch_rest(const struct hf_ref *r, const struct hf_file *f, struct xfer *x, const char *url,
           struct orch_errinfo *reterr)
{
	uint32_t tries = x->o->retries ? x->o->retries : 5;
	unsigned long long size = f->size;
	char what[800];

	snprintf(what, sizeof(what), "%s in %s", f->path, r->repo);
	for (uint32_t k = 0; x->offset < f->size; k++) {
		CURLcode cc = transfer(x, url);
		x->offset += x->got;
		x->got = 0;
		if (x->o->stop != NULL && atomic_load(x->o->stop))
			return orch_errf(reterr, ORCH_ECANCELLED,
			                 "%s: the pull was stopped (%llu of %llu bytes are kept)",
			                 what, (unsigned long long)x->offset, size);
		if (x->write_errno)
			return orch_errf(
			        reterr, ORCH_EIO,
			        "%s: cannot write to the model store: %s (%llu of %llu bytes "
			        "are kept: free space, then pull again to resume)",
			        what, strerror(x->write_errno), (unsigned long long)x->offset,
			        size);
		if (x->too_much) {
			start_over(x);
			return orch_errf(
			        reterr, ORCH_EIO,
			        "%s: the server sent more than the %llu bytes listed; what "
			        "arrived was removed",
			        what, size);
		}
		if (x->status == 416 && x->offset < f->size) /* the server's file is shorter */
			return orch_errf(reterr, ORCH_EIO,
			                 "%s: the server has fewer than the %llu "
			                 "bytes listed",
			                 what, size);
		if (x->status >= 400)
			return http_error(r, x, what, reterr);
		if (cc == CURLE_OK && x->offset == f->size)
			break;
		if (!transient(cc))
			return orch_errf(reterr, ORCH_EIO, "%s: %s", what, curl_easy_strerror(cc));
		if (cc == CURLE_RANGE_ERROR && !start_over(x)) /* Range not taken: from 0 */
			return orch_errf(reterr, ORCH_EIO, "%s: %s", what, strerror(errno));
		if (k + 1 >= tries)
			return orch_errf(
			        reterr, ORCH_EIO,
			        "%s: the transfer stopped %u times (%s); %llu of %llu bytes "
			        "are kept: pull again to resume",
			        what, tries,
			        cc == CURLE_OK ? "the server closed the connection early"
			                       : curl_easy_strerror(cc),
			        (unsigned long long)x->offset, size);
		backoff(k);
	}
	return ORCH_OK;
}

/* @f into the store (its lock held): resumed from its partial file, checked, moved in place. */
static orch_err
download(struct store *s, const struct hf_ref *r, const struct hf_opts *o, const struct hf_file *f,
         struct hf_progress *prog, struct orch_errinfo *reterr)
{
	char part[PATH_MAX], url[1400], got[SHA256_HEX];
	struct xfer x = {.o = o, .prog = prog, .body_max = ERROR_BODY_MAX, .fd = -1};
	uint8_t d[SHA256_BYTES];
	struct stat st;
	orch_err rv = store_blob_path(s, f->sha256, ".partial", part, sizeof(part), reterr);

	if (rv != ORCH_OK)
		return rv;
	if ((x.fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644)) < 0 ||
	    fstat(x.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: %s", part, strerror(errno));
		goto out;
	}
	x.offset = (uint64_t)st.st_size <= f->size ? (uint64_t)st.st_size : 0;
	if ((x.offset == 0 && ftruncate(x.fd, 0) != 0) || !hash_prefix(x.fd, x.offset, &x.hash) ||
	    lseek(x.fd, (off_t)x.offset, SEEK_SET) != (off_t)x.offset) {
		rv = orch_errf(reterr, ORCH_EIO, "%s: %s", part, strerror(errno));
		goto out;
	}
	prog->done = prog->resumed_from = x.offset;
	prog->total = f->size;
	resolve_url(r, o, f->path, url, sizeof(url));
	if ((rv = space_ok(store_dir(s), f->size - x.offset, reterr)) != ORCH_OK ||
	    (rv = fetch_rest(r, f, &x, url, reterr)) != ORCH_OK)
		goto out;
	sha256_final(&x.hash, d);
	sha256_hex(d, got);
	if (x.offset != f->size || strcmp(got, f->sha256) != 0) {
		unlink(part);
		rv = orch_errf(
		        reterr, ORCH_EIO,
		        "%s in %s: the download is not the file listed (%llu bytes, SHA-256 "
		        "%.16s..., where the listing says %llu bytes, %.16s...); it was removed",
		        f->path, r->repo, (unsigned long long)x.offset, got,
		        (unsigned long long)f->size, f->sha256);
		goto out;
	}
	rv = finish_blob(s, f, x.fd, part, reterr);
out:
	if (x.fd >= 0)
		close(x.fd);
	sbuf_fini(&x.body);
	return rv;
}

/* Whether @s is a commit id: 40 (or 64) lowercase hex digits. */
static bool
commit_ok(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return (n == 40 || n == 64) && s[n] == '\0';
}

/* The commit @r's revision is at, from resolve's headers for @f (and a check of access). */
static orch_err
head_commit(const struct hf_ref *r, const struct hf_opts *o, const struct hf_file *f,
            char commit[64], struct orch_errinfo *reterr)
{
	char url[1400], what[800];
	struct xfer x = {.fd = -1, .o = o, .body_max = ERROR_BODY_MAX};
	struct curl_slist *h;
	CURL *c;

	resolve_url(r, o, f->path, url, sizeof(url));
	snprintf(what, sizeof(what), "%s in %s", f->path, r->repo);
	if ((c = handle(&x, url, &h)) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L); /* the hub's answer has the commit */
	CURLcode cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &x.status);
	curl_easy_cleanup(c);
	curl_slist_free_all(h);
	orch_err rv = ORCH_OK;
	if (cc != CURLE_OK)
		rv = orch_errf(reterr, ORCH_EIO, "%s: %s (is the network or HF_ENDPOINT right?)",
		               what, curl_easy_strerror(cc));
	else if (x.status >= 400)
		rv = http_error(r, &x, what, reterr);
	else if (x.commit[0] && !commit_ok(x.commit))
		rv = orch_errf(reterr, ORCH_EIO, "%s: the server sent an invalid commit id", what);
	snprintf(commit, 64, "%s", rv == ORCH_OK ? x.commit : "");
	sbuf_fini(&x.body);
	return rv;
}

/* Each of @files (@n) present in @s, each under its blob's lock. */
static orch_err
fetch_all(struct store *s, const struct hf_ref *r, const struct hf_opts *o,
          const struct hf_file *files, uint32_t n, char commit[64], struct orch_errinfo *reterr)
{
	uint64_t need = 0;
	orch_err rv;

	for (uint32_t i = 0; i < n; i++)
		if (!store_has_blob(s, files[i].sha256, files[i].size))
			need += files[i].size - partial_size(s, &files[i]);
	if ((rv = space_ok(store_dir(s), need, reterr)) != ORCH_OK ||
	    (rv = head_commit(r, o, &files[0], commit, reterr)) != ORCH_OK)
		return rv;
	struct hf_ref at = *r; /* every file from that commit, should the branch move meanwhile */
	if (commit[0])
		snprintf(at.rev, sizeof(at.rev), "%s", commit);
	for (uint32_t i = 0; i < n; i++) {
		const struct hf_file *f = &files[i];
		struct hf_progress p = {
		        .path = f->path, .index = i, .n_files = n, .total = f->size};
		int fd = -1;
		if ((rv = store_lock_blob(s, f->sha256, &fd, reterr)) != ORCH_OK)
			return rv;
		if (!store_has_blob(s, f->sha256, f->size)) /* else another pull got it meanwhile */
			rv = download(s, &at, o, f, &p, reterr);
		store_unlock(fd);
		if (rv != ORCH_OK)
			return rv;
		p.done = p.total;
		p.finished = true;
		if (o->progress)
			o->progress(o->progress_ctx, &p);
	}
	return ORCH_OK;
}

/* The entry for @r's @files (@n) at @commit into *@en; false when out of memory. */
static bool
make_entry(const struct hf_ref *r, const struct hf_file *files, uint32_t n, const char *commit,
           struct store_entry *en)
{
	memset(en, 0, sizeof(*en));
	en->ref = orch_strndup(r->canon, strlen(r->canon));
	en->repo = orch_strndup(r->repo, strlen(r->repo));
	en->revision = orch_strndup(r->rev, strlen(r->rev));
	en->commit = orch_strndup(commit, strlen(commit));
	en->pulled_unix = (int64_t)time(NULL);
	if (!en->ref || !en->repo || !en->revision || !en->commit ||
	    (en->files = orch_calloc(n, sizeof(*en->files))) == NULL)
		return false;
	for (; en->n_files < n; en->n_files++) {
		struct store_file *f = &en->files[en->n_files];
		if ((f->path = orch_strndup(files[en->n_files].path,
		                            strlen(files[en->n_files].path))) == NULL)
			return false;
		memcpy(f->sha256, files[en->n_files].sha256, SHA256_HEX);
		f->size = files[en->n_files].size;
	}
	return true;
}

orch_err
hf_pull(struct store *s, const struct hf_ref *r, const struct hf_opts *o, struct store_entry *ret,
        struct orch_errinfo *reterr)
{
	static bool curl_ready;
	struct hf_file *files = NULL;
	char commit[64] = "";
	cJSON *tree = NULL;
	uint32_t n = 0;
	orch_err rv;

	memset(ret, 0, sizeof(*ret));
	if (o->offline) {
		rv = store_find(s, r->canon, ret, reterr);
		for (uint32_t i = 0; rv == ORCH_OK && i < ret->n_files; i++)
			if (!store_has_blob(s, ret->files[i].sha256, ret->files[i].size))
				rv = orch_errf(reterr, ORCH_ENOTFOUND, "%s: its file %s is gone",
				               r->canon, ret->files[i].path);
		if (rv == ORCH_ENOTFOUND && reterr != NULL)
			orch_errf(reterr, rv,
			          "%.300s; offline nothing is fetched: pull without --offline, and "
			          "with HF_HUB_OFFLINE unset",
			          reterr->msg);
		if (rv != ORCH_OK)
			store_entry_fini(ret);
		return rv;
	}
	size_t tn = o->token ? strlen(o->token) : 0;
	for (size_t i = 0; i < tn; i++)
		if ((unsigned char)o->token[i] < 0x21 || (unsigned char)o->token[i] > 0x7e ||
		    tn > 512)
			return orch_errf(
			        reterr, ORCH_EINVAL,
			        "the token is not one: over 512 characters, or characters a "
			        "token does not have (spaces, line breaks)");
	if (!curl_ready && curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return orch_errf(reterr, ORCH_EIO, "libcurl cannot start");
	curl_ready = true;
	if ((files = orch_calloc(MAX_FILES, sizeof(*files))) == NULL)
		return orch_errf(reterr, ORCH_ENOMEM, "out of memory");
	if ((rv = listing(r, o, &tree, reterr)) == ORCH_OK)
		rv = hf_pick(r, tree, files, MAX_FILES, &n, reterr);
	/* twice at most: a file this pull found in place may be removed before its index
	 * entry is written (an 'orchctl rm' of another reference to it); it is fetched again */
	for (int attempt = 0; rv == ORCH_OK && attempt < 2; attempt++) {
		if ((rv = fetch_all(s, r, o, files, n, commit, reterr)) != ORCH_OK)
			break;
		if (!make_entry(r, files, n, commit, ret))
			rv = orch_errf(reterr, ORCH_ENOMEM, "out of memory");
		else
			rv = store_put(s, ret, reterr);
		if (rv == ORCH_OK)
			break;
		store_entry_fini(ret);
		if (rv != ORCH_ENOTFOUND)
			break;
		rv = attempt == 0 ? ORCH_OK : rv;
	}
	cJSON_Delete(tree);
	orch_free(files);
	return rv;
}
