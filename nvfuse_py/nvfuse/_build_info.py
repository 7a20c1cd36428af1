"""What this build of nvfuse was compiled against (written by CMake)."""

TORCH_VERSION = "2.11.0+cu130"
TORCH_CUDA_VERSION = "13.0"
