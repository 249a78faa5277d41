extern "C" __global__ void __launch_bounds__(64) r_64_64_64_da56ce1a(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int lidx0 = threadIdx.x; /* 64 */
  __shared__ float temp0[2];
  bool alu0 = (lidx0==0);
  int alu1 = (lidx0/32);
  int alu2 = (lidx0%32);
  bool alu3 = (alu2==0);
  float acc0 = 0.0f;
  for (int ridx0 = 0; ridx0 < 64; ridx0++) {
    int alu4 = (ridx0*64);
    int alu5 = (alu4+lidx0);
    float val0 = *(data1+alu5);
    float val1 = *(data2+alu5);
    float alu6 = (val0*val1);
    acc0 = (acc0+alu6);
  }
  float val2 = __shfl_xor_sync(0xffffffffu, acc0, 16);
  float alu7 = (acc0+val2);
  float val3 = __shfl_xor_sync(0xffffffffu, alu7, 8);
  float alu8 = (alu7+val3);
  float val4 = __shfl_xor_sync(0xffffffffu, alu8, 4);
  float alu9 = (alu8+val4);
  float val5 = __shfl_xor_sync(0xffffffffu, alu9, 2);
  float alu10 = (alu9+val5);
  float val6 = __shfl_xor_sync(0xffffffffu, alu10, 1);
  float alu11 = (alu10+val6);
  if (alu3) *(temp0+alu1) = alu11;
  __syncthreads();
  float acc1 = 0.0f;
  for (int ridx3 = 0; ridx3 < 2; ridx3++) {
    float val7 = *(temp0+ridx3);
    acc1 = (acc1+val7);
  }
  if (alu0) *(data0+0) = acc1;
}
