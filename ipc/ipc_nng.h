#pragma once
/*
 * ipc_nng.h - internal to ipc/: NNG error numbers as orch_err codes.
 */
#include "base/err.h"

/*
 * ipc_nng_err - NNG error @rv as an orch_err (timeouts ORCH_EAGAIN, closed
 * ORCH_ECLOSED, bad addresses ORCH_EINVAL, else ORCH_EIO) with the message
 * "@what @url: NNG's text".
 */
orch_err ipc_nng_err(int rv, const char *what, const char *url, struct orch_errinfo *reterr);
