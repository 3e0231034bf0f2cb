#pragma once
/*
 * admin_pull.h - pulls orchd runs for an admin client (issue 21):
 * POST /admin/pulls {"model": "hf:...", "token"?} starts one into orchd's
 * model store (or joins the one running for that reference), GET /admin/pulls
 * lists them with their progress, those models with pull = yes run included,
 * so `orchctl pull` shows a pull orchd runs. A finished pull stays listed
 * (the last 32) with its path or its error. Thread: the loop.
 */
#include <stdbool.h>

struct cJSON;
struct api_req;
struct orchd;

/* admin_pulls_post - POST /admin/pulls: 202 with the pull's entry; 400 for a bad reference. */
void admin_pulls_post(struct orchd *d, struct api_req *req, const char *arg);

/* admin_pulls_get - GET /admin/pulls: {"pulls": [entry...]}. */
void admin_pulls_get(struct orchd *d, struct api_req *req, const char *arg);

/* admin_pulls_json - the pulls as GET /admin/pulls lists them; only those running with
 * @running (GET /admin/status's "pulls"). */
struct cJSON *admin_pulls_json(struct orchd *d, bool running);

/* admin_pulls_free - at exit: cancel the running pulls, forget them all. */
void admin_pulls_free(struct orchd *d);
