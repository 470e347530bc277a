// A standalone harness behind docs/llama-exactness.md ("Q8_0 and Q5_0 rows interleaved 8 at a time"): Q8_0
// weights 8 rows interleaved against vec_dot's order, one thread, CPU ms per column, and whether the interleaved
// kernel gives every column its bytes alone. Not built by setup.sh or the tests; run by hand:
//   gcc -O3 -mavx2 -mfma -mf16c rows8_q8_0.c -o rows8 && ./rows8 896 4864 7 1 4 8 16
//   gcc -O3 -mavx2 -mfma -mf16c -mavxvnni -DVNNI rows8_q8_0.c -o rows8_vnni && ./rows8_vnni 896 4864 7 1 4 8 16
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define QK 32
typedef struct { uint16_t d; int8_t qs[QK]; } bq8;             // ggml's block_q8_0
typedef struct { uint16_t d[8]; int8_t qs[8 * QK]; } bq8x8;    // 8 rows: qs[g*32 + r*4 + b] = row r, byte 4g+b
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
// vec_dot order, tiles of 4 rows x 2 columns (as tinyBLAS's gemm4xN<2>)
static void ref(const bq8*A,int M,int nb,const bq8*B,int N,float*C){
  for(int i=0;i<M;i+=4) for(int j=0;j<N;j+=2){ __m256 acc[2][4]; for(int a=0;a<2;a++)for(int b=0;b<4;b++)acc[a][b]=_mm256_setzero_ps();
    int nj = (N-j>=2)?2:1;
    for(int l=0;l<nb;l++){ __m256i av[4], au[4]; for(int r=0;r<4;r++){av[r]=_mm256_loadu_si256((const __m256i*)A[(i+r)*nb+l].qs); au[r]=_mm256_sign_epi8(av[r],av[r]);}
      for(int c=0;c<nj;c++){ __m256i bv=_mm256_loadu_si256((const __m256i*)B[(j+c)*nb+l].qs); float db=h2f(B[(j+c)*nb+l].d);
        for(int r=0;r<4;r++){ __m256i s=dot4(_mm256_setzero_si256(), au[r], _mm256_sign_epi8(bv,av[r]));
          acc[c][r]=_mm256_fmadd_ps(_mm256_set1_ps(h2f(A[(i+r)*nb+l].d)*db), _mm256_cvtepi32_ps(s), acc[c][r]);}}}
    for(int c=0;c<nj;c++)for(int r=0;r<4;r++)C[(j+c)*M+i+r]=hsum8(acc[c][r]);}
}
// interleaved: 8 rows, RN columns at a time; per block: 8 groups of (load A, abs, per column: bcast, sign, dot4), then cvt+fma per column
#define RN 4
static void r8(const bq8x8*A,int M,int nb,const bq8*B,int N,float*C){
  for(int i=0;i<M/8;i++) for(int j=0;j<N;j+=RN){ int nj=N-j<RN?N-j:RN; __m256 acc[RN]; for(int c=0;c<RN;c++)acc[c]=_mm256_setzero_ps();
    for(int l=0;l<nb;l++){ const bq8x8*a=&A[i*nb+l]; __m256 da=_mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)a->d));
      __m256i is[RN]; for(int c=0;c<RN;c++) is[c]=_mm256_setzero_si256();
      for(int g=0;g<8;g++){ __m256i av=_mm256_loadu_si256((const __m256i*)(a->qs+g*32)); __m256i au=_mm256_sign_epi8(av,av);
        for(int c=0;c<nj;c++){ int32_t b4; memcpy(&b4, B[(j+c)*nb+l].qs+4*g, 4);
          is[c]=dot4(is[c], au, _mm256_sign_epi8(_mm256_set1_epi32(b4), av));}}
      for(int c=0;c<nj;c++) acc[c]=_mm256_fmadd_ps(_mm256_mul_ps(da,_mm256_set1_ps(h2f(B[(j+c)*nb+l].d))), _mm256_cvtepi32_ps(is[c]), acc[c]);}
    for(int c=0;c<nj;c++) _mm256_storeu_ps(C+(j+c)*M+i*8, acc[c]);}
}
int main(int argc,char**argv){ int K=atoi(argv[1]),M=atoi(argv[2]),reps=atoi(argv[3]); int nb=K/QK; srand(1);
  bq8*A=malloc(sizeof(bq8)*M*nb); bq8x8*A8=malloc(sizeof(bq8x8)*(M/8)*nb);
  for(long x=0;x<(long)M*nb;x++){A[x].d=_cvtss_sh(0.001f+rand()/(float)RAND_MAX*0.01f,0); for(int q=0;q<QK;q++)A[x].qs[q]=(rand()%255)-127;}
  for(int i=0;i<M/8;i++)for(int l=0;l<nb;l++){bq8x8*o=&A8[i*nb+l]; for(int r=0;r<8;r++){o->d[r]=A[(i*8+r)*nb+l].d; for(int g=0;g<8;g++)for(int b=0;b<4;b++)o->qs[g*32+r*4+b]=A[(i*8+r)*nb+l].qs[4*g+b];}}
  for(int a=4;a<argc;a++){ int N=atoi(argv[a]); bq8*B=malloc(sizeof(bq8)*N*nb); for(long x=0;x<(long)N*nb;x++){B[x].d=_cvtss_sh(0.01f,0); for(int q=0;q<QK;q++)B[x].qs[q]=(rand()%255)-127;}
    float*C1=malloc(4*M*N),*C2=malloc(4*M*N); double b1=1e30,b2=1e30;
    for(int r=0;r<reps;r++){double t=cpu_ms(); ref(A,M,nb,B,N,C1); t=cpu_ms()-t; if(t<b1)b1=t; t=cpu_ms(); r8(A8,M,nb,B,N,C2); t=cpu_ms()-t; if(t<b2)b2=t;}
    double md=0; for(long x=0;x<(long)M*N;x++){double d=C1[x]-C2[x]; if(d<0)d=-d; if(d>md)md=d;}
    // r8 at n columns vs r8 one column at a time: bitwise
    float*C3=malloc(4*M); int same=1; for(int c=0;c<N;c++){ r8(A8,M,nb,B+c*nb,1,C3); if(memcmp(C3,C2+c*M,4*M))same=0;}
    printf("N=%2d  vec_dot order %.3f ms/col   interleaved-8 %.3f ms/col   x%.2f   max|diff| %.2g   r8 width-invariant %s\n",N,b1/N,b2/N,b1/b2,md,same?"yes":"NO");
    free(B);free(C1);free(C2);free(C3);}
  return 0;}
