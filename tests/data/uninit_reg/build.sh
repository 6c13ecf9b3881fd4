#!/bin/sh
# Rebuild the PTX of uninit_reg.cu (nvcc 13, sm_90a): the kernels as written and their twins.
set -e
cd "$(dirname "$0")"
nvcc -arch=sm_90a -lineinfo -ptx uninit_reg.cu -o uninit_reg.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DACC_INIT='= 0.0f' -DPICK_ELSE -DSRC_LANE=0 uninit_reg.cu -o uninit_reg__init.ptx
nvcc -arch=sm_90a -lineinfo -ptx -DSRC_LANE=1 uninit_reg.cu -o uninit_reg__lane1.ptx
for f in uninit_reg.ptx uninit_reg__init.ptx uninit_reg__lane1.ptx; do
    sed -i 's|^\(\s*\.file\s\+1\s\+"\).*/\([^/"]*"\)|\1\2|' "$f"
    ptxas -arch=sm_90a "$f" -o /dev/null
done
