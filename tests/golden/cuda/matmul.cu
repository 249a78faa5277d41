extern "C" __global__ void __launch_bounds__(256) r_16_64_4_64_4_64_97aae6b0(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int lidx1 = threadIdx.y; /* 4 */
  int gidx0 = blockIdx.x; /* 16 */
  int lidx0 = threadIdx.x; /* 64 */
  int alu0 = (lidx1*64);
  int alu1 = (gidx0*256);
  int alu2 = (alu0+alu1);
  int alu3 = (alu2+lidx0);
  float acc0 = 0.0f;
  for (int ridx2 = 0; ridx2 < 64; ridx2++) {
    int alu4 = (alu0+ridx2);
    int alu5 = (alu4+alu1);
    float val0 = *(data1+alu5);
    int alu6 = (ridx2*64);
    int alu7 = (alu6+lidx0);
    float val1 = *(data2+alu7);
    float alu8 = (val0*val1);
    acc0 = (acc0+alu8);
  }
  *(data0+alu3) = acc0;
}
