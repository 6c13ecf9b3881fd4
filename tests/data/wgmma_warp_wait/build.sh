#!/bin/sh
# Rebuilds the PTX (CUDA 13.0): nvcc -arch=sm_90a -lineinfo -ptx, .file named by basename.
set -e
cd "$(dirname "$0")"
nvcc -arch=sm_90a -lineinfo -ptx wgmma_warp_wait.cu -o wgmma_warp_wait.ptx
sed -i -E 's#^(\s*\.file\s+[0-9]+\s+")[^"]*/([^"/]+\.cu)"#\1\2"#' wgmma_warp_wait.ptx
