// The tma_scale kernel alone (its PTX, tma_scale.ptx, is what host_driver.cpp loads).
#include "tma_scale.cuh"
