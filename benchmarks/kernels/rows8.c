// A standalone harness behind docs/llama-exactness.md ("Q8_0 and Q5_0 rows interleaved 8 at a time"): Q8_0 or
// Q5_0 weights 8 rows interleaved (the layout of scripts/patches/llama-cpp-q8-q5-rows8.patch) against
// vec_dot's order (tinyBLAS's 4-row x 2-column tiles), one thread, CPU ms per column; the largest difference
// between the two; and whether the interleaved kernel gives every column its bytes alone. Not built by
// setup.sh or the tests; run by hand (TYPE: q8_0 or q5_0; then k, rows, repetitions, column counts):
//   gcc -O3 -mavx2 -mfma -mf16c rows8.c -o rows8 && ./rows8 q5_0 896 4864 7 1 4 8 16
//   gcc -O3 -mavx2 -mfma -mf16c -mavxvnni -DVNNI rows8.c -o rows8_vnni && ./rows8_vnni q5_0 896 4864 7 1 4 8 16
//   gcc -O3 -mavx2 -mfma -mf16c -mavx512vnni -mavx512vl -DVNNI512 rows8.c -o rows8_v512 && ./rows8_v512 q5_0 896 4864 7 1 4 8 16
// (-DVNNI: the VEX AVX-VNNI vpdpbusd; -DVNNI512: the EVEX AVX512-VNNI one on 256-bit registers; each only where the
// CPU has it: /proc/cpuinfo's avx_vnni, or avx512_vnni and avx512vl)
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#define QK 32
#define INLINE static inline __attribute__((always_inline))
typedef struct { uint16_t d; int8_t qs[QK]; } bq8;                   // ggml's block_q8_0 (the activations too)
typedef struct { uint16_t d; uint8_t qh[4]; uint8_t qs[QK / 2]; } bq5;  // ggml's block_q5_0
// 8 rows: qs[32 g + 4 r + i] = row r's value 4 g + i
typedef struct { uint16_t d[8]; int8_t qs[8 * QK]; } bq8x8;
// 8 rows: qs[32 p + 4 r + i]: low nibble row r's value 8 p + i, high nibble its value 8 p + 4 + i; qh[g] bit 4 r + i:
// the fifth bit of row r's value 4 g + i
typedef struct { uint16_t d[8]; uint32_t qh[8]; uint8_t qs[4 * QK]; } bq5x8;

static double cpu_ms(void) { struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
static inline float h2f(uint16_t h) { return _cvtsh_ss(h); }
static inline float hsum8(__m256 x) {
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(x, 1), _mm256_castps256_ps128(x));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r)); r = _mm_add_ss(r, _mm_movehdup_ps(r)); return _mm_cvtss_f32(r);
}
static inline __m256i dot4(__m256i acc, __m256i u, __m256i s) {  // + per lane: 4 products of unsigned u, signed s
#if defined(VNNI512)
  return _mm256_dpbusd_epi32(acc, u, s);
#elif defined(VNNI)
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#else
  return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_set1_epi16(1), _mm256_maddubs_epi16(u, s)));
#endif
}
static inline __m256i bits32(uint32_t x) {  // byte i: 0xFF where bit i of x is set
  __m256i v = _mm256_shuffle_epi8(_mm256_set1_epi32(x), _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  return _mm256_cmpeq_epi8(_mm256_or_si256(v, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)), _mm256_set1_epi64x(-1));
}
static inline __m256i q5_values(__m256i nibbles, uint32_t fifth) {  // (nibble | bit << 4) - 16, as signed bytes
  return _mm256_or_si256(nibbles, _mm256_andnot_si256(bits32(fifth), _mm256_set1_epi8((char) 0xF0)));
}

// one ggml block's 32 values as signed bytes (q5: the Q5_0 type; a constant where these are inlined)
INLINE __m256i row_values(const void *b, int q5) {
  if (!q5) return _mm256_loadu_si256((const __m256i *) ((const bq8 *) b)->qs);
  const bq5 *x = b; __m128i lo = _mm_loadu_si128((const __m128i *) x->qs); uint32_t h; memcpy(&h, x->qh, 4);
  return q5_values(_mm256_and_si256(_mm256_set1_epi8(15), _mm256_insertf128_si256(_mm256_castsi128_si256(lo), _mm_srli_epi16(lo, 4), 1)), h);
}
// group g of an interleaved block: values 4 g .. 4 g + 3 of each of the 8 rows
INLINE __m256i group_values(const void *b, int g, int q5) {
  if (!q5) return _mm256_loadu_si256((const __m256i *) (((const bq8x8 *) b)->qs + 32 * g));
  const bq5x8 *x = b; __m256i raw = _mm256_loadu_si256((const __m256i *) (x->qs + 32 * (g / 2)));
  return q5_values(_mm256_and_si256(g % 2 ? _mm256_srli_epi16(raw, 4) : raw, _mm256_set1_epi8(15)), x->qh[g]);
}

// vec_dot's order, tiles of 4 rows x 2 columns; A: rows of nb blocks of bs bytes (their scale first)
INLINE void ref(const char *A, size_t bs, int M, int nb, const bq8 *B, int N, float *C, int q5) {
  for (int i = 0; i < M; i += 4) for (int j = 0; j < N; j += 2) {
    __m256 acc[2][4]; for (int a = 0; a < 2; a++) for (int b = 0; b < 4; b++) acc[a][b] = _mm256_setzero_ps();
    int nj = N - j >= 2 ? 2 : 1;
    for (int l = 0; l < nb; l++) {
      __m256i av[4], au[4];
      for (int r = 0; r < 4; r++) { av[r] = row_values(A + ((size_t) (i + r) * nb + l) * bs, q5); au[r] = _mm256_sign_epi8(av[r], av[r]); }
      for (int c = 0; c < nj; c++) {
        __m256i bv = _mm256_loadu_si256((const __m256i *) B[(j + c) * nb + l].qs); float db = h2f(B[(j + c) * nb + l].d);
        for (int r = 0; r < 4; r++) {
          __m256i s = dot4(_mm256_setzero_si256(), au[r], _mm256_sign_epi8(bv, av[r]));
          float da = h2f(*(const uint16_t *) (A + ((size_t) (i + r) * nb + l) * bs));
          acc[c][r] = _mm256_fmadd_ps(_mm256_set1_ps(da * db), _mm256_cvtepi32_ps(s), acc[c][r]);
        }
      }
    }
    for (int c = 0; c < nj; c++) for (int r = 0; r < 4; r++) C[(j + c) * M + i + r] = hsum8(acc[c][r]);
  }
}
// interleaved: 8 rows, up to 4 columns at a time; A8: groups of 8 rows, nb blocks of bs bytes each (8 scales first)
#define RN 4
INLINE void rows8(const char *A8, size_t bs, int M, int nb, const bq8 *B, int N, float *C, int q5) {
  for (int i = 0; i < M / 8; i++) for (int j = 0; j < N; j += RN) {
    int nj = N - j < RN ? N - j : RN; __m256 acc[RN]; for (int c = 0; c < RN; c++) acc[c] = _mm256_setzero_ps();
    for (int l = 0; l < nb; l++) {
      const char *a = A8 + ((size_t) i * nb + l) * bs; __m256 da = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *) a));
      __m256i is[RN]; for (int c = 0; c < RN; c++) is[c] = _mm256_setzero_si256();
      for (int g = 0; g < 8; g++) {
        __m256i av = group_values(a, g, q5), au = _mm256_sign_epi8(av, av);
        for (int c = 0; c < nj; c++) {
          int32_t b4; memcpy(&b4, B[(j + c) * nb + l].qs + 4 * g, 4);
          is[c] = dot4(is[c], au, _mm256_sign_epi8(_mm256_set1_epi32(b4), av));
        }
      }
      for (int c = 0; c < nj; c++) acc[c] = _mm256_fmadd_ps(_mm256_mul_ps(da, _mm256_set1_ps(h2f(B[(j + c) * nb + l].d))), _mm256_cvtepi32_ps(is[c]), acc[c]);
    }
    for (int c = 0; c < nj; c++) _mm256_storeu_ps(C + (j + c) * M + i * 8, acc[c]);
  }
}
static void ref_q8(const char *A, int M, int nb, const bq8 *B, int N, float *C) { ref(A, sizeof(bq8), M, nb, B, N, C, 0); }
static void ref_q5(const char *A, int M, int nb, const bq8 *B, int N, float *C) { ref(A, sizeof(bq5), M, nb, B, N, C, 1); }
static void rows8_q8(const char *A, int M, int nb, const bq8 *B, int N, float *C) { rows8(A, sizeof(bq8x8), M, nb, B, N, C, 0); }
static void rows8_q5(const char *A, int M, int nb, const bq8 *B, int N, float *C) { rows8(A, sizeof(bq5x8), M, nb, B, N, C, 1); }

static int value(const void *b, int k, int q5) {  // value k of one ggml block
  if (!q5) return ((const bq8 *) b)->qs[k];
  const bq5 *x = b; uint32_t h; memcpy(&h, x->qh, 4);
  return ((k < 16 ? x->qs[k] & 15 : x->qs[k - 16] >> 4) | (((h >> k) & 1) << 4)) - 16;
}
static void store(void *b, int r, int k, int v, int q5) {  // value k of row r into an interleaved block
  if (!q5) { ((bq8x8 *) b)->qs[32 * (k / 4) + 4 * r + k % 4] = (int8_t) v; return; }
  bq5x8 *x = b; int g = k / 4, u = v + 16;
  x->qs[32 * (g / 2) + 4 * r + k % 4] |= (uint8_t) ((u & 15) << (4 * (g % 2)));
  x->qh[g] |= (uint32_t) (u >> 4) << (4 * r + k % 4);
}

int main(int argc, char **argv) {
  if (argc < 6 || (strcmp(argv[1], "q8_0") && strcmp(argv[1], "q5_0"))) {
    fprintf(stderr, "usage: %s q8_0|q5_0 K ROWS REPS N...\n", argv[0]); return 2;
  }
  int q5 = !strcmp(argv[1], "q5_0"), K = atoi(argv[2]), M = atoi(argv[3]), reps = atoi(argv[4]), nb = K / QK;
  size_t bs = q5 ? sizeof(bq5) : sizeof(bq8), bs8 = q5 ? sizeof(bq5x8) : sizeof(bq8x8);
  void (*slow)(const char *, int, int, const bq8 *, int, float *) = q5 ? ref_q5 : ref_q8;
  void (*fast)(const char *, int, int, const bq8 *, int, float *) = q5 ? rows8_q5 : rows8_q8;
  char *A = malloc(bs * M * nb), *A8 = calloc((size_t) (M / 8) * nb, bs8); srand(1);
  for (long x = 0; x < (long) M * nb; x++) {  // random blocks: a scale, then random bytes (any byte is a valid block)
    uint16_t d = _cvtss_sh(0.001f + rand() / (float) RAND_MAX * 0.01f, 0); char *b = A + x * bs;
    memcpy(b, &d, 2); for (size_t q = 2; q < bs; q++) b[q] = (char) (q5 ? rand() & 255 : rand() % 255 - 127);
  }
  for (int i = 0; i < M / 8; i++) for (int l = 0; l < nb; l++) {
    char *o = A8 + ((size_t) i * nb + l) * bs8;
    for (int r = 0; r < 8; r++) {
      const char *s = A + ((size_t) (i * 8 + r) * nb + l) * bs; memcpy(o + 2 * r, s, 2);
      for (int k = 0; k < QK; k++) store(o, r, k, value(s, k, q5), q5);
    }
  }
  for (int a = 5; a < argc; a++) {
    int N = atoi(argv[a]); bq8 *B = malloc(sizeof(bq8) * N * nb);
    for (long x = 0; x < (long) N * nb; x++) { B[x].d = _cvtss_sh(0.01f, 0); for (int q = 0; q < QK; q++) B[x].qs[q] = rand() % 255 - 127; }
    float *C1 = malloc(4 * M * N), *C2 = malloc(4 * M * N), *C3 = malloc(4 * M); double b1 = 1e30, b2 = 1e30;
    for (int r = 0; r < reps; r++) {
      double t = cpu_ms(); slow(A, M, nb, B, N, C1); t = cpu_ms() - t; if (t < b1) b1 = t;
      t = cpu_ms(); fast(A8, M, nb, B, N, C2); t = cpu_ms() - t; if (t < b2) b2 = t;
    }
    double md = 0, mx = 0; for (long x = 0; x < (long) M * N; x++) { double d = C1[x] - C2[x]; if (d < 0) d = -d; if (d > md) md = d; if (C1[x] > mx) mx = C1[x]; }
    int same = 1; for (int c = 0; c < N; c++) { fast(A8, M, nb, B + c * nb, 1, C3); if (memcmp(C3, C2 + c * M, 4 * M)) same = 0; }
    printf("%s N=%2d  vec_dot order %.3f ms/col   rows of 8 %.3f ms/col   x%.2f   max|diff| %.2g (of %.2g)   width-invariant %s\n",
           argv[1], N, b1 / N, b2 / N, b1 / b2, md, mx, same ? "yes" : "NO");
    free(B); free(C1); free(C2); free(C3);
  }
  return 0;
}
