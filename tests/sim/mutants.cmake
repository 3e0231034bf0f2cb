# The mutants of issues 50 and 61 (cmake/OrchMutant.cmake): bugs put, one at a
# time, into the real sources; each must make the suite fail, with the
# diagnosis named. Included by tests/CMakeLists.txt in the simulated build.
set(kernels_test_srcs gpu/kernels_test.c gpu/kernels_util.c)
set(kernels_libs orch_cuda_kernels orch_engine CUDA::cudart)
set(backend_libs orch_cuda_backend orch_engine orch_synth CUDA::cudart)

# An off-by-one row bound in the integer-dot mat-vec: the block past the last
# row reads the weights and writes the output one row past their ends.
orch_mutant(mmvq_row_bound SOURCE cuda/kernels/mmvq.cu
	FROM "if (r >= rows)" TO "if (r > rows)"
	SOURCES gpu/kernels_qdot_test.c gpu/kernels_util.c unit/cuda/qdot_emul.cu
	LIBS ${kernels_libs} T_ONLY test_mmvq
	EXPECT "mmvq_kernel.*: read of [0-9]+ bytes at 0x[0-9a-f]+: not device memory \\(0 bytes past the end")

# A missing __syncthreads in RMSNorm's block reduction: thread 0 reads the
# warps' partial sums without waiting for them (threads run in order here, so
# it finds them unwritten; written first, they would be a race).
orch_mutant(rmsnorm_no_barrier SOURCE cuda/kernels/rmsnorm.cu
	FROM "		part[threadIdx.x / 32] = s;\n	__syncthreads();"
	TO "		part[threadIdx.x / 32] = s;"
	SOURCES ${kernels_test_srcs} LIBS ${kernels_libs} T_ONLY test_norm_rope_swiglu
	EXPECT "rmsnorm_kernel.*__shared__ part.*(uninitialized|since the last __syncthreads)")

# A wrong shuffle mask in the Q8_K activation quantizer: lanes 16-31 call a
# shuffle whose mask does not name them.
orch_mutant(quant_q8k_mask SOURCE cuda/kernels/quant_q8.cu
	FROM "s += __shfl_xor_sync(0xffffffffu, s, 1);"
	TO "s += __shfl_xor_sync(0x0000ffffu, s, 1);"
	SOURCES gpu/kernels_qdot_test.c gpu/kernels_util.c unit/cuda/qdot_emul.cu
	LIBS ${kernels_libs} T_ONLY test_mmvq
	EXPECT "__shfl_xor_sync with a mask that does not name the calling lane")

# A decode graph that captured a stale size: every bucket's graph computes the
# one token it was first written for, so a batch of two replays stale logits
# for its second sequence.
orch_mutant(graph_stale_size SOURCE cuda/cuda_forward.c
	FROM "ce = run_layers(b, B, B, b->n_split);" TO "ce = run_layers(b, 1, 1, b->n_split);"
	SOURCES gpu/paged_test.c gpu/model_util.c unit/worker/engine/paged_copy.c
	LIBS ${backend_libs} T_ONLY test_preemption
	EXPECT "its tokens differ from alone")

# An out-of-bounds read of one element: RMSNorm's sum of squares reads x[n],
# past the last row.
orch_mutant(rmsnorm_read_past SOURCE cuda/kernels/rmsnorm.cu
	FROM "for (uint32_t i = threadIdx.x; i < n; i += THREADS) {"
	TO "for (uint32_t i = threadIdx.x; i <= n; i += THREADS) {"
	SOURCES ${kernels_test_srcs} LIBS ${kernels_libs} T_ONLY test_norm_rope_swiglu
	EXPECT "rmsnorm_kernel.*: read of 4 bytes at 0x[0-9a-f]+: not device memory \\(0 bytes past the end")

# One launch more a layer (issue 61): an RMSNorm before the FFN's that its real
# one overwrites. The values are the same; the GPU cost guard must fail on the count.
orch_mutant(launch_per_layer SOURCE cuda/cuda_forward.c
	FROM "	/* x += attention output, then the FFN norm */\n	TRY("
	TO "	TRY(cuk_rmsnorm(b->x, NULL, L->ffn_norm, hp->n_embd, hp->rms_eps, T, NULL, b->xn, b->st));\n	TRY("
	SOURCES ../bench/gpu_cost.c ../bench/bench_tables.c LIBS orch_cuda_backend orch_engine CUDA::cudart m
	RUN tests/sim/gpu_cost_guard.sh
	EXPECT "GUARD FAIL qwen2.5-0.5b-2l decode b1 ctx1024: launches \\+ graph nodes a token .*: more launches")
