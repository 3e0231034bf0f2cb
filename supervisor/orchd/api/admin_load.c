/*
 * admin_load.c - POST /admin/models (admin_int.h): load a model by name, by
 * file or by hf: reference, at run time (orchctl load).
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "admin_int.h"
#include "admin_pull.h"
#include "admin_state.h"
#include "base/alloc.h"
#include "base/log.h"
#include "devices.h"
#include "inspect.h"
#include "model_pull.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"

/*
 * A POST /admin/models of a new model whose file is being read (inspect.h):
 * the answer waits for the read. The edge stops reading a connection once a
 * request's body is in, so a client that leaves meanwhile is not seen: the
 * load goes on and its answer is dropped. The close callback covers the
 * connection freed under us (orchd stopping, evhttp_free).
 */
struct pending_load {
	struct api_req *req;
	struct inspect *q;
	cJSON *root; /* the body; name and path point into it */
	const char *name, *path;
};

static void
pending_free(struct pending_load *p)
{
	cJSON_Delete(p->root);
	orch_free(p);
}

/* The connection went before the read was in: no answer, no model. */
static void
on_pending_gone(struct api_req *req, void *arg, const char *why)
{
	struct pending_load *p = arg;

	(void)why;
	inspect_cancel(p->q);
	reply_release(req);
	pending_free(p);
}

/* Each device of @cm is one orchd has, or answered 400 naming the ones it has. */
static bool
devices_or_reply(struct orchd *d, struct api_req *req, const struct cfg_model *cm)
{
	struct sbuf have = {0};

	for (uint32_t i = 0; i < cm->n_devices; i++) {
		if (devices_find(&d->devices, cm->devices[i]) != NULL)
			continue;
		for (uint32_t k = 0; k < d->devices.n; k++)
			sbuf_printf(&have, "%s%s", k ? ", " : "", d->devices.dev[k].id);
		reply_error(req, ORCH_EINVAL, "device", "no device '%s' here (orchd has: %s)",
		            cm->devices[i], have.p ? have.p : "cpu");
		sbuf_fini(&have);
		return false;
	}
	return true;
}

/* A context beyond what the model was trained for works, but its answers degrade: say so. */
static void
add_context_warning(cJSON *o, const struct cfg_model *cm, uint32_t n_ctx_train)
{
	char msg[256];

	if (cm->context == 0 || n_ctx_train == 0 || cm->context <= n_ctx_train)
		return;
	snprintf(msg, sizeof(msg),
	         "context %u is beyond the model's training context (%u tokens): answers past "
	         "%u tokens may degrade",
	         cm->context, n_ctx_train, n_ctx_train);
	orch_log(ORCH_LOG_WARNING, "context_beyond_training", "model=%s context=%u n_ctx_train=%u",
	         cm->name, cm->context, n_ctx_train);
	cJSON_AddItemToArray(cJSON_AddArrayToObject(o, "warnings"), cJSON_CreateString(msg));
}

/* @cm added as a run-time model, kept in the state file and started: the 202 (a context
 * beyond @n_ctx_train warned of), or why not. */
static void
add_started(struct orchd *d, struct api_req *req, const struct cfg_model *cm, uint32_t n_ctx_train,
            const char *token)
{
	struct orch_errinfo e = {0};
	struct model_entry *m;

	if (models_add(d, cm, &m, &e) != ORCH_OK)
		return reply_error(req, e.code, "name", "%s", e.msg);
	if (token != NULL) /* for the pull this start may run */
		m->pull_token = orch_strndup(token, strlen(token));
	m->runtime = true;
	m->wanted = true;
	orch_err saved = admin_state_save(d);
	models_start(d, m);
	cJSON *o = admin_model_json(m);
	add_context_warning(o, &m->cfg, n_ctx_train);
	admin_warn_unsaved(o, saved, UNSAVED_LOAD);
	reply_json(req, 202, o);
}

/* A new model from the body, its file read: checked, added, kept in the state file, started. */
static void
on_file_read(struct orchd *d, void *arg, const struct inspect_facts *f)
{
	struct pending_load *p = arg;
	struct api_req *req = p->req;
	struct orch_errinfo e = {0};
	struct orchd_config tmp = {0};

	reply_hold(req, NULL, NULL, false); /* answered below */
	if (!admin_model_cfg(&tmp, p->name, p->root, &e)) {
		reply_error(req, ORCH_EINVAL, NULL, "%s", e.msg);
	} else if (!devices_or_reply(d, req, &tmp.models[0])) {
		;
	} else if (f->rv != ORCH_OK) {
		/* one answer for missing, unreadable, not regular, not a GGUF: the admin API does
		 * not tell whether a path exists (docs/security.md); the log has the reason, and
		 * orchctl checks the file itself first, as its user, and says which */
		orch_log(ORCH_LOG_INFO, "admin_load_refused", "model=%s why=\"%s\"", p->name,
		         f->msg);
		reply_error(req, ORCH_EINVAL, "path",
		            "'%.512s' is not a GGUF file orchd can read (missing, unreadable and "
		            "not-a-GGUF get this same answer; orchd's log says which)",
		            p->path);
	} else {
		add_started(d, req, &tmp.models[0], f->model.n_ctx_train, NULL);
	}
	cfg_free(&tmp);
	pending_free(p);
}

/*
 * A new model named by reference ('model': hf:...): checked, added, kept in the state file,
 * started. Its file is looked up in the store as it starts, or pulled first with 'pull';
 * without it, one the store lacks is refused now, saying how to get it.
 */
static void
load_ref(struct orchd *d, struct api_req *req, const cJSON *root, const char *name)
{
	struct orch_errinfo e = {0};
	struct orchd_config tmp = {0};
	char path[CFG_PATH_MAX];
	orch_err rv;

	if (!admin_model_cfg(&tmp, name, root, &e)) {
		reply_error(req, ORCH_EINVAL, NULL, "%s", e.msg);
	} else if (!devices_or_reply(d, req, &tmp.models[0])) {
		;
	} else if (!tmp.models[0].pull && (rv = model_pull_find(d, tmp.models[0].ref, path,
	                                                        sizeof(path), &e)) != ORCH_OK) {
		reply_error(req, rv == ORCH_ENOTFOUND ? ORCH_EINVAL : rv, "model", "%s", e.msg);
	} else {
		const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "token");
		add_started(d, req, &tmp.models[0], 0,
		            cJSON_IsString(tok) ? tok->valuestring : NULL);
	}
	cfg_free(&tmp);
}

/* Read @path off the loop; the answer comes with on_file_read. @root is taken. */
static void
load_new(struct orchd *d, struct api_req *req, cJSON *root, const char *name, const char *path)
{
	struct orch_errinfo e = {0};
	struct pending_load *p = orch_calloc(1, sizeof(*p));

	if (p == NULL) {
		cJSON_Delete(root);
		return reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
	}
	*p = (struct pending_load){.req = req, .root = root, .name = name, .path = path};
	if (inspect_start(d, path, NULL, on_file_read, p, &p->q, &e) != ORCH_OK) {
		pending_free(p);
		return reply_error(req, e.code, NULL, "%s", e.msg);
	}
	reply_hold(req, on_pending_gone, p, false);
}

/* POST /admin/models: a new model (or a stopped or failed one again). */
void
admin_on_load(struct orchd *d, struct api_req *req, const char *arg)
{
	static const char *const keys[] = {"name",
	                                   "path",
	                                   "model",
	                                   "pull",
	                                   "token",
	                                   "device",
	                                   "slots",
	                                   "context",
	                                   "replicas",
	                                   "threads",
	                                   "tokenizer",
	                                   "kv_cache_mib",
	                                   "kv_cache_fraction",
	                                   "kv_block_tokens",
	                                   "enable_prefix_cache",
	                                   NULL};
	struct params_err pe = {0};
	const char *name = NULL, *path = NULL, *ref = NULL;
	cJSON *root = NULL;
	struct model_entry *m;

	(void)arg;
	if (params_body(req->body, req->n_body, &root, &pe) != ORCH_OK ||
	    !params_known(root, keys, &pe) || !params_string(root, "name", true, &name, &pe) ||
	    !params_string(root, "path", false, &path, &pe) ||
	    !params_string(root, "model", false, &ref, &pe))
		;
	else if ((m = models_find(d, name)) == NULL && ref != NULL && path == NULL)
		load_ref(d, req, root, name); /* a model named by reference */
	else if (m != NULL && path == NULL && ref == NULL &&
	         m->state == MODEL_UNLOADING) /* nothing would start it once it stops */
		reply_error(req, ORCH_EOVERLOADED, "name",
		            "model '%s' is still unloading: load it again once it has stopped",
		            name);
	else if (m != NULL && path == NULL && ref == NULL && cJSON_GetArraySize(root) > 1)
		reply_error(req, ORCH_EINVAL, NULL,
		            "model '%s' exists: a load by name starts it as configured and changes "
		            "nothing; give only its name, or 'orchctl rm %s' and load it anew",
		            name, name);
	else if (m != NULL && path == NULL && ref == NULL) { /* a known model */
		m->wanted = true;
		models_start(d, m); /* first: a failed model saved now would be saved not loaded */
		orch_err saved = m->runtime ? admin_state_save(d) : ORCH_OK;
		cJSON *o = admin_model_json(m);
		admin_warn_unsaved(o, saved, UNSAVED_LOAD);
		reply_json(req, 202, o);
	} else if (m != NULL)
		reply_error(req, ORCH_EINVAL, "name",
		            "model '%s' exists; load it by name alone, or 'orchctl rm %s' first",
		            name, name);
	else if (path == NULL)
		reply_error(req, ORCH_EINVAL, "path",
		            "'path' (or 'model': an hf: reference) is required for a new model");
	else {
		load_new(d, req, root, name, path); /* it answers later, and frees the body */
		root = NULL;
	}
	if (pe.code != ORCH_OK)
		reply_params_error(req, &pe);
	cJSON_Delete(root);
}
