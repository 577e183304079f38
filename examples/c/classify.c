/* classify: lowbit's C API end to end. Compiles MODEL (an .onnx file, an .lbm artifact or a zoo
 * name) with KEY=VALUE options, runs it on a deterministic input and prints the top 5 scores of its
 * first output, the kernel the plan chose for its first node, and what a malformed call returns.
 *
 *   classify resnet18 precision=int8 input_shape=input=1x3x64x64 threads=1
 *
 * Exit status: 0 on success, 1 when lowbit refused something (the message is printed). */
#include <lowbit/lowbit.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failed(lowbit_status* st, const char* what) {
  if (!st) return 0;
  fprintf(stderr, "classify: %s: %s (code %d)\n", what, lowbit_status_message(st), (int)lowbit_status_code(st));
  lowbit_status_free(st);
  return 1;
}

static void on_log(lowbit_log_level level, const char* message, void* user) {
  int* count = (int*)user;
  ++*count;
  fprintf(stderr, "[lowbit %s] %s\n", level == LOWBIT_LOG_WARNING ? "warning" : "note", message);
}

static size_t elements(const lowbit_tensor_info* t) {
  size_t n = 1;
  for (size_t i = 0; i < t->rank; ++i) n *= (size_t)t->shape[i];
  return n;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: classify MODEL [KEY=VALUE ...]\n");
    return 2;
  }
  int logged = 0;
  lowbit_set_log_callback(on_log, &logged);
  printf("lowbit %s\n", lowbit_version());

  lowbit_options* opts = NULL;
  if (failed(lowbit_options_create(&opts), "options")) return 1;
  for (int i = 2; i < argc; ++i) {
    char* eq = strchr(argv[i], '=');
    if (!eq) {
      fprintf(stderr, "classify: '%s' is not KEY=VALUE\n", argv[i]);
      lowbit_options_free(opts);
      return 2;
    }
    *eq = '\0';
    if (failed(lowbit_options_set(opts, argv[i], eq + 1), argv[i])) {
      lowbit_options_free(opts);
      return 1;
    }
  }
  lowbit_session* s = NULL;
  lowbit_status* st = lowbit_session_create(argv[1], opts, &s);
  lowbit_options_free(opts); /* the session keeps what it needs */
  if (failed(st, argv[1])) return 1;

  lowbit_tensor_info in_info, out_info;
  if (lowbit_session_input_count(s) != 1 || failed(lowbit_session_input(s, 0, &in_info), "input") ||
      failed(lowbit_session_output(s, 0, &out_info), "output") || in_info.dtype != LOWBIT_FLOAT32 ||
      out_info.dtype != LOWBIT_FLOAT32) {
    fprintf(stderr, "classify: expected one float input and a float first output\n");
    lowbit_session_free(s);
    return 1;
  }
  const size_t n_in = elements(&in_info), n_out = elements(&out_info), n_outputs = lowbit_session_output_count(s);
  float* x = malloc(n_in * sizeof *x);
  float* y = malloc(n_out * sizeof *y);
  lowbit_tensor* outs = calloc(n_outputs, sizeof *outs);
  if (!x || !y || !outs) return 1;
  for (size_t i = 0; i < n_in; ++i) x[i] = (float)((i * 7919u) % 255u) / 127.5f - 1.0f;
  printf("input '%s' %zu values, output '%s' %zu values\n", in_info.name, n_in, out_info.name, n_out);

  lowbit_tensor in = {LOWBIT_FLOAT32, in_info.rank, in_info.shape, x, n_in * sizeof *x};
  outs[0] = (lowbit_tensor){LOWBIT_FLOAT32, out_info.rank, out_info.shape, y, n_out * sizeof *y};
  int rc = failed(lowbit_session_run(s, &in, 1, outs, n_outputs), "run");
  if (!rc) {
    printf("top 5:");
    for (int k = 0; k < 5 && (size_t)k < n_out; ++k) {
      size_t best = 0;
      for (size_t i = 1; i < n_out; ++i)
        if (y[i] > y[best]) best = i;
      printf(" %zu (%.4f)", best, y[best]);
      y[best] = -1e30f;
    }
    printf("\n");
  }

  /* A buffer one element short is refused with the input's name, not read past. */
  in.size_bytes -= sizeof *x;
  st = lowbit_session_run(s, &in, 1, outs, n_outputs);
  printf("short input buffer: code %d: %s\n", (int)lowbit_status_code(st), lowbit_status_message(st));
  if (lowbit_status_code(st) != LOWBIT_INVALID_ARGUMENT) rc = 1;
  lowbit_status_free(st);

  char* plan = NULL;
  if (!rc && !failed(lowbit_session_explain(s, &plan), "explain")) {
    const char* k = strstr(plan, "\"kernel\": \"");
    if (k) {
      k += strlen("\"kernel\": \"");
      printf("first node's kernel: %.*s\n", (int)strcspn(k, "\""), k);
    }
    lowbit_free(plan);
  }
  printf("log messages: %d\n", logged);
  free(x);
  free(y);
  free(outs);
  lowbit_session_free(s);
  return rc;
}
