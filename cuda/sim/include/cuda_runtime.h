#pragma once
/*
 * cuda_runtime.h (simulated device) - the runtime API, and for C++ the
 * device language (cusim/device.h).
 */
#include "cuda_runtime_api.h"
#ifdef __cplusplus
#include "cusim/device.h"
#endif
