# What scripts/gpu_session.sh runs and scripts/gpu_prepare.sh builds for it (sourced by both;
# $GPU_MODELS and $BENCH_DEFINES override these).
# The zoo models of tests/cuda/test_models_gpu.py's default list.
GPU_MODELS_DEFAULT=mnist_mlp,tutorial_cnn,cnn_cifar,resnet_block,resnet18,mobilenet_v2,efficientnet_b0,bitnet_mlp,transformer_block
# The benchmark compares the kernels' tuning knobs (kernels/cuda/tck_gemv.cuh) with the
# defaults (the empty first set): one library per set.
BENCH_DEFINES_DEFAULT=";TCK_MMA_ACC=2;TCK_MMA_ACC=4;TCK_MMA_PD=2"
gpu_models="${GPU_MODELS:-$GPU_MODELS_DEFAULT}"
bench_defines="${BENCH_DEFINES-$BENCH_DEFINES_DEFAULT}"
