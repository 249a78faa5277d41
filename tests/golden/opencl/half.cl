static inline float tg_u2f(unsigned int u) { return as_float(u); }
static inline unsigned int tg_f2u(float f) { return as_uint(f); }
static inline float tg_h2f(ushort h) { return vload_half(0, (const half*)&h); }
static inline ushort tg_f2h(float f) { uint u = as_uint(f); ushort h; vstore_half_rte(f, 0, (half*)&h); return (u & 0x7fffffffu) > 0x7f800000u ? (ushort)((u >> 16 & 0x8000u) | 0x7e00u) : h; }
static inline float tg_b2f(unsigned short h) { return tg_u2f((unsigned int)h << 16); }
static inline unsigned short tg_f2b(float f) { unsigned int x = tg_f2u(f); if ((x & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((x >> 16) | 0x40u);
  return (unsigned short)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16); }
__kernel void E_16_4_64_4_64_6c667ece(__global unsigned short* restrict data0, __global const float* restrict data1) {
  int lidx1 = get_local_id(1); /* 4 */
  int gidx0 = get_group_id(0); /* 16 */
  int lidx0 = get_local_id(0); /* 64 */
  int alu0 = (lidx1*64);
  int alu1 = (gidx0*256);
  int alu2 = (alu0+alu1);
  int alu3 = (alu2+lidx0);
  float val0 = *(data1+alu3);
  float alu4 = tg_h2f(tg_f2h(((float)val0)));
  float alu5 = tg_h2f(tg_f2h((alu4*2.0f)));
  float alu6 = tg_b2f(tg_f2b(((float)alu5)));
  *(data0+alu3) = tg_f2b(alu6);
}
