/* lowbit's C API: compile a CNN (ONNX file or bytes, .lbm artifact, zoo name) for this CPU,
 * quantized or not, and run it from any language that can call C.
 *
 * Conventions
 *  - Handles are opaque. Every function that can fail returns a lowbit_status*: NULL on success,
 *    otherwise a status with a code and lowbit's message (free it with lowbit_status_free). No C++
 *    exception crosses this boundary, and a malformed model or artifact is a status, not a crash.
 *  - Tensors are passed as dtype + shape + pointer + size in bytes; lowbit checks them against the
 *    model's inputs and outputs and names the input or output in the message when they disagree.
 *  - A session is immutable once created: any number of threads may call lowbit_session_run on one
 *    session at once (each call borrows its own activation arena), and the outputs are
 *    bit-identical to a lone caller's.
 *  - Strings returned through char** are owned by the caller: free them with lowbit_free.
 *
 * Minimal use:
 *   lowbit_options* o; lowbit_options_create(&o);
 *   lowbit_options_set(o, "precision", "int8");
 *   lowbit_session* s; lowbit_status* st = lowbit_session_create("model.onnx", o, &s);
 *   if (st) { fprintf(stderr, "%s\n", lowbit_status_message(st)); lowbit_status_free(st); }
 * (examples/c/classify.c is a complete program.)
 */
#ifndef LOWBIT_LOWBIT_H
#define LOWBIT_LOWBIT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define LOWBIT_API
#else
#define LOWBIT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status ---------------------------------------------------------------------------- */

typedef enum lowbit_code {
  LOWBIT_OK = 0,
  LOWBIT_ERROR = 1,            /* the model, artifact, option or data was refused: the message says why */
  LOWBIT_INVALID_ARGUMENT = 2, /* a NULL handle, a tensor that does not match the model, an index out of range */
  LOWBIT_OUT_OF_MEMORY = 3,
  LOWBIT_INTERNAL = 4 /* a bug in lowbit: please report the message */
} lowbit_code;

typedef struct lowbit_status lowbit_status;

/* LOWBIT_OK for NULL. */
LOWBIT_API lowbit_code lowbit_status_code(const lowbit_status* status);
/* "" for NULL; valid until the status is freed. */
LOWBIT_API const char* lowbit_status_message(const lowbit_status* status);
LOWBIT_API void lowbit_status_free(lowbit_status* status);

/* The library's version, "0.1.0". */
LOWBIT_API const char* lowbit_version(void);
/* Frees a string lowbit returned through a char** argument. */
LOWBIT_API void lowbit_free(void* p);

/* ---- process-wide settings --------------------------------------------------------------- */

typedef enum lowbit_log_level { LOWBIT_LOG_TRACE = 0, LOWBIT_LOG_NOTE = 1, LOWBIT_LOG_WARNING = 2 } lowbit_log_level;
/* Receives lowbit's diagnostics (a quantized node left on a slow kernel, verbose traces), one
 * message at a time (calls are serialised), from whichever thread logged. */
typedef void (*lowbit_log_fn)(lowbit_log_level level, const char* message, void* user);
/* Replaces the log sink for the whole process; NULL restores the default (stderr). */
LOWBIT_API void lowbit_set_log_callback(lowbit_log_fn fn, void* user);
/* Caps the host's instruction sets as LOWBIT_ISA does ("generic", "sse41", "avx2", "avx512",
 * "neon", ...; "" removes the cap). Sessions created afterwards see the capped host. */
LOWBIT_API lowbit_status* lowbit_set_isa_cap(const char* isa);
/* The named targets ("host" first), newline-separated; free with lowbit_free. */
LOWBIT_API lowbit_status* lowbit_targets(char** names_out);

/* ---- options -------------------------------------------------------------------------- */

typedef struct lowbit_options lowbit_options;

LOWBIT_API lowbit_status* lowbit_options_create(lowbit_options** out);
LOWBIT_API void lowbit_options_free(lowbit_options* options);
/* Sets one option by name, checked at once (an unknown key or malformed value is a status that
 * lists what is accepted). The keys are the Python package's keyword arguments and the CLI's
 * flags: precision (fp32, int8, w4a8, w4a4, w2a8, w1a1, ...), target (host or a named target),
 * threads, input_shape (name=1x3x224x224, once per input), calibration (minmax, percentile,
 * entropy, mse, auto), calibration_samples, calibration_folder (a folder of .npy / PNG / JPEG samples), mean
 * and std (R,G,B), resize (stretch, pad), on_slow (fp32, error, allow), keep_8bit, mode,
 * weight_scale, group_size, rounding (nearest, gptq), equalize, optimize and autotune (true, false),
 * max_memory (16G, 512M, bytes). */
LOWBIT_API lowbit_status* lowbit_options_set(lowbit_options* options, const char* key, const char* value);

/* ---- sessions ------------------------------------------------------------------------- */

typedef struct lowbit_session lowbit_session;

/* `model`: an .onnx path, an .lbm artifact path or a zoo name (resnet18, resnet50, mobilenetv2).
 * `options` may be NULL (fp32, the host, all cores) and may be freed once this returns. Compiling
 * (and, for a quantized precision, calibrating) happens here. */
LOWBIT_API lowbit_status* lowbit_session_create(const char* model, const lowbit_options* options,
                                                lowbit_session** out);
/* The same from an ONNX model's bytes (copied; the buffer may be freed once this returns). */
LOWBIT_API lowbit_status* lowbit_session_create_from_onnx(const void* bytes, size_t size,
                                                          const lowbit_options* options, lowbit_session** out);
LOWBIT_API void lowbit_session_free(lowbit_session* session);

/* Element types, numbered as ONNX's TensorProto numbers them. */
typedef enum lowbit_dtype {
  LOWBIT_FLOAT32 = 1,
  LOWBIT_UINT8 = 2,
  LOWBIT_INT8 = 3,
  LOWBIT_INT32 = 6,
  LOWBIT_INT64 = 7,
  LOWBIT_BOOL = 9
} lowbit_dtype;

/* A model input or output. The pointers stay valid while the session lives. */
typedef struct lowbit_tensor_info {
  const char* name;
  lowbit_dtype dtype;
  size_t rank;
  const int64_t* shape;
} lowbit_tensor_info;

LOWBIT_API size_t lowbit_session_input_count(const lowbit_session* session);
LOWBIT_API size_t lowbit_session_output_count(const lowbit_session* session);
LOWBIT_API lowbit_status* lowbit_session_input(const lowbit_session* session, size_t index, lowbit_tensor_info* out);
LOWBIT_API lowbit_status* lowbit_session_output(const lowbit_session* session, size_t index, lowbit_tensor_info* out);

/* Memory passed to or from a run: `data` points at `size_bytes` bytes holding a dense, row-major
 * tensor of `dtype` and `shape`. */
typedef struct lowbit_tensor {
  lowbit_dtype dtype;
  size_t rank;
  const int64_t* shape;
  void* data;
  size_t size_bytes;
} lowbit_tensor;

/* Runs the model. `inputs`: one per model input, in the model's order (lowbit_session_input),
 * read in place (not copied, not written). `outputs`: one per model output, in order; lowbit
 * writes each into `data` (an output whose data is NULL is skipped). Dtype, shape and size are
 * checked against the model first; a mismatch is LOWBIT_INVALID_ARGUMENT naming the tensor.
 * Thread-safe: see the conventions above. */
LOWBIT_API lowbit_status* lowbit_session_run(const lowbit_session* session, const lowbit_tensor* inputs,
                                             size_t input_count, lowbit_tensor* outputs, size_t output_count);

/* JSON reports (free with lowbit_free), with the keys of `lowbit explain --json`, the Python
 * package's inspect() and `lowbit bench --json`:
 *  explain: per node the chosen kernel and every rejected candidate with its reason;
 *  inspect: the graph after passes, sizes (weights, peak activations), MACs, the guard's findings;
 *  benchmark: `runs` timed runs on synthetic inputs after `warmup` untimed ones: the keys of
 *  `lowbit bench --json` (init_ms, first_run_ms, latency percentiles to p999; single-stream). */
LOWBIT_API lowbit_status* lowbit_session_explain(const lowbit_session* session, char** json_out);
LOWBIT_API lowbit_status* lowbit_session_inspect(const lowbit_session* session, char** json_out);
LOWBIT_API lowbit_status* lowbit_session_benchmark(const lowbit_session* session, int runs, int warmup,
                                                   char** json_out);
/* Writes the compiled (and quantized) model as an .lbm artifact, as `lowbit quantize -o` does. */
LOWBIT_API lowbit_status* lowbit_session_save(const lowbit_session* session, const char* path);

#ifdef __cplusplus
}
#endif

#endif /* LOWBIT_LOWBIT_H */
