#!/bin/sh
# Rebuilds the PTX of these kernels (CUDA 13.0): nvcc -arch=sm_90a -lineinfo -ptx, .file named by basename.
set -e
cd "$(dirname "$0")"
for cu in *.cu; do
  nvcc -arch=sm_90a -lineinfo -ptx "$cu" -o "${cu%.cu}.ptx"
done
nvcc -arch=sm_90a -lineinfo -ptx -DCONSUMER_PARITY\(it\)='((((it)/STAGES)&1)^1)' ring_all.cu -o ring_all__consumer_parity_flipped.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DCONSUMER_PARITY\(it\)='((((it)/STAGES)&1)^1)' gen_ring.cu -o gen_ring__consumer_parity_flipped.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DWAIT_ORDER gen_ring_order.cu -o gen_ring_order__waited.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DORDER_COUNT=2 gen_ring_order.cu -o gen_ring_order__count2.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DNO_ORDER_INIT gen_ring_order.cu -o gen_ring_order__uninit.ptx
for p in *.ptx; do
  sed -i -E 's#^(\s*\.file\s+[0-9]+\s+")[^"]*/([^"/]+\.cu)"#\1\2"#' "$p"
done
