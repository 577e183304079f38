// ONNX Runtime (onnxruntime-node, CPU) timing for bench_vs_ort.sh:
//   node ort_bench.mjs MODEL.onnx [--threads N] [--warmup 10] [--runs 100] [--json FILE]
//                     [--input x.npy] [--output y.npy] [--profile PREFIX]
// Times session.run on a fixed input (the .npy given, else seeded uniform noise) and prints one
// JSON line; --output saves the first result as '<f4' .npy so that outputs can be cross-checked.
// --profile: ORT's own per-node profile (every run) to PREFIX_<date>.json, named in the JSON line
// as "profile" (bench/per_node_vs_ort.py reads it); its timing costs a little, so times from a
// profiled run are not the benchmark's.
import fs from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';

function parseArgs(argv) {
  const a = { threads: 1, warmup: 10, runs: 100, json: null, input: null, output: null, profile: null, model: null };
  for (let i = 0; i < argv.length; ++i) {
    const k = argv[i];
    const need = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--threads') a.threads = parseInt(need(), 10);
    else if (k === '--warmup') a.warmup = parseInt(need(), 10);
    else if (k === '--runs') a.runs = parseInt(need(), 10);
    else if (k === '--json') a.json = need();
    else if (k === '--input') a.input = need();
    else if (k === '--output') a.output = need();
    else if (k === '--profile') a.profile = need();
    else if (!a.model) a.model = k;
    else throw new Error(`unexpected argument ${k}`);
  }
  if (!a.model) throw new Error('usage: ort_bench.mjs MODEL.onnx [--threads N] [--warmup W] [--runs R] [--json F]');
  return a;
}

// Minimal .npy (v1/v2) reader/writer for little-endian float32, C order.
function readNpy(path) {
  const buf = fs.readFileSync(path);
  if (buf.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = buf[6];
  const hlen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const hstart = major === 1 ? 10 : 12;
  const header = buf.toString('latin1', hstart, hstart + hlen);
  if (!/'descr':\s*'<f4'/.test(header) || /'fortran_order':\s*True/.test(header))
    throw new Error(`${path}: expected '<f4' C-order, got ${header.trim()}`);
  const dims = header.match(/'shape':\s*\(([^)]*)\)/)[1].split(',').map((s) => s.trim()).filter((s) => s).map(Number);
  const off = hstart + hlen;
  const data = new Float32Array(buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + buf.length));
  return { dims, data };
}

function writeNpy(path, dims, data) {
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  header += ' '.repeat(64 - ((10 + header.length + 1) % 64)) + '\n';
  const pre = Buffer.alloc(10);
  pre.write('\x93NUMPY', 0, 'latin1');
  pre[6] = 1;
  pre[7] = 0;
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  fs.writeFileSync(path, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

function percentile(sorted, p) {
  const idx = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[idx];
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const session = await ort.InferenceSession.create(a.model, {
    executionProviders: ['cpu'],
    intraOpNumThreads: a.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
    ...(a.profile ? { enableProfiling: true, profileFilePrefix: a.profile } : {}),
  });
  const inName = session.inputNames[0];
  let feedData, dims;
  if (a.input) {
    ({ dims, data: feedData } = readNpy(a.input));
  } else {
    dims = [1, 3, 224, 224];
    feedData = new Float32Array(dims.reduce((x, y) => x * y, 1));
    let s = 12345;  // LCG: a fixed input independent of Math.random
    for (let i = 0; i < feedData.length; ++i) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      feedData[i] = s / 4294967296 - 0.5;
    }
  }
  const feeds = { [inName]: new ort.Tensor('float32', feedData, dims) };
  let first = await session.run(feeds);
  if (a.output) {
    const out = first[session.outputNames[0]];
    writeNpy(a.output, out.dims, out.data);
  }
  for (let i = 1; i < a.warmup; ++i) await session.run(feeds);
  const times = [];
  for (let i = 0; i < a.runs; ++i) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const sorted = [...times].sort((x, y) => x - y);
  const mean = times.reduce((x, y) => x + y, 0) / Math.max(1, times.length);
  const sd = Math.sqrt(times.reduce((x, y) => x + (y - mean) ** 2, 0) / Math.max(1, times.length));
  const r = {
    runtime: 'onnxruntime-node',
    version: ort.env.versions?.common ?? 'unknown',
    model: a.model,
    threads: a.threads,
    runs: a.runs,
    mean_ms: mean,
    median_ms: sorted.length ? (sorted[(sorted.length - 1) >> 1] + sorted[sorted.length >> 1]) / 2 : NaN,
    p90_ms: percentile(sorted, 90),
    p99_ms: percentile(sorted, 99),
    min_ms: sorted[0],
    stddev_ms: sd,
  };
  if (a.profile) {
    // onnxruntime-node's endProfiling() returns nothing: the newest PREFIX_* file is this run's.
    session.endProfiling();
    const dir = path.dirname(path.resolve(a.profile)), base = path.basename(a.profile) + '_';
    const files = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
      .map((f) => path.join(dir, f)).sort((x, y) => fs.statSync(y).mtimeMs - fs.statSync(x).mtimeMs);
    r.profile = files[0] ?? null;
  }
  const line = JSON.stringify(r);
  if (a.json) fs.writeFileSync(a.json, line + '\n');
  console.log(line);
  first = null;
}

main().catch((e) => {
  console.error(`ort_bench: ${e.message}`);
  process.exit(1);
});
