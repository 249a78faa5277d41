__kernel void r_3_3_4_3_3_8_2_2_8_2_2_50fc25e0(__global float* restrict data0, __global const float* restrict data1, __global const float* restrict data2) {
  int lidx2 = get_local_id(2); /* 8 */
  int lidx1 = get_local_id(1); /* 2 */
  int lidx0 = get_local_id(0); /* 2 */
  int gidx1 = get_group_id(1); /* 3 */
  int gidx0 = get_group_id(0); /* 3 */
  int alu0 = (lidx2*36);
  int alu1 = (lidx1*6);
  int alu2 = (alu0+alu1);
  int alu3 = (alu2+lidx0);
  int alu4 = (gidx1*12);
  int alu5 = (alu3+alu4);
  int alu6 = (gidx0*2);
  int alu7 = (alu5+alu6);
  int alu8 = (lidx1*8);
  int alu9 = (gidx1*16);
  float acc0 = 0.0f;
  for (int ridx4 = 0; ridx4 < 4; ridx4++) {
    int alu10 = (ridx4*64);
    int alu11 = (ridx4*9);
    for (int ridx5 = 0; ridx5 < 3; ridx5++) {
      int alu12 = (ridx5*8);
      int alu13 = (alu12+alu8);
      int alu14 = (alu13+lidx0);
      int alu15 = (alu14+alu9);
      int alu16 = (ridx5*3);
      int alu17 = (alu0+alu16);
      for (int ridx6 = 0; ridx6 < 3; ridx6++) {
        int alu18 = (alu15+ridx6);
        int alu19 = (alu18+alu6);
        int alu20 = (alu19+alu10);
        float val0 = *(data1+alu20);
        int alu21 = (alu17+ridx6);
        int alu22 = (alu21+alu11);
        float val1 = *(data2+alu22);
        float alu23 = (val0*val1);
        acc0 = (acc0+alu23);
      }
    }
  }
  float alu24 = ((acc0!=acc0||acc0>0.0f)?acc0:0.0f);
  *(data0+alu7) = alu24;
}
