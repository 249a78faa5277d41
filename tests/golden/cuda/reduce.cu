extern "C" __global__ void __launch_bounds__(64) r_64_64_64_7d257f59(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int lidx0 = threadIdx.x; /* 64 */
  int alu0 = (lidx0*64);
  float acc0 = 0.0f;
  for (int ridx1 = 0; ridx1 < 64; ridx1++) {
    int alu1 = (ridx1+alu0);
    float val0 = *(data1+alu1);
    float val1 = *(data2+alu1);
    float alu2 = (val0*val1);
    acc0 = (acc0+alu2);
  }
  *(data0+lidx0) = acc0;
}
