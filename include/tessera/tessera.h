/* Tessera's C ABI (libtessera.so): compile a program from IR text, look at
 * its inputs and outputs, emit any layer as text, and run it on caller-owned
 * buffers. It wraps the C++ API in tessera.hpp and is usable from C11.
 *
 * Conventions
 *  - Every function that can fail returns a tsr_status. On failure the
 *    calling thread's last error is set: tsr_last_error() gives the full
 *    diagnostic ("<input>:3:5: error[E203]: ...") and tsr_last_error_code()
 *    its code ("E203"). Every tsr_status-returning call clears them first,
 *    so after TSR_OK both are "".
 *  - No C++ exception ever crosses this ABI; NULL pointers (other than the
 *    ones documented as optional) give TSR_ERR_ARGUMENT, never a crash.
 *  - Buffers are dense, C-order (row-major) and owned by the caller; the
 *    library copies in and out of them and keeps no pointer to them.
 *  - Errors raised by this C layer itself use codes E900-E999:
 *      E900 NULL argument            E901 index out of range
 *      E902 rank above TSR_MAX_RANK  E903 wrong number of buffers
 *      E904 buffer dtype/shape does not match the program
 *      E905 malformed buffer (bad dtype value, negative rank or dimension,
 *           NULL shape or data)
 *      E990 out of memory            E999 internal error
 *    Errors from the compiler and runtime keep their own codes.
 *
 *   tsr_program* p = NULL;
 *   if (tsr_program_compile(text, "cpu", NULL, &p) != TSR_OK)
 *     fprintf(stderr, "%s\n", tsr_last_error());
 */
#ifndef TESSERA_TESSERA_H
#define TESSERA_TESSERA_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(TESSERA_C_BUILD)
#    define TSR_API __declspec(dllexport)
#  else
#    define TSR_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
#  define TSR_API __attribute__((visibility("default")))
#else
#  define TSR_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Largest tensor rank tsr_tensor_info can describe. */
#define TSR_MAX_RANK 16

/* Sizes of the fixed string fields of tsr_launch (including the NUL). */
#define TSR_KERNEL_NAME_MAX 128
#define TSR_PLACEMENT_MAX 32
#define TSR_SHA256_HEX_MAX 65

/* Element types; f16 and bf16 are 2-byte IEEE half / bfloat16 bit patterns,
   i1 a boolean byte (0 or 1), i32/i64 two's complement integers. */
typedef enum { TSR_F16 = 0, TSR_BF16 = 1, TSR_F32 = 2, TSR_F64 = 3, TSR_I1 = 4, TSR_I32 = 5, TSR_I64 = 6 } tsr_dtype;

/* Result of every fallible call. */
typedef enum {
  TSR_OK = 0,
  TSR_ERR_COMPILE = 1,  /* parse, verify, lowering or kernel build/load failed */
  TSR_ERR_RUNTIME = 2,  /* a run failed after its arguments were accepted */
  TSR_ERR_ARGUMENT = 3, /* NULL pointer, bad index, mismatched buffer, unknown layer, ... */
  TSR_ERR_INTERNAL = 4  /* out of memory or an unexpected internal failure */
} tsr_status;

/* A compiled, loaded program (opaque). */
typedef struct tsr_program tsr_program;

/* Description of one program input or output. `name` is owned by the
 * program and stays valid until tsr_program_free. */
typedef struct {
  const char* name;
  tsr_dtype dtype;
  int32_t rank;
  int64_t shape[TSR_MAX_RANK]; /* entries at index >= rank are 0 */
} tsr_tensor_info;

/* A caller-owned dense C-order tensor: `shape` has `rank` entries (may be
 * NULL when rank is 0) and `data` holds product(shape) elements of `dtype`
 * (may be NULL only when that product is 0). */
typedef struct {
  tsr_dtype dtype;
  int32_t rank;
  const int64_t* shape;
  void* data;
} tsr_buffer;

/* Record of one kernel launch: where it ran and how long the native call took.
 * Strings are NUL-terminated (kernel names longer than 127 bytes are cut). */
typedef struct {
  char kernel[TSR_KERNEL_NAME_MAX];
  char placement[TSR_PLACEMENT_MAX]; /* "native_cpu" */
  char sha256[TSR_SHA256_HEX_MAX];   /* 64 lowercase hex digits */
  int64_t programs;                  /* grid size: number of tile programs */
  double kernel_wall_ns;             /* host clock around the native call only */
} tsr_launch;

/* Full diagnostic text of this thread's last failed call ("" if none); valid until the next call on this thread. */
TSR_API const char* tsr_last_error(void);

/* Stable code of this thread's last failed call, e.g. "E203" ("" if none or unknown). */
TSR_API const char* tsr_last_error_code(void);

/* Static name of a status ("TSR_OK", "TSR_ERR_COMPILE", ...; "unknown" otherwise). */
TSR_API const char* tsr_status_name(tsr_status status);

/* Static name of a dtype ("f16", "bf16", "f32", "f64"), or NULL for an invalid value. */
TSR_API const char* tsr_dtype_name(tsr_dtype dtype);

/* Size in bytes of one element of `dtype`, or 0 for an invalid value. */
TSR_API size_t tsr_dtype_size(tsr_dtype dtype);

/* Parses IR text (any layer), lowers it for `target` (NULL = "cpu") and loads func `func` (NULL or "" = the first); *out is NULL on failure. */
TSR_API tsr_status tsr_program_compile(const char* ir_text, const char* target, const char* func, tsr_program** out);

/* Frees a program; NULL is a no-op. */
TSR_API void tsr_program_free(tsr_program* program);

/* Text of one layer ("graph", "schedule", "tile", "target", "source") in a new string to release with tsr_string_free; *text_out is NULL on failure. */
TSR_API tsr_status tsr_program_emit(const tsr_program* program, const char* layer, char** text_out);

/* Frees a string returned by this library; NULL is a no-op. */
TSR_API void tsr_string_free(char* text);

/* Number of inputs of the program's func (0 for NULL). */
TSR_API size_t tsr_program_num_inputs(const tsr_program* program);

/* Number of outputs of the program's func (0 for NULL). */
TSR_API size_t tsr_program_num_outputs(const tsr_program* program);

/* Describes input `index`; TSR_ERR_ARGUMENT if it is out of range or its rank exceeds TSR_MAX_RANK. */
TSR_API tsr_status tsr_program_input(const tsr_program* program, size_t index, tsr_tensor_info* info);

/* Describes output `index`; TSR_ERR_ARGUMENT if it is out of range or its rank exceeds TSR_MAX_RANK. */
TSR_API tsr_status tsr_program_output(const tsr_program* program, size_t index, tsr_tensor_info* info);

/* Runs the program: checks every buffer against the program, copies the inputs in and the results into
 * `outputs`, and writes up to `launch_capacity` launch records (`launches` may be NULL when the capacity
 * is 0); *n_launches (optional, may be NULL) gets the total launch count. Outputs are untouched on failure. */
TSR_API tsr_status tsr_program_run(const tsr_program* program, const tsr_buffer* inputs, size_t n_inputs,
                                   tsr_buffer* outputs, size_t n_outputs, tsr_launch* launches, size_t launch_capacity,
                                   size_t* n_launches);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* TESSERA_TESSERA_H */
