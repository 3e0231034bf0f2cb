/*
 * admin_pull.c - pulls orchd runs for admin clients (admin_pull.h).
 */
#include "admin_pull.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/alloc.h"
#include "model_pull.h"
#include "models.h"
#include "orchd.h"
#include "params.h"
#include "reply.h"
#include "store/hf.h"

#define KEEP_DONE 32 /* finished pulls listed, at most */

enum { P_PULLING, P_DONE, P_FAILED };

struct admin_pull {
	struct orchd *d;
	char ref[CFG_PATH_MAX];
	int state;
	struct model_pull *p; /* P_PULLING */
	char path[PATH_MAX];  /* P_DONE */
	char error[512];      /* P_FAILED */
	struct admin_pull *next;
};

static const char *const state_names[] = {"pulling", "done", "failed"};

/* Drop the finished pulls past the KEEP_DONE newest (the list is newest first). */
static void
trim(struct orchd *d)
{
	uint32_t done = 0;

	for (struct admin_pull **pp = &d->pulls; *pp != NULL;) {
		struct admin_pull *a = *pp;
		if (a->state != P_PULLING && ++done > KEEP_DONE) {
			*pp = a->next;
			orch_free(a);
			continue;
		}
		pp = &a->next;
	}
}

static void
on_pulled(struct orchd *d, void *arg, orch_err rv, const char *path, const char *msg)
{
	struct admin_pull *a = arg;

	a->p = NULL;
	a->state = rv == ORCH_OK ? P_DONE : P_FAILED;
	snprintf(a->path, sizeof(a->path), "%s", rv == ORCH_OK ? path : "");
	snprintf(a->error, sizeof(a->error), "%s", rv == ORCH_OK ? "" : msg);
	trim(d);
}

static cJSON *
entry(const char *ref, const char *state, struct model_pull *p, const char *model)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "model", ref);
	cJSON_AddStringToObject(o, "state", state);
	if (model != NULL)
		cJSON_AddStringToObject(o, "for", model); /* a model's pull = yes */
	if (p != NULL) {
		struct model_pull_state st;
		model_pull_progress(p, &st);
		cJSON_AddStringToObject(o, "file", st.file);
		cJSON_AddNumberToObject(o, "file_index", st.index);
		cJSON_AddNumberToObject(o, "files", st.n_files);
		cJSON_AddNumberToObject(o, "bytes_done", (double)st.done);
		cJSON_AddNumberToObject(o, "bytes_total", (double)st.total);
	}
	return o;
}

static cJSON *
pull_json(const struct admin_pull *a)
{
	cJSON *o = entry(a->ref, state_names[a->state], a->p, NULL);

	if (a->state == P_DONE)
		cJSON_AddStringToObject(o, "path", a->path);
	if (a->state == P_FAILED)
		cJSON_AddStringToObject(o, "error", a->error);
	return o;
}

void
admin_pulls_post(struct orchd *d, struct api_req *req, const char *arg)
{
	static const char *const keys[] = {"model", "token", NULL};
	struct params_err pe = {0};
	struct orch_errinfo e = {0};
	const char *ref = NULL, *token = NULL;
	cJSON *root = NULL;
	struct hf_ref r;

	(void)arg;
	if (params_body(req->body, req->n_body, &root, &pe) != ORCH_OK ||
	    !params_known(root, keys, &pe) || !params_string(root, "model", true, &ref, &pe) ||
	    !params_string(root, "token", false, &token, &pe)) {
		reply_params_error(req, &pe);
	} else if (hf_ref_parse(ref, &r, &e) != ORCH_OK) {
		reply_error(req, ORCH_EINVAL, "model", "%s", e.msg);
	} else {
		struct admin_pull *a = d->pulls;
		while (a != NULL && !(a->state == P_PULLING && strcmp(a->ref, r.canon) == 0))
			a = a->next;
		if (a == NULL && (a = orch_calloc(1, sizeof(*a))) == NULL) {
			reply_error(req, ORCH_ENOMEM, NULL, "out of memory");
		} else if (a->d == NULL) { /* a new one */
			*a = (struct admin_pull){.d = d, .state = P_PULLING};
			snprintf(a->ref, sizeof(a->ref), "%s", r.canon);
			if (model_pull_start(d, r.canon, token, on_pulled, a, &a->p, &e) !=
			    ORCH_OK) {
				orch_free(a);
				reply_error(req, e.code, NULL, "%s", e.msg);
			} else {
				a->next = d->pulls;
				d->pulls = a;
				reply_json(req, 202, pull_json(a));
			}
		} else {
			reply_json(req, 202, pull_json(a)); /* joined */
		}
	}
	cJSON_Delete(root);
}

cJSON *
admin_pulls_json(struct orchd *d, bool running)
{
	cJSON *list = cJSON_CreateArray();

	for (struct admin_pull *a = d->pulls; a != NULL; a = a->next)
		if (!running || a->state == P_PULLING)
			cJSON_AddItemToArray(list, pull_json(a));
	for (struct model_entry *m = d->models; m != NULL; m = m->next)
		if (m->pulling != NULL)
			cJSON_AddItemToArray(list,
			                     entry(m->cfg.ref, "pulling", m->pulling, m->cfg.name));
	return list;
}

void
admin_pulls_get(struct orchd *d, struct api_req *req, const char *arg)
{
	cJSON *o = cJSON_CreateObject();

	(void)arg;
	cJSON_AddItemToObject(o, "pulls", admin_pulls_json(d, false));
	reply_json(req, 200, o);
}

void
admin_pulls_free(struct orchd *d)
{
	while (d->pulls != NULL) {
		struct admin_pull *a = d->pulls;
		d->pulls = a->next;
		model_pull_cancel(a->p);
		orch_free(a);
	}
}
