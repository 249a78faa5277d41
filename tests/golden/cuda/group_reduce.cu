extern "C" __global__ void __launch_bounds__(64) r_64_64_64_bb0e1f2c(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int lidx0 = threadIdx.x; /* 64 */
  __shared__ float temp0[64];
  bool alu0 = (lidx0==0);
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 64; ridx0++) {
    int alu1 = (ridx0*64);
    int alu2 = (alu1+lidx0);
    float val0 = *(data1+alu2);
    float val1 = *(data2+alu2);
    float alu3 = (val0*val1);
    acc0 = (acc0+alu3);
  }
  *(temp0+lidx0) = acc0;
  __syncthreads();
  float acc1 = 0.0f;
  for (int ridx3 = 0; ridx3 < 64; ridx3++) {
    float val2 = *(temp0+ridx3);
    acc1 = (acc1+val2);
  }
  if (alu0) *(data0+0) = acc1;
}
