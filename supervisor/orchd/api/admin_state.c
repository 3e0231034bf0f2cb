/*
 * admin_state.c - models.json, the admin API's models across restarts
 * (admin_state.h).
 *
 * Design notes: the file is rewritten whole after each load, unload and rm
 * that the admin API accepts, before it answers; so an answered request is
 * in the file. The new text goes to models.json.tmp, which is fsynced, then
 * renamed over models.json, and the directory is fsynced so the rename
 * itself survives a power cut. A crash at any point leaves models.json as it
 * was or as it became (a stray .tmp is overwritten by the next save).
 *
 *   {"version": 1, "models": [{"name": "x", "path": "/m/x.gguf", "device": ["cpu"],
 *     "slots": 4, "replicas": 1, "tokenizer": "gguf", "loaded": true}, ...]}
 */
#include "admin_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/readfile.h"
#include "base/sbuf.h"
#include "config.h"
#include "models.h"
#include "orchd.h"

#define STATE_FILE      "models.json"
#define STATE_MAX_BYTES (16u << 20)

const char *
admin_state_dir(const struct orchd *d, char *buf, size_t n)
{
	const char *env = getenv("STATE_DIRECTORY");

	if (d->cfg.state_dir[0])
		snprintf(buf, n, "%s", d->cfg.state_dir);
	else if (env && env[0])
		snprintf(buf, n, "%.*s", (int)strcspn(env, ":"), env);
	else
		snprintf(buf, n, "%s", d->cfg.runtime_dir);
	return buf;
}

/* @m's parameters as the admin API takes them, and whether it is loaded. */
static cJSON *
model_entry_json(const struct model_entry *m)
{
	cJSON *o = cJSON_CreateObject(), *devs;

	cJSON_AddStringToObject(o, "name", m->cfg.name);
	if (m->cfg.ref[0]) { /* the reference, looked up again at each start */
		cJSON_AddStringToObject(o, "model", m->cfg.ref);
		cJSON_AddBoolToObject(o, "pull", m->cfg.pull);
	} else {
		cJSON_AddStringToObject(o, "path", m->cfg.path);
	}
	devs = cJSON_AddArrayToObject(o, "device");
	for (uint32_t i = 0; i < m->cfg.n_devices; i++)
		cJSON_AddItemToArray(devs, cJSON_CreateString(m->cfg.devices[i]));
	cJSON_AddNumberToObject(o, "slots", m->cfg.slots);
	if (m->cfg.context)
		cJSON_AddNumberToObject(o, "context", m->cfg.context);
	cJSON_AddNumberToObject(o, "replicas", m->cfg.replicas);
	if (m->cfg.threads)
		cJSON_AddNumberToObject(o, "threads", m->cfg.threads);
	cJSON_AddStringToObject(o, "tokenizer", m->cfg.hf_tokenizer ? "hf-json" : "gguf");
	admin_kv_json(o, &m->cfg);
	/* loaded, unless it failed before it was ever ready: not brought back by a restart */
	cJSON_AddBoolToObject(o, "loaded",
	                      m->wanted && !(m->state == MODEL_FAILED && m->ready_since_ms == 0));
	return o;
}

/* Write @n bytes of @text to @tmp, fsync it, rename it to @path, fsync @dir. */
static orch_err
write_atomic(const char *dir, const char *tmp, const char *path, const char *text, size_t n,
             struct orch_errinfo *e)
{
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0640);
	size_t done = 0;

	if (fd < 0)
		return orch_errf(e, ORCH_EIO, "%s: %s", tmp, strerror(errno));
	while (done < n) {
		ssize_t k = write(fd, text + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : ENOSPC;
			close(fd);
			unlink(tmp);
			return orch_errf(e, ORCH_EIO, "write %s: %s", tmp, strerror(err));
		}
		done += (size_t)k;
	}
	int synced = fsync(fd), sync_err = errno;
	if (close(fd) != 0 && synced == 0) {
		synced = -1;
		sync_err = errno;
	}
	if (synced != 0) {
		unlink(tmp);
		return orch_errf(e, ORCH_EIO, "fsync %s: %s", tmp, strerror(sync_err));
	}
	if (rename(tmp, path) != 0) {
		int err = errno;
		unlink(tmp);
		return orch_errf(e, ORCH_EIO, "rename %s: %s", tmp, strerror(err));
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fsync(dfd) != 0) {
		int err = errno;
		if (dfd >= 0)
			close(dfd);
		return orch_errf(e, ORCH_EIO, "fsync %s: %s", dir, strerror(err));
	}
	close(dfd);
	return ORCH_OK;
}

orch_err
admin_state_save(struct orchd *d)
{
	char dir[CFG_PATH_MAX], path[CFG_PATH_MAX + 32], tmp[CFG_PATH_MAX + 32];
	struct orch_errinfo e = {0};
	cJSON *root = cJSON_CreateObject(), *ms;
	orch_err rv;

	admin_state_dir(d, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, STATE_FILE);
	cJSON_AddNumberToObject(root, "version", 1);
	ms = cJSON_AddArrayToObject(root, "models");
	for (const struct model_entry *m = d->models; m; m = m->next)
		if (m->runtime && !m->remove_when_stopped)
			cJSON_AddItemToArray(ms, model_entry_json(m));
	char *text = cJSON_Print(root);
	cJSON_Delete(root);
	if (text == NULL)
		rv = orch_errf(&e, ORCH_ENOMEM, "out of memory");
	else if (mkdir(dir, 0750) != 0 && errno != EEXIST)
		rv = orch_errf(&e, ORCH_EIO, "mkdir %s: %s", dir, strerror(errno));
	else
		rv = write_atomic(dir, tmp, path, text, strlen(text), &e);
	free(text);
	if (rv != ORCH_OK)
		orch_log_fail(rv, &e, "state_save_failed", "file=%s: continuing", path);
	return rv;
}

void
admin_kv_json(cJSON *o, const struct cfg_model *c)
{
	if (c->kv_cache_mib)
		cJSON_AddNumberToObject(o, "kv_cache_mib", c->kv_cache_mib);
	if (c->kv_cache_fraction > 0)
		cJSON_AddNumberToObject(o, "kv_cache_fraction", c->kv_cache_fraction);
	if (c->kv_block_tokens)
		cJSON_AddNumberToObject(o, "kv_block_tokens", c->kv_block_tokens);
	if (!c->prefix_cache)
		cJSON_AddBoolToObject(o, "enable_prefix_cache", false);
}

/* @x as the shortest text that reads back as it (an error then quotes what was sent). */
static const char *
number_text(double x, char *buf, size_t n)
{
	snprintf(buf, n, "%.15g", x);
	if (strtod(buf, NULL) != x)
		snprintf(buf, n, "%.17g", x);
	return buf;
}

bool
admin_model_cfg(struct orchd_config *tmp, const char *name, const cJSON *root,
                struct orch_errinfo *e)
{
	char section[CFG_NAME_MAX + 16];
	struct cfg_model *cm;
	const cJSON *it;

	snprintf(section, sizeof(section), "model \"%s\"", name);
	if (cfg_model_add(tmp, name, &cm, e) != ORCH_OK)
		return false;
	cJSON_ArrayForEach(it, root)
	{
		char num[32];
		const char *v = NULL;
		struct sbuf list = {0};
		const cJSON *x;
		if (strcmp(it->string, "name") == 0 || strcmp(it->string, "loaded") == 0 ||
		    strcmp(it->string, "token") == 0) /* a pull's, never kept */
			continue;
		if (cJSON_IsString(it)) {
			v = it->valuestring;
		} else if (cJSON_IsNumber(it)) {
			v = number_text(it->valuedouble, num, sizeof(num));
		} else if (cJSON_IsBool(it)) {
			v = cJSON_IsTrue(it) ? "yes" : "no";
		} else if (cJSON_IsArray(it) && strcmp(it->string, "device") == 0) {
			cJSON_ArrayForEach(x, it)
			        sbuf_printf(&list, "%s%s", list.n ? "," : "",
			                    cJSON_IsString(x) ? x->valuestring : "?");
			v = list.p ? list.p : "";
		}
		bool ok = v != NULL && cfg_set(tmp, section, it->string, v, e) == ORCH_OK;
		if (v == NULL)
			orch_errf(e, ORCH_EINVAL, "'%s' has the wrong type", it->string);
		sbuf_fini(&list);
		if (!ok)
			return false;
	}
	return cfg_model_check(cm, e) == ORCH_OK;
}

/* One entry of the file: added (and started when it was loaded) unless the config has it. */
static void
restore_one(struct orchd *d, const cJSON *o)
{
	const cJSON *name = cJSON_GetObjectItem(o, "name");
	struct orchd_config tmp = {0};
	struct orch_errinfo e = {0};
	struct model_entry *m;

	if (!cJSON_IsString(name)) {
		orch_log(ORCH_LOG_ERR, "state_model_bad", "why=\"an entry without a name\"");
		return;
	}
	if (models_find(d, name->valuestring) != NULL) {
		orch_log(ORCH_LOG_WARNING, "state_model_shadowed",
		         "model=%s: the configuration has it; the state file's entry is dropped",
		         name->valuestring);
		return;
	}
	if (!admin_model_cfg(&tmp, name->valuestring, o, &e) ||
	    (tmp.models[0].path[0] == '\0' && tmp.models[0].ref[0] == '\0' &&
	     orch_errf(&e, ORCH_EINVAL, "no path") != ORCH_OK) ||
	    models_add(d, &tmp.models[0], &m, &e) != ORCH_OK) {
		orch_log_err(e.code ? e.code : ORCH_EINVAL, &e, "state_model_bad", "model=%s",
		             name->valuestring);
		cfg_free(&tmp);
		return;
	}
	cfg_free(&tmp);
	m->runtime = true;
	m->wanted = cJSON_IsTrue(cJSON_GetObjectItem(o, "loaded"));
	orch_log(ORCH_LOG_INFO, "state_model_restored", "model=%s loaded=%s", m->cfg.name,
	         m->wanted ? "yes" : "no");
	if (m->wanted)
		models_start(d, m);
}

void
admin_state_restore(struct orchd *d)
{
	char dir[CFG_PATH_MAX], path[CFG_PATH_MAX + 32], bad[CFG_PATH_MAX + 40];
	struct orch_errinfo e = {0};
	char *text = NULL;
	size_t n = 0;
	const cJSON *it;

	admin_state_dir(d, dir, sizeof(dir));
	snprintf(path, sizeof(path), "%s/%s", dir, STATE_FILE);
	if (access(path, F_OK) != 0)
		return; /* nothing was added at run time yet */
	if (orch_read_regular(path, STATE_MAX_BYTES, &text, &n, &e) !=
	    ORCH_OK) { /* a FIFO: refused */
		orch_log_fail(e.code, &e, "state_read_failed", "file=%s: continuing without it",
		              path);
		return;
	}
	cJSON *root = cJSON_ParseWithLength(text, n);
	const cJSON *ms = cJSON_GetObjectItem(root, "models");
	orch_free(text);
	if (!cJSON_IsArray(ms) || !cJSON_IsNumber(cJSON_GetObjectItem(root, "version"))) {
		snprintf(bad, sizeof(bad), "%s.bad", path);
		rename(path, bad);
		orch_log(ORCH_LOG_ERR, "state_file_bad",
		         "file=%s moved_to=%s: not a state file; continuing without it", path, bad);
		cJSON_Delete(root);
		return;
	}
	cJSON_ArrayForEach(it, ms) restore_one(d, it);
	cJSON_Delete(root);
}
