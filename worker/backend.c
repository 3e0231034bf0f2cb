#include "backend.h"

#include <string.h>

orch_err
be_for_device(const char *device, const struct be_ops **ret, struct orch_errinfo *reterr)
{
	if (strcmp(device, "cpu") == 0) {
		*ret = &be_cpu_ops;
		return ORCH_OK;
	}
	if (strncmp(device, "cuda:", 5) == 0)
		return orch_errf(
		        reterr, ORCH_EUNSUPPORTED,
		        "device %s: the CUDA backend is not part of this build yet; use --device cpu",
		        device);
	return orch_errf(reterr, ORCH_EINVAL, "unknown device '%s' (cpu or cuda:N)", device);
}
