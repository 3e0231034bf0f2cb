#pragma once
/*
 * admin_int.h - what the admin API's files share (admin.c: the routes, status,
 * unload, logs; admin_load.c: POST /admin/models). Thread: the loop.
 */
#include <cjson/cJSON.h>

#include "base/err.h"

struct api_req;
struct model_entry;
struct orchd;

/* admin_model_json - @m as the admin API shows a model. */
cJSON *admin_model_json(const struct model_entry *m);

/* What the state file could not keep: what a restart then does. */
enum admin_unsaved { UNSAVED_LOAD, UNSAVED_UNLOAD, UNSAVED_FORGET };

/*
 * admin_warn_unsaved - a change the state file could not keep (@saved not
 * ORCH_OK: a full disk, a read-only mount): a warning in its 202 (@o), which
 * orchctl prints, instead of a silent success a restart undoes.
 */
void admin_warn_unsaved(cJSON *o, orch_err saved, enum admin_unsaved what);

/*
 * admin_on_load - POST /admin/models: a model by name, by file (its header read
 * off the loop first) or by hf: reference (pulled), added, saved and started.
 */
void admin_on_load(struct orchd *d, struct api_req *req, const char *arg);
