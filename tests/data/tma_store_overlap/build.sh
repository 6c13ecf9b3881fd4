# Rebuilds the PTX of our tile_store kernel and its twins (CUDA 13.0): nvcc -arch=sm_90a -lineinfo
# -ptx, .file named by basename. tma_matmul__rows_overlap.ptx is the zoo's Triton tma_matmul.ptx
# with its tile row offset shifted by 6 instead of 7 (each tile's 128 rows start 64 apart).
set -e
cd "$(dirname "$0")"
for v in "" OVERLAP PEEK TWICE WARP WARP_SRC; do
  out=tile_store${v:+__$(echo "$v" | tr A-Z a-z)}.ptx
  nvcc -arch=sm_90a -lineinfo -ptx ${v:+-D$v} tile_store.cu -o "$out"
  sed -i -E 's#^(\s*\.file\s+[0-9]+\s+")[^"]*/([^"/]+\.cu)"#\1\2"#' "$out"
done
sed 's/shl.b32 	%r64, %r24, 7;/shl.b32 	%r64, %r24, 6;/' ../../zoo/triton/tma_matmul.ptx > tma_matmul__rows_overlap.ptx
