#pragma once
/*
 * admin.h - the admin API (docs/http-api.md): HTTP/JSON on a unix socket
 * (mode 0660), and optionally on TCP with its own bearer token.
 * Thread: the loop.
 */
#include "base/err.h"

struct cJSON;
struct model_entry;
struct orchd;

/* admin_start - listen on the admin socket (and admin_listen); sets orchd.on_model_event. */
orch_err admin_start(struct orchd *d, struct orch_errinfo *reterr);

/* admin_stop - close the admin listeners and remove the socket. */
void admin_stop(struct orchd *d);

/* admin_status - the status document (GET /admin/status). */
struct cJSON *admin_status(struct orchd *d);

/*
 * admin_model_event - @m changed (@what: "state", "progress"): tell the
 * /admin/models/NAME/events followers; @what NULL: @m goes, they are let go.
 */
void admin_model_event(struct orchd *d, struct model_entry *m, const char *what);
