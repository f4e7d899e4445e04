/* Tests the C ABI (tessera.h) from plain C11: compile, introspect, run a row
 * sum against a double-precision oracle computed here, emit a layer, and the
 * error paths (malformed IR, mismatched buffers, NULL arguments). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tessera/tessera.h"

static int g_passed = 0;
static int g_failed = 0;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (cond) {                                                                         \
      ++g_passed;                                                                       \
    } else {                                                                            \
      ++g_failed;                                                                       \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);          \
      if (tsr_last_error()[0]) fprintf(stderr, "  last error: %s\n", tsr_last_error()); \
    }                                                                                   \
  } while (0)

#define ROWS 64
#define COLS 128

static const char* kRowSum =
    "func @row_sum(%x: tensor<64x128xf32>) -> tensor<64xf32> {\n"
    "  %y = tessera.reduce %x {kind = \"sum\", axes = [1]} : tensor<64x128xf32> -> tensor<64xf32>\n"
    "  return %y : tensor<64xf32>\n"
    "}\n";

static int is_hex64(const char* s) {
  if (strlen(s) != 64) return 0;
  for (int i = 0; i < 64; ++i)
    if (!isxdigit((unsigned char)s[i])) return 0;
  return 1;
}

static void test_introspection(const tsr_program* p) {
  CHECK(tsr_program_num_inputs(p) == 1);
  CHECK(tsr_program_num_outputs(p) == 1);

  tsr_tensor_info info;
  CHECK(tsr_program_input(p, 0, &info) == TSR_OK);
  CHECK(info.name != NULL && strcmp(info.name, "x") == 0);
  CHECK(info.dtype == TSR_F32);
  CHECK(info.rank == 2);
  CHECK(info.shape[0] == ROWS && info.shape[1] == COLS);

  CHECK(tsr_program_output(p, 0, &info) == TSR_OK);
  CHECK(info.name != NULL);
  CHECK(info.dtype == TSR_F32);
  CHECK(info.rank == 1);
  CHECK(info.shape[0] == ROWS);

  CHECK(tsr_program_input(p, 1, &info) == TSR_ERR_ARGUMENT);
  CHECK(strcmp(tsr_last_error_code(), "E901") == 0);
  CHECK(tsr_program_output(p, 7, &info) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_input(p, 0, NULL) == TSR_ERR_ARGUMENT);
}

static void test_run(const tsr_program* p) {
  static float x[ROWS][COLS];
  float y[ROWS];
  for (int i = 0; i < ROWS; ++i)
    for (int j = 0; j < COLS; ++j) x[i][j] = (float)((i + 1) * 0.5 + j * 0.25);
  for (int i = 0; i < ROWS; ++i) y[i] = -1.0f;

  const int64_t in_shape[2] = {ROWS, COLS};
  const int64_t out_shape[1] = {ROWS};
  tsr_buffer in = {TSR_F32, 2, in_shape, x};
  tsr_buffer out = {TSR_F32, 1, out_shape, y};
  tsr_launch launches[4];
  size_t n_launches = 0;

  tsr_status st = tsr_program_run(p, &in, 1, &out, 1, launches, 4, &n_launches);
  CHECK(st == TSR_OK);
  CHECK(tsr_last_error()[0] == '\0');
  CHECK(tsr_last_error_code()[0] == '\0');
  if (st != TSR_OK) return;

  int rows_ok = 1;
  for (int i = 0; i < ROWS; ++i) {
    double want = 0.0;
    for (int j = 0; j < COLS; ++j) want += (double)x[i][j];
    double err = fabs((double)y[i] - want);
    if (!(err <= 1e-3 * fabs(want))) {
      fprintf(stderr, "row %d: got %.9g, want %.9g\n", i, (double)y[i], want);
      rows_ok = 0;
    }
  }
  CHECK(rows_ok);

  CHECK(n_launches >= 1);
  if (n_launches >= 1) {
    CHECK(strcmp(launches[0].placement, "native_cpu") == 0);
    CHECK(is_hex64(launches[0].sha256));
    CHECK(launches[0].kernel[0] != '\0');
    CHECK(launches[0].programs >= 1);
    CHECK(launches[0].kernel_wall_ns >= 0.0);
  }

  /* Zero capacity: nothing written, the total still reported. */
  size_t total = 0;
  CHECK(tsr_program_run(p, &in, 1, &out, 1, NULL, 0, &total) == TSR_OK);
  CHECK(total == n_launches);
}

static void test_emit(const tsr_program* p) {
  char* text = NULL;
  CHECK(tsr_program_emit(p, "schedule", &text) == TSR_OK);
  CHECK(text != NULL && strstr(text, "artifact_hash") != NULL);
  tsr_string_free(text);

  text = NULL;
  CHECK(tsr_program_emit(p, "graph", &text) == TSR_OK);
  CHECK(text != NULL && strstr(text, "row_sum") != NULL);
  tsr_string_free(text);

  text = (char*)1; /* must be reset to NULL on failure */
  CHECK(tsr_program_emit(p, "no_such_layer", &text) == TSR_ERR_ARGUMENT);
  CHECK(text == NULL);
  CHECK(strstr(tsr_last_error(), "error[E") != NULL);
  CHECK(tsr_program_emit(p, NULL, &text) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_emit(p, "schedule", NULL) == TSR_ERR_ARGUMENT);
  tsr_string_free(NULL);
}

static void test_bad_buffers(const tsr_program* p) {
  static float x[ROWS][COLS];
  float y[ROWS];
  const int64_t good_shape[2] = {ROWS, COLS};
  const int64_t wrong_shape[2] = {ROWS, COLS / 2};
  const int64_t out_shape[1] = {ROWS};
  tsr_buffer out = {TSR_F32, 1, out_shape, y};
  tsr_launch launch;
  size_t n = 99;

  tsr_buffer wrong = {TSR_F32, 2, wrong_shape, x};
  CHECK(tsr_program_run(p, &wrong, 1, &out, 1, &launch, 1, &n) == TSR_ERR_ARGUMENT);
  CHECK(n == 0);
  CHECK(strcmp(tsr_last_error_code(), "E904") == 0);
  CHECK(strstr(tsr_last_error(), "%x") != NULL); /* names the input */
  CHECK(strstr(tsr_last_error(), "tensor<64x64xf32>") != NULL);

  tsr_buffer wrong_dtype = {TSR_F64, 2, good_shape, x};
  CHECK(tsr_program_run(p, &wrong_dtype, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);

  tsr_buffer wrong_rank = {TSR_F32, 1, good_shape, x};
  CHECK(tsr_program_run(p, &wrong_rank, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);

  tsr_buffer bad_dtype = {(tsr_dtype)42, 2, good_shape, x};
  CHECK(tsr_program_run(p, &bad_dtype, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(strcmp(tsr_last_error_code(), "E905") == 0);

  tsr_buffer null_shape = {TSR_F32, 2, NULL, x};
  CHECK(tsr_program_run(p, &null_shape, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);

  tsr_buffer null_data = {TSR_F32, 2, good_shape, NULL};
  CHECK(tsr_program_run(p, &null_data, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);

  tsr_buffer good = {TSR_F32, 2, good_shape, x};
  tsr_buffer wrong_out = {TSR_F32, 2, good_shape, y};
  CHECK(tsr_program_run(p, &good, 1, &wrong_out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_run(p, &good, 0, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(strcmp(tsr_last_error_code(), "E903") == 0);
  CHECK(tsr_program_run(p, &good, 1, &out, 0, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_run(p, NULL, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_run(p, &good, 1, &out, 1, NULL, 3, NULL) == TSR_ERR_ARGUMENT);
}

static void test_null_program(void) {
  tsr_tensor_info info;
  const int64_t shape[2] = {ROWS, COLS};
  float y[ROWS];
  static float x[ROWS][COLS];
  tsr_buffer in = {TSR_F32, 2, shape, x};
  tsr_buffer out = {TSR_F32, 1, shape, y};
  char* text = NULL;

  CHECK(tsr_program_run(NULL, &in, 1, &out, 1, NULL, 0, NULL) == TSR_ERR_ARGUMENT);
  CHECK(strcmp(tsr_last_error_code(), "E900") == 0);
  CHECK(strstr(tsr_last_error(), "error[E900]") != NULL);
  CHECK(tsr_program_emit(NULL, "schedule", &text) == TSR_ERR_ARGUMENT);
  CHECK(text == NULL);
  CHECK(tsr_program_input(NULL, 0, &info) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_output(NULL, 0, &info) == TSR_ERR_ARGUMENT);
  CHECK(tsr_program_num_inputs(NULL) == 0);
  CHECK(tsr_program_num_outputs(NULL) == 0);
  tsr_program_free(NULL);

  tsr_program* p = (tsr_program*)1;
  CHECK(tsr_program_compile(NULL, "cpu", NULL, &p) == TSR_ERR_ARGUMENT);
  CHECK(p == NULL);
  CHECK(tsr_program_compile(kRowSum, "cpu", NULL, NULL) == TSR_ERR_ARGUMENT);
}

static void test_compile_errors(void) {
  tsr_program* p = (tsr_program*)1;
  const char* malformed =
      "func @row_sum(%x: tensor<64x128xf32>) -> tensor<64xf32> {\n"
      "  %y = tessera.reduce %x {kind = \"sum\", axes = [1]} : tensor<64x128xf32> -> tensor<64xf32>\n"
      "  return %y : tensor<64xf32\n"
      "}\n";
  CHECK(tsr_program_compile(malformed, "cpu", NULL, &p) == TSR_ERR_COMPILE);
  CHECK(p == NULL);
  const char* err = tsr_last_error();
  CHECK(strstr(err, "error[E") != NULL);
  CHECK(strstr(err, "<input>:") != NULL); /* file:line:col */
  CHECK(strchr(err, ':') != NULL && strchr(err, ':') < strstr(err, "error[E"));
  CHECK(strlen(tsr_last_error_code()) == 4 && tsr_last_error_code()[0] == 'E');
  printf("  malformed IR -> %s\n", err);

  /* Garbage, an unknown func and an unknown target are compile errors too. */
  CHECK(tsr_program_compile("this is not IR", "cpu", NULL, &p) == TSR_ERR_COMPILE);
  CHECK(tsr_program_compile(kRowSum, "cpu", "no_such_func", &p) == TSR_ERR_COMPILE);
  CHECK(p == NULL);
  CHECK(tsr_program_compile(kRowSum, "no_such_target", NULL, &p) == TSR_ERR_COMPILE);
  CHECK(p == NULL);
  CHECK(tsr_last_error()[0] != '\0');
}

int main(void) {
  CHECK(strcmp(tsr_dtype_name(TSR_BF16), "bf16") == 0);
  CHECK(tsr_dtype_size(TSR_F64) == 8);
  CHECK(tsr_dtype_name((tsr_dtype)42) == NULL);
  CHECK(tsr_dtype_size((tsr_dtype)42) == 0);
  CHECK(strcmp(tsr_status_name(TSR_ERR_ARGUMENT), "TSR_ERR_ARGUMENT") == 0);

  tsr_program* p = NULL;
  tsr_status st = tsr_program_compile(kRowSum, "cpu", NULL, &p);
  CHECK(st == TSR_OK);
  CHECK(p != NULL);
  if (st == TSR_OK && p) {
    test_introspection(p);
    test_run(p);
    test_emit(p);
    test_bad_buffers(p);
    tsr_program_free(p);
  }

  /* NULL target means "cpu"; func selects by name. */
  p = NULL;
  CHECK(tsr_program_compile(kRowSum, NULL, "row_sum", &p) == TSR_OK);
  tsr_program_free(p);

  test_null_program();
  test_compile_errors();

  printf("c_api_test: %d passed, %d failed\n", g_passed, g_failed);
  return g_failed == 0 ? 0 : 1;
}
