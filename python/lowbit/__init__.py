"""lowbit: a post-training quantization compiler and CPU inference runtime for CNNs.

The API follows ONNX Runtime's, so existing code ports by changing the import::

    import lowbit
    sess = lowbit.InferenceSession("model.onnx", precision="int8")
    (logits,) = sess.run(None, {sess.get_inputs()[0].name: image})

Models: an .onnx path, an .lbm artifact path, a zoo name (``resnet50``) or ONNX bytes. Errors
raise :class:`lowbit.Error` (a ``RuntimeError``) with lowbit's message; a missing or mis-shaped
feed raises ``ValueError`` naming the input. Sessions may be shared between threads: ``run``
releases the GIL and each call borrows its own activation arena.
"""
from ._lowbit import Error, NodeArg, __version__, _Session, targets

__all__ = ["Error", "InferenceSession", "NodeArg", "quantize", "targets", "__version__"]


def _samples(calibration_data):
    """An iterable of {name: ndarray} dicts, or an ORT-style CalibrationDataReader (get_next())."""
    if calibration_data is None:
        return None
    if hasattr(calibration_data, "get_next"):
        out = []
        while True:
            feed = calibration_data.get_next()
            if feed is None:
                return out
            out.append(dict(feed))
    return [dict(feed) for feed in calibration_data]


class InferenceSession:
    """A compiled model: ``InferenceSession(model, precision="fp32", target="host", threads=None, **options)``.

    ``precision``: ``fp32``, ``int8``, ``w4a8``, ``int4``, ... (quantized on the fly, calibrated on
    ``calibration_data`` or seeded synthetic inputs). ``threads``: threads inside operators (None:
    all cores). Options: ``input_shapes`` ({name: shape}), ``calibration`` (minmax, percentile,
    entropy, mse, auto), ``calibration_data``, ``calibration_samples``, ``on_slow`` (fp32, error, allow),
    ``keep_8bit``, ``mode``, ``weight_scale``, ``group_size``, ``rounding``, ``equalize``,
    ``max_memory``, ``optimize``, ``autotune``.
    """

    def __init__(self, model, precision="fp32", target="host", threads=None, **options):
        if "calibration_data" in options:
            options["calibration_data"] = _samples(options["calibration_data"])
            if options["calibration_data"] is None:
                del options["calibration_data"]
        self._s = _Session(model, precision, target, threads, **options)

    def get_inputs(self):
        return self._s.get_inputs()

    def get_outputs(self):
        return self._s.get_outputs()

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model: a list of ndarrays, one per requested output (None: all)."""
        if not isinstance(input_feed, dict):
            raise ValueError("input_feed must be a dict {input name: ndarray}")
        return self._s.run(output_names, input_feed)

    def explain(self):
        """Per node, in run order: {node, op, kernel, rejected: [{kernel, reason}], inputs, outputs, signature,
        macs} (every rejected candidate and why; the rows of ``lowbit explain --json``)."""
        return self._s.explain()

    def inspect(self):
        """Sizes and plan: weights (per dtype), kernel layouts, peak activations, MACs, target, the guard's
        slow nodes, and a row per node (op, shapes, dtypes, output quantization, MACs, weight bytes)."""
        return self._s.inspect()

    def benchmark(self, runs=100, warmup=10, scenario="single-stream", requests=0, streams=0):
        """Times the model on synthetic inputs: the keys of ``lowbit bench --json`` (init_ms: making the
        session; first_run_ms; latency percentiles up to p999). ``scenario="offline"``: ``requests`` (default
        ``runs``) issued at once to ``streams`` callers (default: the cores over the session's threads),
        reported as throughput_per_s too, as MLPerf's Offline scenario."""
        return self._s.benchmark(runs, warmup, scenario, requests, streams)

    def save(self, path):
        """Writes the compiled model as a .lbm artifact (loads anywhere a model is taken)."""
        self._s.save(path)

    @property
    def precision(self):
        return self._s.precision


def quantize(model, output_path, calibration_data=None, precision="int8", calibration="minmax", **options):
    """Quantizes ``model`` and writes a .lbm artifact to ``output_path``; returns the session.

    ``calibration_data``: an iterable of {name: ndarray} dicts, or an object with ``get_next()``
    like ONNX Runtime's ``CalibrationDataReader``; None: seeded synthetic inputs.
    """
    sess = InferenceSession(model, precision=precision, calibration=calibration,
                            calibration_data=calibration_data, **options)
    sess.save(output_path)
    return sess
