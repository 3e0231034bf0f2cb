#pragma once
/* cuda_profiler_api.h (simulated device) - cudaProfilerStart/Stop, no-ops here. */
#include "cuda_runtime_api.h"
