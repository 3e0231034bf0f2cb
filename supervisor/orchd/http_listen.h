#pragma once
/*
 * http_listen.h - orchd's public listener: its route tables and the checks
 * before them (http_listen.c). Thread: the loop.
 */
#include "base/err.h"

struct orchd;

/* http_start - listen on cfg.listen; ORCH_EIO (in use), ORCH_EINVAL, ORCH_ENOMEM. */
orch_err http_start(struct orchd *d, struct orch_errinfo *reterr);

/* http_stop - close the listener. */
void http_stop(struct orchd *d);
