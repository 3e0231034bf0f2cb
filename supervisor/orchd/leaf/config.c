/*
 * config.c - the INI file and its keys. Parsing goes through one table of
 * [server] keys and one of model keys, so the documentation
 * (docs/configuration.md) and the code list the same names.
 */
#include "config.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

#include "base/alloc.h"
#include "base/limits.h"
#include "base/parse.h"
#include "base/readfile.h"
#include "http_cors.h"
#include "http_host.h"
#include "store/hf.h"

#define MIB (1024u * 1024u)

void
cfg_defaults(struct orchd_config *c)
{
	*c = (struct orchd_config){0};
	snprintf(c->listen, sizeof(c->listen), "127.0.0.1:8080");
	snprintf(c->runtime_dir, sizeof(c->runtime_dir), "/run/orchd");
	snprintf(c->admin_socket, sizeof(c->admin_socket), "/run/orchd/orchd.sock");
	c->max_queue = 64;
	c->request_timeout_s = 600;
	c->max_tokens = 2048;
	c->max_prompt_chars = 32768;
	c->max_chat_messages = 1024;
	c->max_body_bytes = 4 * MIB;
	c->max_header_bytes = 16384;
	c->max_connections = 4096;
	/* connection limits and HTTP strictness (issue 16) */
	c->max_connections_per_client = 1024;
	c->header_timeout_s = 10;
	c->body_timeout_s = 60;
	c->keepalive_timeout_s = 15;
	c->access_log = true;
	c->chat_page = true;
	c->events_keep_s = 300;
	c->sse_keepalive_s = 15;
	c->handshake_timeout_s = 10;
	c->load_timeout_s = 120;
	c->heartbeat_timeout_s = 10;
	c->shutdown_timeout_s = 30;
	c->residency_check_s = 60;
	c->unhealthy_drain_s = 30;
	c->hash_cache_beside = false; /* a user's model folder is left as found (issue 62) */
	c->evict = CFG_EVICT_NONE;
	c->vram_headroom_bytes = 512ull * MIB;
	c->evict_wait_s = 60;
	snprintf(c->nvml_library, sizeof(c->nvml_library), "libnvidia-ml.so.1");
	/* API keys, job ownership and retention (issue 16) */
	c->events_keep_jobs = 1000;
	c->events_keep_bytes = 64ull * MIB;
}

/* ---- values ---- */

static orch_err
set_str(char *dst, size_t n, const char *key, const char *v, struct orch_errinfo *e)
{
	if (strlen(v) >= n)
		return orch_errf(e, ORCH_EINVAL, "%s is longer than %zu bytes", key, n - 1);
	snprintf(dst, n, "%s", v);
	return ORCH_OK;
}

static orch_err
set_u32(uint32_t *dst, uint64_t lo, uint64_t hi, const char *key, const char *v,
        struct orch_errinfo *e)
{
	uint64_t x;

	if (orch_parse_u64(v, lo, hi, &x) != ORCH_OK)
		return orch_errf(e, ORCH_EINVAL, "%s wants an integer in [%llu, %llu], got '%s'",
		                 key, (unsigned long long)lo, (unsigned long long)hi, v);
	*dst = (uint32_t)x;
	return ORCH_OK;
}

static orch_err
set_bool(bool *dst, const char *key, const char *v, struct orch_errinfo *e)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "on") || !strcmp(v, "1"))
		*dst = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "off") || !strcmp(v, "0"))
		*dst = false;
	else
		return orch_errf(e, ORCH_EINVAL, "%s wants yes or no, got '%s'", key, v);
	return ORCH_OK;
}

/* "HOST:PORT" with a port in 1..65535. */
static orch_err
set_addr(char *dst, size_t n, const char *key, const char *v, struct orch_errinfo *e)
{
	const char *colon = strrchr(v, ':');
	uint64_t port;

	if (colon == NULL || colon == v || orch_parse_u64(colon + 1, 1, 65535, &port) != ORCH_OK)
		return orch_errf(e, ORCH_EINVAL, "%s wants HOST:PORT, got '%s'", key, v);
	return set_str(dst, n, key, v, e);
}

static bool
device_ok(const char *d)
{
	uint64_t n;

	return strcmp(d, "cpu") == 0 ||
	       (strncmp(d, "cuda:", 5) == 0 && orch_parse_u64(d + 5, 0, 63, &n) == ORCH_OK);
}

static orch_err
set_devices(struct cfg_model *m, const char *v, struct orch_errinfo *e)
{
	char buf[256];
	char *save = NULL;

	if (set_str(buf, sizeof(buf), "device", v, e) != ORCH_OK)
		return ORCH_EINVAL;
	m->n_devices = 0;
	for (char *t = strtok_r(buf, ", ", &save); t; t = strtok_r(NULL, ", ", &save)) {
		if (!device_ok(t))
			return orch_errf(e, ORCH_EINVAL, "device wants cpu or cuda:N, got '%s'", t);
		if (m->n_devices == CFG_MAX_DEVICES)
			return orch_errf(e, ORCH_EINVAL, "more than %d devices", CFG_MAX_DEVICES);
		snprintf(m->devices[m->n_devices++], sizeof(m->devices[0]), "%s", t);
	}
	if (m->n_devices == 0)
		return orch_errf(e, ORCH_EINVAL, "device is empty");
	return ORCH_OK;
}

/* ---- keys ---- */

/* The numeric [server] keys: where each goes and its range. */
static const struct {
	const char *key;
	size_t off;
	uint64_t lo, hi;
} server_nums[] = {
        {"max_queue", offsetof(struct orchd_config, max_queue), 0, 1000000},
        {"request_timeout_s", offsetof(struct orchd_config, request_timeout_s), 1, 86400},
        {"max_tokens", offsetof(struct orchd_config, max_tokens), 1, 1u << 20},
        {"max_prompt_chars", offsetof(struct orchd_config, max_prompt_chars), 1, 1u << 26},
        {"max_chat_messages", offsetof(struct orchd_config, max_chat_messages), 1,
         ORCH_MAX_MESSAGES},
        {"max_body_bytes", offsetof(struct orchd_config, max_body_bytes), 1024, 1u << 30},
        {"max_header_bytes", offsetof(struct orchd_config, max_header_bytes), 1024, 1u << 20},
        {"max_connections", offsetof(struct orchd_config, max_connections), 1, 1000000},
        {"events_keep_s", offsetof(struct orchd_config, events_keep_s), 0, 86400},
        {"sse_keepalive_s", offsetof(struct orchd_config, sse_keepalive_s), 1, 3600},
        {"handshake_timeout_s", offsetof(struct orchd_config, handshake_timeout_s), 1, 3600},
        {"load_timeout_s", offsetof(struct orchd_config, load_timeout_s), 1, 86400},
        {"heartbeat_timeout_s", offsetof(struct orchd_config, heartbeat_timeout_s), 1, 3600},
        {"shutdown_timeout_s", offsetof(struct orchd_config, shutdown_timeout_s), 1, 3600},
        {"residency_check_s", offsetof(struct orchd_config, residency_check_s), 1, 86400},
        {"unhealthy_drain_s", offsetof(struct orchd_config, unhealthy_drain_s), 1, 3600},
};

/* connection limits and HTTP strictness (issue 16) */
static const struct {
	const char *key;
	size_t off;
	uint64_t lo, hi;
} edge_nums[] = {
        {"max_connections_per_client", offsetof(struct orchd_config, max_connections_per_client), 1,
         1000000},
        {"header_timeout_s", offsetof(struct orchd_config, header_timeout_s), 1, 3600},
        {"body_timeout_s", offsetof(struct orchd_config, body_timeout_s), 1, 3600},
        {"keepalive_timeout_s", offsetof(struct orchd_config, keepalive_timeout_s), 1, 3600},
};

/* A key of the block above (or cors_origins, allowed_hosts): ORCH_ENOTFOUND when @k is none. */
static orch_err
set_edge(struct orchd_config *c, const char *k, const char *v, struct orch_errinfo *e)
{
	struct http_hosts hosts;
	struct http_cors cors;

	for (size_t i = 0; i < sizeof(edge_nums) / sizeof(edge_nums[0]); i++)
		if (strcmp(k, edge_nums[i].key) == 0)
			return set_u32((uint32_t *)(void *)((char *)c + edge_nums[i].off),
			               edge_nums[i].lo, edge_nums[i].hi, k, v, e);
	if (strcmp(k, "access_log") == 0) /* issue 18 */
		return set_bool(&c->access_log, k, v, e);
	if (strcmp(k, "chat_page") == 0) /* issue 18: http_static.h */
		return set_bool(&c->chat_page, k, v, e);
	if (strcmp(k, "cors_origins") == 0)
		return http_cors_init(&cors, v, e) != ORCH_OK
		               ? ORCH_EINVAL
		               : set_str(c->cors_origins, sizeof(c->cors_origins), k, v, e);
	if (strcmp(k, "allowed_hosts") != 0)
		return ORCH_ENOTFOUND;
	if (http_hosts_init(&hosts, v, "127.0.0.1:1", e) != ORCH_OK) /* the syntax */
		return ORCH_EINVAL;
	return set_str(c->allowed_hosts, sizeof(c->allowed_hosts), k, v, e);
}

static orch_err
set_server(struct orchd_config *c, const char *k, const char *v, struct orch_errinfo *e)
{
	orch_err rv;

	if ((rv = set_edge(c, k, v, e)) != ORCH_ENOTFOUND)
		return rv;
	for (size_t i = 0; i < sizeof(server_nums) / sizeof(server_nums[0]); i++)
		if (strcmp(k, server_nums[i].key) == 0)
			return set_u32((uint32_t *)(void *)((char *)c + server_nums[i].off),
			               server_nums[i].lo, server_nums[i].hi, k, v, e);
	if (strcmp(k, "listen") == 0)
		return set_addr(c->listen, sizeof(c->listen), k, v, e);
	if (strcmp(k, "admin_listen") == 0)
		return v[0] ? set_addr(c->admin_listen, sizeof(c->admin_listen), k, v, e)
		            : set_str(c->admin_listen, sizeof(c->admin_listen), k, v, e);
	if (strcmp(k, "admin_socket") == 0)
		return set_str(c->admin_socket, sizeof(c->admin_socket), k, v, e);
	if (strcmp(k, "admin_token_file") == 0)
		return set_str(c->admin_token_file, sizeof(c->admin_token_file), k, v, e);
	if (strcmp(k, "runtime_dir") == 0)
		return set_str(c->runtime_dir, sizeof(c->runtime_dir), k, v, e);
	if (strcmp(k, "state_dir") == 0)
		return set_str(c->state_dir, sizeof(c->state_dir), k, v, e);
	if (strcmp(k, "model_dir") == 0)
		return set_str(c->model_dir, sizeof(c->model_dir), k, v, e);
	if (strcmp(k, "hf_token_file") == 0)
		return set_str(c->hf_token_file, sizeof(c->hf_token_file), k, v, e);
	if (strcmp(k, "api_keys_file") == 0)
		return set_str(c->api_keys_file, sizeof(c->api_keys_file), k, v, e);
	if (strcmp(k, "worker_bin") == 0)
		return set_str(c->worker_bin, sizeof(c->worker_bin), k, v, e);
	if (strcmp(k, "evict") == 0) {
		if (strcmp(v, "lru") == 0)
			c->evict = CFG_EVICT_LRU;
		else if (strcmp(v, "none") == 0)
			c->evict = CFG_EVICT_NONE;
		else
			return orch_errf(e, ORCH_EINVAL, "evict wants none or lru, got '%s'", v);
		return ORCH_OK;
	}
	if (strcmp(k, "vram_headroom_mib") == 0) {
		uint32_t mib = 0;
		if (set_u32(&mib, 0, 1u << 20, k, v, e) != ORCH_OK)
			return ORCH_EINVAL;
		c->vram_headroom_bytes = (uint64_t)mib * MIB;
		return ORCH_OK;
	}
	if (strcmp(k, "cpu_memory_mib") == 0) {
		uint32_t mib = 0;
		if (set_u32(&mib, 0, UINT32_MAX, k, v, e) != ORCH_OK)
			return ORCH_EINVAL;
		c->cpu_memory_bytes = (uint64_t)mib * MIB;
		return ORCH_OK;
	}
	if (strcmp(k, "evict_wait_s") == 0)
		return set_u32(&c->evict_wait_s, 1, 3600, k, v, e);
	if (strcmp(k, "nvml_library") == 0)
		return set_str(c->nvml_library, sizeof(c->nvml_library), k, v, e);
	if (strcmp(k, "hash_cache_beside") == 0)
		return set_bool(&c->hash_cache_beside, k, v, e);
	/* API keys, job ownership and retention (issue 16) */
	if (strcmp(k, "events_keep_jobs") == 0)
		return set_u32(&c->events_keep_jobs, 0, 1000000, k, v, e);
	if (strcmp(k, "events_keep_mib") == 0) {
		uint32_t mib = 0;
		if (set_u32(&mib, 0, 1u << 20, k, v, e) != ORCH_OK)
			return ORCH_EINVAL;
		c->events_keep_bytes = (uint64_t)mib * MIB;
		return ORCH_OK;
	}
	return orch_errf(e, ORCH_EINVAL, "unknown key '%s' in [server]", k);
}

/* model = hf:...: checked now, kept in its canonical spelling. */
static orch_err
set_ref(struct cfg_model *m, const char *v, struct orch_errinfo *e)
{
	struct hf_ref r;
	orch_err rv = hf_ref_parse(v, &r, e);

	if (rv != ORCH_OK)
		return orch_errf(e, rv, "model: %s", e->msg);
	return set_str(m->ref, sizeof(m->ref), "model", r.canon, e);
}

const char *
cfg_sched_name(enum cfg_sched s)
{
	static const char *const names[] = {"fcfs", "prefill_first", "fair"};

	return (unsigned)s <= CFG_SCHED_FAIR ? names[s] : "?";
}

static orch_err
set_model(struct cfg_model *m, const char *k, const char *v, struct orch_errinfo *e)
{
	if (strcmp(k, "path") == 0)
		return set_str(m->path, sizeof(m->path), k, v, e);
	if (strcmp(k, "model") == 0)
		return set_ref(m, v, e);
	if (strcmp(k, "pull") == 0)
		return set_bool(&m->pull, k, v, e);
	if (strcmp(k, "device") == 0)
		return set_devices(m, v, e);
	if (strcmp(k, "slots") == 0)
		return set_u32(&m->slots, 1, 256, k, v, e);
	if (strcmp(k, "context") == 0)
		return set_u32(&m->context, 16, 1u << 20, k, v, e);
	if (strcmp(k, "replicas") == 0)
		return set_u32(&m->replicas, 1, 64, k, v, e);
	if (strcmp(k, "threads") == 0)
		return set_u32(&m->threads, 0, 256, k, v, e);
	if (strcmp(k, "preload") == 0)
		return set_bool(&m->preload, k, v, e);
	if (strcmp(k, "kv_cache_mib") == 0)
		return set_u32(&m->kv_cache_mib, 0, 1u << 30, k, v, e);
	if (strcmp(k, "kv_cache_fraction") == 0) {
		double f = 0;
		if (orch_parse_double(v, 0, 1, &f) != ORCH_OK || (f > 0 && f < 0.001))
			return orch_errf(
			        e, ORCH_EINVAL,
			        "kv_cache_fraction wants 0 (unset) or a number in [0.001, 1], "
			        "got '%s'",
			        v);
		m->kv_cache_fraction = f;
		return ORCH_OK;
	}
	if (strcmp(k, "kv_block_tokens") == 0)
		return set_u32(&m->kv_block_tokens, 1, 256, k, v, e);
	if (strcmp(k, "enable_prefix_cache") == 0)
		return set_bool(&m->prefix_cache, k, v, e);
	if (strcmp(k, "scheduler") == 0) {
		for (int i = 0; i <= CFG_SCHED_FAIR; i++)
			if (strcmp(v, cfg_sched_name((enum cfg_sched)i)) == 0) {
				m->scheduler = (enum cfg_sched)i;
				return ORCH_OK;
			}
		return orch_errf(e, ORCH_EINVAL,
		                 "scheduler wants fcfs, prefill_first or fair, got '%s'", v);
	}
	if (strcmp(k, "tokenizer") == 0) {
		if (strcmp(v, "gguf") != 0 && strcmp(v, "hf-json") != 0)
			return orch_errf(e, ORCH_EINVAL,
			                 "tokenizer wants gguf or hf-json, got '%s'", v);
		m->hf_tokenizer = strcmp(v, "hf-json") == 0;
		return ORCH_OK;
	}
	return orch_errf(e, ORCH_EINVAL, "unknown key '%s' in [model \"%s\"]", k, m->name);
}

struct cfg_model *
cfg_model_find(const struct orchd_config *c, const char *name)
{
	for (uint32_t i = 0; i < c->n_models; i++)
		if (strcmp(c->models[i].name, name) == 0)
			return &c->models[i];
	return NULL;
}

static bool
name_ok(const char *n)
{
	if (n[0] == '\0' || strlen(n) >= CFG_NAME_MAX)
		return false;
	for (const char *p = n; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("._-:", *p))
			return false;
	return true;
}

orch_err
cfg_model_add(struct orchd_config *c, const char *name, struct cfg_model **ret,
              struct orch_errinfo *e)
{
	if (!name_ok(name))
		return orch_errf(e, ORCH_EINVAL,
		                 "model name '%s': want 1-%d of letters, digits and ._-:", name,
		                 CFG_NAME_MAX - 1);
	if (cfg_model_find(c, name) != NULL)
		return orch_errf(e, ORCH_EINVAL, "model '%s' is defined twice", name);
	struct cfg_model *m = orch_reallocarray(c->models, c->n_models + 1, sizeof(*m));
	if (m == NULL)
		return orch_errf(e, ORCH_ENOMEM, "out of memory");
	c->models = m;
	m = &c->models[c->n_models++];
	*m = (struct cfg_model){
	        .slots = 4, .replicas = 1, .n_devices = 1, .preload = true, .prefix_cache = true};
	snprintf(m->name, sizeof(m->name), "%s", name);
	snprintf(m->devices[0], sizeof(m->devices[0]), "cpu");
	*ret = m;
	return ORCH_OK;
}

/* The model name of a section 'model "NAME"', or NULL. */
static const char *
model_section(const char *section, char *buf, size_t n)
{
	size_t len = strlen(section);

	if (strncmp(section, "model \"", 7) != 0 || len < 9 || section[len - 1] != '"' ||
	    len - 8 >= n)
		return NULL;
	snprintf(buf, n, "%.*s", (int)(len - 8), section + 7);
	return buf;
}

orch_err
cfg_set(struct orchd_config *c, const char *section, const char *key, const char *value,
        struct orch_errinfo *e)
{
	char name[CFG_NAME_MAX + 8];

	if (strcmp(section, "server") == 0)
		return set_server(c, key, value, e);
	if (model_section(section, name, sizeof(name)) != NULL) {
		struct cfg_model *m = cfg_model_find(c, name);
		if (m == NULL && cfg_model_add(c, name, &m, e) != ORCH_OK)
			return ORCH_EINVAL;
		return set_model(m, key, value, e);
	}
	return orch_errf(e, ORCH_EINVAL, "unknown section [%s] (want [server] or [model \"NAME\"])",
	                 section);
}

/* ---- the file ---- */

struct parse {
	struct orchd_config *c;
	struct orch_errinfo err; /* the first failure */
	bool failed;
	char last_section[CFG_NAME_MAX + 16];
};

static int
on_pair(void *user, const char *section, const char *key, const char *value)
{
	struct parse *p = user;
	struct orch_errinfo e = {0};

	if (p->failed)
		return 1; /* only the first error is reported */
	/* a model section seen twice in one file is a duplicate, not a continuation */
	if (strcmp(section, p->last_section) != 0) {
		char name[CFG_NAME_MAX + 8];
		if (model_section(section, name, sizeof(name)) && cfg_model_find(p->c, name)) {
			orch_errf(&p->err, ORCH_EINVAL, "model '%s' is defined twice", name);
			p->failed = true;
			return 0;
		}
		snprintf(p->last_section, sizeof(p->last_section), "%s", section);
	}
	if (cfg_set(p->c, section, key, value, &e) != ORCH_OK) {
		p->err = e;
		p->failed = true;
		return 0;
	}
	return 1;
}

orch_err
cfg_load(struct orchd_config *c, const char *path, struct orch_errinfo *reterr)
{
	struct parse p = {.c = c};
	static char inline_comments[] = ";#";

	/* Debian's libinih takes its options at run time: "key = v  # note"
	 * comments, and lines as long as a path may be. */
	ini_inline_comment_prefixes = inline_comments;
	ini_use_stack = false;
	ini_max_line = CFG_PATH_MAX + 256;
	FILE *f = orch_open_regular(path, reterr); /* a FIFO or device never blocks orchd */

	if (f == NULL)
		return ORCH_EIO;
	int line = ini_parse_file(f, on_pair, &p);
	fclose(f);
	if (line < 0)
		return orch_errf(reterr, ORCH_EIO, "%s: cannot be read", path);
	if (line > 0)
		return orch_errf(reterr, ORCH_EINVAL, "%s:%d: %s", path, line,
		                 p.failed ? p.err.msg : "not a key = value line or a [section]");
	return ORCH_OK;
}

orch_err
cfg_model_check(const struct cfg_model *m, struct orch_errinfo *reterr)
{
	if (m->path[0] == '\0' && m->ref[0] == '\0')
		return orch_errf(reterr, ORCH_EINVAL,
		                 "model '%s' has no path (or model = hf:ORG/REPO:QUANT)", m->name);
	if (m->path[0] != '\0' && m->ref[0] != '\0')
		return orch_errf(reterr, ORCH_EINVAL,
		                 "model '%s' has both a path and model = %s: give one", m->name,
		                 m->ref);
	if (m->kv_cache_mib > 0 && m->kv_cache_fraction > 0)
		return orch_errf(reterr, ORCH_EINVAL,
		                 "model '%s': kv_cache_mib and kv_cache_fraction both size the KV "
		                 "pool: give one",
		                 m->name);
	return ORCH_OK;
}

orch_err
cfg_check(const struct orchd_config *c, struct orch_errinfo *reterr)
{
	for (uint32_t i = 0; i < c->n_models; i++) {
		const struct cfg_model *m = &c->models[i];
		orch_err rv = cfg_model_check(m, reterr);
		if (rv != ORCH_OK)
			return rv;
	}
	if (c->admin_socket[0] == '\0')
		return orch_errf(reterr, ORCH_EINVAL, "admin_socket is empty");
	return ORCH_OK;
}

void
cfg_free(struct orchd_config *c)
{
	orch_free(c->models);
	c->models = NULL;
	c->n_models = 0;
}
