__kernel void E_16_4_64_4_64_757c6172(__global float* restrict data0, __global const float* restrict data1, __global const float* restrict data2) {
  int lidx1 = get_local_id(1); /* 4 */
  int gidx0 = get_group_id(0); /* 16 */
  int lidx0 = get_local_id(0); /* 64 */
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
  float alu9 = exp2(alu8);
  float alu10 = (val1+2.0f);
  float alu11 = (1.0f/alu10);
  float alu12 = (alu9*alu11);
  *(data0+alu3) = alu12;
}
