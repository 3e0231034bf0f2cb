#pragma once
/*
 * admin.h - the admin API (docs/http-api.md): its routes, the status
 * document, the model followers. Its listeners are the edge's
 * (admin_listen.h). Thread: the loop.
 */
struct api_req;
struct cJSON;
struct model_entry;
struct orchd;

/* admin_route - answer @r by the admin API's routes (404 where none matches). */
void admin_route(struct orchd *d, struct api_req *r);

/* admin_status - the status document (GET /admin/status). */
struct cJSON *admin_status(struct orchd *d);

/*
 * admin_model_event - @m changed (@what: "state", "progress"): tell the
 * /admin/models/NAME/events followers; @what NULL: @m goes, they are let go.
 */
void admin_model_event(struct orchd *d, struct model_entry *m, const char *what);
