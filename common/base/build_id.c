/* build_id.c - the build id CMake computed when the tree was configured (build_id.h). */
#include "build_id.h"

#ifndef ORCH_BUILD_ID
#define ORCH_BUILD_ID "orch-unknown"
#endif

const char *
orch_build_id(void)
{
	return ORCH_BUILD_ID;
}
