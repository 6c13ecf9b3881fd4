#!/bin/sh
# Rebuilds the PTX of these kernels (CUDA 13.0): nvcc -arch=sm_90a -lineinfo -ptx, .file named by basename.
set -e
cd "$(dirname "$0")"
for cu in *.cu; do
  nvcc -arch=sm_90a -lineinfo -ptx "$cu" -o "${cu%.cu}.ptx"
done
for p in *.ptx; do
  sed -i -E 's#^(\s*\.file\s+[0-9]+\s+")[^"]*/([^"/]+\.cu)"#\1\2"#' "$p"
done
