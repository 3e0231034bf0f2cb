#pragma once
/*
 * kernels_util.h - what the kernel tests (kernels_test.c,
 * kernels_moe_test.c) share: device buffers poisoned with NaN, random
 * inputs, the relative error against a double reference, random matrices.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rng.h"
#include "kernels.h"

/* The inputs' generator (each test seeds it). */
extern struct rng kt_rng;

/* ORCH_KT_QUICK=1: fewer draws and sizes, for runs under compute-sanitizer; the default on the
 * simulated device (ORCH_KT_QUICK=0 there runs the full sizes, for minutes). */
extern bool kt_quick;

/*
 * kt_start - what each kernel test's main does first: skip (77) without a CUDA
 * device, fail (1) when a kernel's launch shape does not fit device 0, else seed
 * kt_rng from the clock or ORCH_KT_SEED (fresh inputs every run; the seed is
 * printed) and return -1 to go on.
 */
int kt_start(void);

/* A T_ check that a CUDA call succeeded. */
#define CK(call) T_TRUE((call) == cudaSuccess)

/* dev - @bytes of device memory, every byte 0xff (NaN for floats: unwritten outputs show). */
void *dev(size_t bytes);

/* fill - @n normal-ish random floats times @scale. */
void fill(float *x, size_t n, float scale);

/* rel_err - ‖a − b‖ / ‖b‖, NaN when any element of @a is not finite. */
double rel_err(const float *a, const double *b, size_t n);

/* make_mat - a random @rows × @ne0 matrix of @type on the device, and its exact dequantized
 * values in @deq. */
void *make_mat(uint32_t type, uint32_t rows, uint32_t ne0, struct cuk_mat *w, float *deq);
