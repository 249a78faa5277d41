extern "C" __global__ void __launch_bounds__(256) E_16_4_64_4_64_1854ad05(float* __restrict__ data0, const float* __restrict__ data1, const float* __restrict__ data2) {
  int lidx1 = threadIdx.y; /* 4 */
  int gidx0 = blockIdx.x; /* 16 */
  int lidx0 = threadIdx.x; /* 64 */
  int alu0 = (lidx1*64);
  int alu1 = (gidx0*256);
  int alu2 = (alu0+alu1);
  int alu3 = (alu2+lidx0);
  float val0 = *(data1+alu3);
  float val1 = *(data2+alu3);
  float alu4 = (val0+val1);
  float alu5 = (alu4*val0);
  float alu6 = (alu5+-1.0f);
  float alu7 = ((alu6!=alu6||alu6>0.0f)?alu6:0.0f);
  float alu8 = (alu7*1.44269504f);
  float alu9 = exp2f(alu8);
  float alu10 = (val1+2.0f);
  float alu11 = (1.0f/alu10);
  float alu12 = (alu9*alu11);
  *(data0+alu3) = alu12;
}
