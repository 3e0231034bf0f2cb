#pragma once
/*
 * admin_listen.h - the admin API's listeners (docs/http-api.md): HTTP/JSON
 * on a unix socket (mode 0660), and optionally on TCP with its own bearer
 * token; the routes are api/admin.h's. Thread: the loop.
 */
#include "base/err.h"

struct orchd;

/* admin_start - listen on the admin socket (and admin_listen); sets orchd.on_model_event. */
orch_err admin_start(struct orchd *d, struct orch_errinfo *reterr);

/* admin_stop - close the admin listeners and remove the socket. */
void admin_stop(struct orchd *d);
