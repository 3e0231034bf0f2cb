/*
 * backend.c - the backend of a device. The CUDA backend is a module
 * (liborch-cuda.so, built from cuda/) opened only for a cuda:N device, so a
 * worker runs on machines without the CUDA libraries; it is looked for in
 * $ORCH_CUDA_BACKEND, then beside the executable (../lib and ../lib/orch).
 */
#include "backend.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct be_ops *
open_cuda(char *why, size_t why_len)
{
	static const struct be_ops *ops;
	const char *env = getenv("ORCH_CUDA_BACKEND");
	char exe[PATH_MAX], path[PATH_MAX + 32];
	const char *rel[] = {"../lib/liborch-cuda.so", "../lib/orch/liborch-cuda.so"};
	ssize_t n;

	if (ops != NULL)
		return ops;
	snprintf(why, why_len, "liborch-cuda.so not found (set ORCH_CUDA_BACKEND)");
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	char *slash = strrchr(exe, '/');
	if (slash != NULL)
		slash[1] = '\0';
	for (int i = -1; i < 2; i++) {
		if (i < 0 && env == NULL)
			continue;
		if (i < 0)
			snprintf(path, sizeof(path), "%s", env);
		else
			snprintf(path, sizeof(path), "%s%s", exe, rel[i]);
		if (i >= 0 && access(path, R_OK) != 0)
			continue;
		void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (h == NULL) {
			snprintf(why, why_len, "%s", dlerror());
			return NULL;
		}
		if ((ops = dlsym(h, "be_cuda_ops")) == NULL)
			snprintf(why, why_len, "%.400s has no be_cuda_ops", path);
		return ops;
	}
	return NULL;
}

orch_err
be_for_device(const char *device, const struct be_ops **ret, struct orch_errinfo *reterr)
{
	char why[512];

	if (strcmp(device, "cpu") == 0) {
		*ret = &be_cpu_ops;
		return ORCH_OK;
	}
	if (strncmp(device, "cuda:", 5) == 0) {
		if ((*ret = open_cuda(why, sizeof(why))) != NULL)
			return ORCH_OK;
		return orch_errf(reterr, ORCH_EUNSUPPORTED,
		                 "device %s: the CUDA backend cannot be loaded: %s", device, why);
	}
	return orch_errf(reterr, ORCH_EINVAL, "unknown device '%s' (cpu or cuda:N)", device);
}
