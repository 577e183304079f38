"""The lowbit Python package against its own C++ runs and outside oracles (numpy, onnx)."""
import os
import tempfile
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import lowbit

SHAPE = {"input": [1, 3, 32, 32]}  # small zoo inputs keep the suite quick


def conv_relu_onnx(seed=0):
    """x (1x4x6x6) -> Conv 3x3 pad 1 (4 -> 8, bias) -> Relu, as ONNX bytes, and its weights."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32) * 0.3
    b = rng.standard_normal(8).astype(np.float32) * 0.1
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node("Relu", ["c"], ["y"], name="relu")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 6, 6])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 6, 6])],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString(), w, b


def conv_relu_numpy(x, w, b):
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    y = np.zeros((1, 8, 6, 6), np.float64)
    for kh in range(3):
        for kw in range(3):
            y += np.einsum("nchw,mc->nmhw", xp[:, :, kh:kh + 6, kw:kw + 6], w[:, :, kh, kw])
    return np.maximum(y + b[None, :, None, None], 0)


def test_version_targets_and_error_type():
    assert lowbit.__version__.count(".") == 2
    assert "host" in lowbit.targets() and "x86-64" in lowbit.targets()
    assert issubclass(lowbit.Error, RuntimeError)
    with pytest.raises(lowbit.Error, match="no_such_model"):
        lowbit.InferenceSession("no_such_model")


def test_onnx_bytes_match_numpy():
    data, w, b = conv_relu_onnx()
    sess = lowbit.InferenceSession(data, threads=1)
    (inp,) = sess.get_inputs()
    assert (inp.name, inp.shape, inp.type) == ("x", [1, 4, 6, 6], "tensor(float)")
    assert [o.name for o in sess.get_outputs()] == ["y"]
    x = np.random.default_rng(1).standard_normal((1, 4, 6, 6)).astype(np.float32)
    (y,) = sess.run(None, {"x": x})
    assert y.dtype == np.float32 and y.shape == (1, 8, 6, 6)
    np.testing.assert_allclose(y, conv_relu_numpy(x.astype(np.float64), w, b), rtol=1e-5, atol=1e-5)
    # By name, and from a path.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "m.onnx")
        with open(path, "wb") as f:
            f.write(data)
        (y2,) = lowbit.InferenceSession(path, threads=1).run(["y"], {"x": x})
    np.testing.assert_array_equal(y, y2)


def test_feeds_are_checked_naming_the_input():
    data, _, _ = conv_relu_onnx()
    sess = lowbit.InferenceSession(data, threads=1)
    x = np.zeros((1, 4, 6, 6), np.float32)
    with pytest.raises(ValueError, match="input 'x' is missing"):
        sess.run(None, {})
    with pytest.raises(ValueError, match=r"input 'x' must have shape 1x4x6x6, got 1x4x6x5"):
        sess.run(None, {"x": np.zeros((1, 4, 6, 5), np.float32)})
    with pytest.raises(ValueError, match="input 'x' must be tensor\\(float\\)"):
        sess.run(None, {"x": x.astype(np.float64)})
    with pytest.raises(ValueError, match="'z' is not an output"):
        sess.run(["z"], {"x": x})
    with pytest.raises(ValueError, match="feed 'extra' is not an input"):
        sess.run(None, {"x": x, "extra": x})
    # A non-contiguous array is accepted (copied once) and gives the same result.
    big = np.zeros((1, 4, 6, 12), np.float32)
    big[..., ::2] = np.arange(144, dtype=np.float32).reshape(1, 4, 6, 6) / 100
    (a,) = sess.run(None, {"x": big[..., ::2]})
    (b,) = sess.run(None, {"x": np.ascontiguousarray(big[..., ::2])})
    np.testing.assert_array_equal(a, b)


def test_int8_tracks_fp32_and_explains_itself():
    fp = lowbit.InferenceSession("resnet18", input_shapes=SHAPE, threads=1)
    q = lowbit.InferenceSession("resnet18", precision="int8", input_shapes=SHAPE, threads=1, calibration_samples=2)
    assert q.precision == "int8"
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    (yf,) = fp.run(None, {"input": x})
    (yq,) = q.run(None, {"input": x})
    cos = float(np.dot(yf.ravel(), yq.ravel()) / (np.linalg.norm(yf) * np.linalg.norm(yq)))
    assert cos > 0.98, cos
    plan = q.explain()
    convs = [p for p in plan if p["op"] == "QConv"]
    assert convs and all(p["kernel"] for p in convs)
    assert any(r["reason"] for p in plan for r in p["rejected"])
    info = q.inspect()
    assert info["precision"] == "int8" and info["weight_bytes"] > 0 and info["macs"] > 0


def test_layer_precision_keyword_sets_each_layers_precision():
    q = lowbit.InferenceSession("resnet18", precision="int8", input_shapes=SHAPE, threads=1, calibration_samples=2,
                                layer_precision="conv1=fp32,layer3.0.conv2=w4a8")
    rows = {p["node"]: p for p in q.explain()}
    assert rows["conv1"]["op"] == "Conv" and rows["conv1"]["precision"]["precision"] == "fp32"
    assert "qc4w" in rows["layer3.0.conv2"]["kernel"] or rows["layer3.0.conv2"]["precision"]["precision"] == "w4a8"
    assert rows["layer1.0.conv1"]["op"] == "QConv" and "precision" not in rows["layer1.0.conv1"]
    with pytest.raises(lowbit.Error, match="nosuch"):
        lowbit.InferenceSession("resnet18", precision="int8", input_shapes=SHAPE, layer_precision="nosuch=int8")


def test_rounding_keyword_reaches_the_quantizer(tmp_path):
    shape = {"input": [1, 3, 32, 32]}
    x = np.random.default_rng(3).standard_normal((1, 3, 32, 32)).astype(np.float32)
    ref = lowbit.InferenceSession("mobilenet_v2", input_shapes=shape, threads=1).run(None, {"input": x})[0]
    cos = {}
    for rounding in ("nearest", "gptq"):
        path = str(tmp_path / (rounding + ".lbm"))
        lowbit.quantize("mobilenet_v2", path, precision="w4a8", input_shapes=shape, calibration_samples=4,
                        rounding=rounding)
        y = lowbit.InferenceSession(path, threads=1).run(None, {"input": x})[0]
        cos[rounding] = float((ref * y).sum() / np.linalg.norm(ref) / np.linalg.norm(y))
    assert cos["gptq"] > cos["nearest"], cos
    with pytest.raises(ValueError, match="unknown rounding"):
        lowbit.quantize("mobilenet_v2", str(tmp_path / "x.lbm"), precision="w4a8", input_shapes=shape, rounding="up")


def test_benchmark_has_the_cli_json_keys():
    sess = lowbit.InferenceSession("resnet18", input_shapes=SHAPE, threads=1)
    r = sess.benchmark(runs=3, warmup=1)
    for key in ("model", "precision", "target", "threads", "runs", "mean_ms", "median_ms", "p90_ms", "p95_ms",
                "p99_ms", "p999_ms", "min_ms", "max_ms", "macs", "weight_bytes", "peak_activation_bytes", "init_ms",
                "first_run_ms", "scenario", "throughput_per_s"):
        assert key in r, key
    assert r["runs"] == 3 and r["median_ms"] > 0 and r["init_ms"] > 0 and r["scenario"] == "single-stream"
    off = sess.benchmark(runs=4, warmup=0, scenario="offline", streams=2)
    assert off["scenario"] == "offline" and off["requests"] == 4 and off["streams"] == 2
    assert off["throughput_per_s"] > 0
    with pytest.raises(lowbit.Error, match="unknown scenario"):
        sess.benchmark(scenario="server")


class Reader:
    """ONNX Runtime's CalibrationDataReader protocol."""

    def __init__(self, feeds):
        self.feeds = iter(feeds)

    def get_next(self):
        return next(self.feeds, None)


def test_quantize_with_a_reader_writes_an_artifact_that_loads():
    rng = np.random.default_rng(5)
    feeds = [{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(2)]
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "r18.lbm")
        made = lowbit.quantize("resnet18", path, calibration_data=Reader(feeds), input_shapes=SHAPE, threads=1)
        loaded = lowbit.InferenceSession(path, threads=1)
        assert loaded.precision == "int8"
        x = feeds[0]["input"]
        np.testing.assert_array_equal(made.run(None, {"input": x})[0], loaded.run(None, {"input": x})[0])
        # A list of dicts calibrates the same way as the reader over the same feeds.
        same = lowbit.quantize("resnet18", os.path.join(d, "b.lbm"), calibration_data=feeds, input_shapes=SHAPE,
                               threads=1)
        np.testing.assert_array_equal(same.run(None, {"input": x})[0], loaded.run(None, {"input": x})[0])
    with pytest.raises(lowbit.Error, match="has no input 'input'"):
        lowbit.quantize("resnet18", os.path.join(tempfile.gettempdir(), "never.lbm"),
                        calibration_data=[{"x": feeds[0]["input"]}], input_shapes=SHAPE)


def test_python_threads_share_a_session_and_run_in_parallel():
    sess = lowbit.InferenceSession("resnet18", precision="int8", input_shapes=SHAPE, threads=1, calibration_samples=1)
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((1, 3, 32, 32)).astype(np.float32) for _ in range(4)]
    want = [sess.run(None, {"input": x})[0] for x in xs]
    bad = []
    start = threading.Barrier(4)

    def work(i):
        start.wait()
        for _ in range(20):
            (y,) = sess.run(None, {"input": xs[i]})
            if not np.array_equal(y, want[i]):
                bad.append(i)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not bad
    # Runs overlapped inside C++ (a second run context was made): the GIL is released while a model runs.
    assert sess._s._contexts >= 2
