#!/bin/sh
# Rebuild the PTX of div_zero.cu: the guarded kernel and the unguarded twin.
set -e
cd "$(dirname "$0")"
nvcc -arch=sm_90a -lineinfo -ptx -DDIV_GUARD -o div_zero.ptx div_zero.cu
nvcc -arch=sm_90a -lineinfo -ptx -o div_zero__unguarded.ptx div_zero.cu
for f in div_zero.ptx div_zero__unguarded.ptx; do
  sed -i 's#^\(\s*\.file\s\+[0-9]\+\s\+"\)[^"]*/\([^"/]*"\)#\1\2#' "$f"
  ptxas -arch=sm_90a -o /dev/null "$f"
done
