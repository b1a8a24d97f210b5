# What scripts/gpu_session.sh runs and scripts/gpu_prepare.sh builds for it (sourced by both;
# $GPU_MODELS and $BENCH_DEFINES override these).
# The zoo models of tests/cuda/test_models_gpu.py's default list.
GPU_MODELS_DEFAULT=mnist_mlp,tutorial_cnn,cnn_cifar,resnet_block,resnet18,mobilenet_v2,efficientnet_b0,bitnet_mlp,transformer_block
# The benchmark compares the kernels' tuning knobs (kernels/cuda/tck_gemv.cuh) with the
# defaults (the empty first set): one library per set, each passing the emulated kernel test.
# What each set asks (docs/performance.md, "Prepared for the next GPU run"):
#   ACC=4, PD=2 (+ACC=4)  shorter mma chains; fewer registers (PD=8/RT holds 64 for loads)
#   PD=1 SMALL_KW=16      batch <= 4: 512 threads of 46 registers, one superblock a warp
#   EIGHT_RT=1 EIGHT_KW=8 batch 8: 16 rows a block (twice the blocks)
#   LARGE_KW=4 LARGE_WR=2 M > 8: 32 rows a block (4x the blocks; x read 4x as often)
#   MB_LARGE=8 / 32 / 64  M > 8 in groups of 8 (the batch-8 kernel) / 32 / 64 rows of x
#   GRID_Y=264 (396 PD=2) 2 (3) blocks an SM of 132, each looping over row blocks: no tail
#                         wave, x staged once a block when K is one chunk
#   PIPE=1 PD=2 (PD=1)    a warp loads its next round of superblocks while it multiplies
#                         the current one (software pipeline; with GRID_Y=264 across row
#                         blocks too)
#   LARGE_CS=2, =4 (+MB_LARGE=64), EIGHT_CS=2, SMALL_CS=2
#                         split-K over a thread-block cluster of 4 (2) blocks that add their
#                         partial sums through distributed shared memory (sm_90): M > 8 (with
#                         x read once for M = 64), batch 8, batch <= 4
BENCH_DEFINES_DEFAULT=";TCK_MMA_ACC=4;TCK_MMA_PD=2;TCK_MMA_PD=2 TCK_MMA_ACC=4\
;TCK_MMA_PD=1 TCK_MMA_SMALL_KW=16;TCK_MMA_EIGHT_RT=1 TCK_MMA_EIGHT_KW=8\
;TCK_MMA_LARGE_KW=4 TCK_MMA_LARGE_WR=2;TCK_MMA_MB_LARGE=8\
;TCK_MMA_MB_LARGE=32 TCK_MMA_LARGE_KW=2 TCK_MMA_LARGE_WR=4;TCK_MMA_MB_LARGE=64\
;TCK_MMA_GRID_Y=264;TCK_MMA_GRID_Y=396 TCK_MMA_PD=2\
;TCK_MMA_PIPE=1 TCK_MMA_PD=2;TCK_MMA_PIPE=1 TCK_MMA_PD=1\
;TCK_MMA_PIPE=1 TCK_MMA_PD=2 TCK_MMA_GRID_Y=264\
;TCK_MMA_LARGE_CS=2;TCK_MMA_LARGE_CS=4;TCK_MMA_MB_LARGE=64 TCK_MMA_LARGE_CS=4;TCK_MMA_EIGHT_CS=2\
;TCK_MMA_SMALL_CS=2"
# The kernel test runs a second time with these knobs (gpu_session.sh's kernels_knobs): the
# paths the defaults do not take (split-K over a thread-block cluster in each M bucket),
# checked on the hardware case by case, not only by the benchmark's three shapes.
KERNEL_DEFINES_DEFAULT="TCK_MMA_SMALL_CS=2 TCK_MMA_EIGHT_CS=2 TCK_MMA_LARGE_CS=4"
gpu_models="${GPU_MODELS:-$GPU_MODELS_DEFAULT}"
kernel_defines="${KERNEL_DEFINES-$KERNEL_DEFINES_DEFAULT}"
bench_defines="${BENCH_DEFINES-$BENCH_DEFINES_DEFAULT}"
