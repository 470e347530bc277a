// The same for Q5_0 (fifth bits as one 32-bit word per 4-value group, nibbles of two groups per 32 bytes):
//   gcc -O3 -mavx2 -mfma -mf16c [-mavxvnni -DVNNI] rows8_q5_0.c -o rows8_q5 && ./rows8_q5 896 4864 7 1 4 8 16
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define QK 32
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK/2]; } bq5;  // ggml's block_q5_0
typedef struct { uint16_t d; int8_t qs[QK]; } bq8;
// 8 rows: nib[p*32 + r*4 + b]: low nibble = row r value 4*(2p)+b, high nibble = row r value 4*(2p+1)+b (p = 0..3)
// hb[g]: bit (r*4+b) = high bit of row r value 4g+b
typedef struct { uint16_t d[8]; uint32_t hb[8]; uint8_t nib[4*32]; } bq5x8;
static double cpu_ms(void){struct timespec t;clock_gettime(CLOCK_THREAD_CPUTIME_ID,&t);return t.tv_sec*1e3+t.tv_nsec/1e6;}
static inline float h2f(uint16_t h){return _cvtsh_ss(h);}
static inline float hsum8(__m256 x){__m128 r=_mm_add_ps(_mm256_extractf128_ps(x,1),_mm256_castps256_ps128(x));
  r=_mm_add_ps(r,_mm_movehl_ps(r,r)); r=_mm_add_ss(r,_mm_movehdup_ps(r)); return _mm_cvtss_f32(r);}
static inline __m256i dot4(__m256i acc, __m256i ua, __m256i sb){
#ifdef VNNI
  return _mm256_dpbusd_avx_epi32(acc, ua, sb);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_set1_epi16(1), _mm256_maddubs_epi16(ua, sb)));
#endif
}
static inline __m256i bits32(uint32_t x){ // byte i = 0xFF if bit i of x set
  __m256i v=_mm256_shuffle_epi8(_mm256_set1_epi32(x),_mm256_set_epi64x(0x0303030303030303,0x0202020202020202,0x0101010101010101,0));
  return _mm256_cmpeq_epi8(_mm256_or_si256(v,_mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)),_mm256_set1_epi64x(-1));}
static inline __m256i q5load(const bq5*b){ __m128i x=_mm_loadu_si128((const __m128i*)b->qs); uint32_t h; memcpy(&h,b->qh,4);
  __m256i nib=_mm256_and_si256(_mm256_set1_epi8(15),_mm256_insertf128_si256(_mm256_castsi128_si256(x),_mm_srli_epi16(x,4),1));
  return _mm256_or_si256(nib,_mm256_andnot_si256(bits32(h),_mm256_set1_epi8((char)0xF0)));}
static void ref(const bq5*A,int M,int nb,const bq8*B,int N,float*C){
  for(int i=0;i<M;i+=4) for(int j=0;j<N;j+=2){ __m256 acc[2][4]; for(int a=0;a<2;a++)for(int b=0;b<4;b++)acc[a][b]=_mm256_setzero_ps();
    int nj=(N-j>=2)?2:1;
    for(int l=0;l<nb;l++){ __m256i av[4],au[4]; for(int r=0;r<4;r++){av[r]=q5load(&A[(i+r)*nb+l]); au[r]=_mm256_sign_epi8(av[r],av[r]);}
      for(int c=0;c<nj;c++){ __m256i bv=_mm256_loadu_si256((const __m256i*)B[(j+c)*nb+l].qs); float db=h2f(B[(j+c)*nb+l].d);
        for(int r=0;r<4;r++){ __m256i s=dot4(_mm256_setzero_si256(),au[r],_mm256_sign_epi8(bv,av[r]));
          acc[c][r]=_mm256_fmadd_ps(_mm256_set1_ps(h2f(A[(i+r)*nb+l].d)*db),_mm256_cvtepi32_ps(s),acc[c][r]);}}}
    for(int c=0;c<nj;c++)for(int r=0;r<4;r++)C[(j+c)*M+i+r]=hsum8(acc[c][r]);}
}
#define RN 4
static void r8(const bq5x8*A,int M,int nb,const bq8*B,int N,float*C){
  const __m256i m4=_mm256_set1_epi8(15), f0=_mm256_set1_epi8((char)0xF0);
  for(int i=0;i<M/8;i++) for(int j=0;j<N;j+=RN){ int nj=N-j<RN?N-j:RN; __m256 acc[RN]; for(int c=0;c<RN;c++)acc[c]=_mm256_setzero_ps();
    for(int l=0;l<nb;l++){ const bq5x8*a=&A[i*nb+l]; __m256 da=_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)a->d));
      __m256i is[RN]; for(int c=0;c<RN;c++) is[c]=_mm256_setzero_si256();
      for(int p=0;p<4;p++){ __m256i raw=_mm256_loadu_si256((const __m256i*)(a->nib+p*32));
        for(int h=0;h<2;h++){ int g=2*p+h; __m256i nib=h?_mm256_and_si256(_mm256_srli_epi16(raw,4),m4):_mm256_and_si256(raw,m4);
          __m256i av=_mm256_or_si256(nib,_mm256_andnot_si256(bits32(a->hb[g]),f0)); __m256i au=_mm256_sign_epi8(av,av);
          for(int c=0;c<nj;c++){ int32_t b4; memcpy(&b4,B[(j+c)*nb+l].qs+4*g,4);
            is[c]=dot4(is[c],au,_mm256_sign_epi8(_mm256_set1_epi32(b4),av));}}}
      for(int c=0;c<nj;c++) acc[c]=_mm256_fmadd_ps(_mm256_mul_ps(da,_mm256_set1_ps(h2f(B[(j+c)*nb+l].d))),_mm256_cvtepi32_ps(is[c]),acc[c]);}
    for(int c=0;c<nj;c++) _mm256_storeu_ps(C+(j+c)*M+i*8,acc[c]);}
}
static int val(const bq5*b,int k){ int nib=k<16?(b->qs[k]&15):(b->qs[k-16]>>4); uint32_t h; memcpy(&h,b->qh,4); return (nib|(((h>>k)&1)<<4))-16;}
int main(int argc,char**argv){ int K=atoi(argv[1]),M=atoi(argv[2]),reps=atoi(argv[3]); int nb=K/QK; srand(1);
  bq5*A=malloc(sizeof(bq5)*M*nb); bq5x8*A8=calloc((M/8)*nb,sizeof(bq5x8));
  for(long x=0;x<(long)M*nb;x++){A[x].d=_cvtss_sh(0.001f+rand()/(float)RAND_MAX*0.01f,0); for(int q=0;q<16;q++)A[x].qs[q]=rand()&255; for(int q=0;q<4;q++)A[x].qh[q]=rand()&255;}
  for(int i=0;i<M/8;i++)for(int l=0;l<nb;l++){bq5x8*o=&A8[i*nb+l]; for(int r=0;r<8;r++){const bq5*s=&A[(i*8+r)*nb+l]; o->d[r]=s->d;
      for(int g=0;g<8;g++)for(int b=0;b<4;b++){int v=val(s,4*g+b)+16; o->nib[(g/2)*32+r*4+b]|=(uint8_t)((v&15)<<(4*(g%2))); if(v&16)o->hb[g]|=1u<<(r*4+b);}}}
  for(int a=4;a<argc;a++){ int N=atoi(argv[a]); bq8*B=malloc(sizeof(bq8)*N*nb); for(long x=0;x<(long)N*nb;x++){B[x].d=_cvtss_sh(0.01f,0); for(int q=0;q<QK;q++)B[x].qs[q]=(rand()%255)-127;}
    float*C1=malloc(4*M*N),*C2=malloc(4*M*N); double b1=1e30,b2=1e30;
    for(int r=0;r<reps;r++){double t=cpu_ms(); ref(A,M,nb,B,N,C1); t=cpu_ms()-t; if(t<b1)b1=t; t=cpu_ms(); r8(A8,M,nb,B,N,C2); t=cpu_ms()-t; if(t<b2)b2=t;}
    double md=0,mx=0; for(long x=0;x<(long)M*N;x++){double d=C1[x]-C2[x]; if(d<0)d=-d; if(d>md)md=d; if(C1[x]>mx)mx=C1[x];}
    float*C3=malloc(4*M); int same=1; for(int c=0;c<N;c++){ r8(A8,M,nb,B+c*nb,1,C3); if(memcmp(C3,C2+c*M,4*M))same=0;}
    printf("N=%2d  vec_dot order %.3f ms/col   interleaved-8 %.3f ms/col   x%.2f   max|diff| %.2g (of %.2g)   width-invariant %s\n",N,b1/N,b2/N,b1/b2,md,mx,same?"yes":"NO");
    free(B);free(C1);free(C2);free(C3);}
  return 0;}
