__kernel void r_64_64_64_98b174bb(__global float* restrict data0, __global const float* restrict data1, __global const float* restrict data2) {
  int lidx0 = get_local_id(0); /* 64 */
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
