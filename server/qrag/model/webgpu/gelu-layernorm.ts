/**
 * GELU (erf form) and LayerNorm as fused WebGPU programs, for the device path's transformer.
 *
 * Why: model/ops.ts writes GELU as 5 tfjs ops forward and 6 backward, LayerNorm as ~9 forward
 * and ~14 backward; on a GPU every op is a dispatch whose overhead dwarfs the arithmetic. Here
 * each is one program forward; the GELU gradient is one program, the LayerNorm gradient two
 * (dx per row, dγ/dβ by a workgroup per column). LayerNorm's row programs spread a row over a
 * group of threads (row-reduce.ts). Both are `tf.customGrad` ops, so tfjs autograd runs them like
 * any op. Same functions as ops.ts's `gelu(x, "erf")` and `layerNorm` (erf is the same
 * Abramowitz–Stegun 7.1.26 approximation tfjs uses, |error| ≤ 1.5e-7), in float32.
 */
import * as tf from "@tensorflow/tfjs";
import { runToTensors as run, storageDecls, uniformStruct, WG, workgroupSum } from "./raw-program.ts";
import { EACH_COL, rowLanes, rowProgramHead, rowWorkgroups } from "./row-reduce.ts";
import { enableHalf, readAct, writeAct } from "./half-storage.ts";

type CustomGradFn = Parameters<typeof tf.customGrad>[0];

const bu = tf.backend_util;
/** erf (tfjs's approximation, the one its erf kernel uses), shared by GELU's programs and matmul.ts's GELU epilogue. */
export const ERF_WGSL = `fn erf_as(a: f32) -> f32 {
  let t = 1.0 / (1.0 + ${bu.ERF_P} * abs(a));
  let poly = ((((${bu.ERF_A5} * t + ${bu.ERF_A4}) * t + ${bu.ERF_A3}) * t + ${bu.ERF_A2}) * t + ${bu.ERF_A1}) * t;
  return sign(a) * (1.0 - poly * exp(-a * a));
}`;


/**
 * A program of one thread per element: x = read[0][i], then `expr` (which stores y[i] through
 * `out`); `hx`, `hy`: x, y stored as f16 (an activation's forward both, its gradient x only).
 */
function elementwise(name: string, read: string[], expr: (out: (v: string) => string) => string, fns = ERF_WGSL, hx = false, hy = hx): string {
  const [x0, ...rest] = read;
  return `${enableHalf(hx || hy)}${uniformStruct(["n: u32"])}
${storageDecls([hx ? `${x0}:f16` : x0, ...rest], [hy ? "y:f16" : "y"])}
${fns}
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  let i = threadIndex(gid);
  if (i >= u.n) { return; }
  let x = ${readAct(hx, `${x0}[i]`)};
  ${expr((v) => `y[i] = ${writeAct(hy, v)};`)}
}
// ${name}`;
}

/** GELU of one value in WGSL (erf form): the forward program's and matmul.ts's epilogue's, so both give the same bits. */
export const geluExpr = (x: string): string => `${x} * ((erf_as(${x} * ${Math.SQRT1_2}) + 1.0) * 0.5)`;
/** GELU forward, one thread per element (fields `n`; x → y). */
export const geluFwd = (half = false) => elementwise("gelu forward", ["x"], (y) => y(geluExpr("x")), ERF_WGSL, half);
export const GELU_FWD = geluFwd();
/**
 * GELU's tanh form ½x(1 + tanh(√(2/π)(x + 0.044715x³))) (ops.ts geluTanh; gelu_new in BERT
 * configs), with tfjs's tanh (its webgpu kernel's expression, exp(−2|a|) cannot overflow), so
 * the value and the gradient's t are the tfjs path's bits.
 */
const TANH_AS = (a: string): string => `tanhAs(${a})`;
const TANH_AS_WGSL = "fn tanhAs(a: f32) -> f32 {\n  let e2x = exp(-2.0 * abs(a));\n  return sign(a) * (1.0 - e2x) / (1.0 + e2x);\n}";
const tanhArg = `(x * (x * x * 0.044715 + 1.0)) * ${Math.sqrt(2 / Math.PI)}`;
export const geluTanhFwd = (half = false) => elementwise("gelu tanh forward", ["x"], (y) => y(`(x * 0.5) * (${TANH_AS(tanhArg)} + 1.0)`), TANH_AS_WGSL, half);
/** ReLU forward (BERT's hidden_act relu). */
export const reluFwd = (half = false) => elementwise("relu forward", ["x"], (y) => y("max(x, 0.0)"), ERF_WGSL, half);
/** A feed-forward activation: GELU's erf form, its tanh form, ReLU (hf/bert.ts BertConfig's `act`). */
export type Activation = "gelu" | "gelu_tanh" | "relu";

/**
 * An activation's gradient dy·f′(x) as the WGSL function `actGrad(x, dy)` (with what it calls):
 * GELU_BWD's and matmul.ts's epilogue's (a product that takes the activation's backward in), so
 * both give the same bits. GELU's erf form; its tanh form from the forward's tanh,
 * ½(1 + t) + ½x(1 − t²)·c(1 + 3·0.044715x²) (ops.ts geluTanh's); ReLU's tfjs's (dy where x > 0,
 * else 0).
 */
export const ACT_GRAD_WGSL: Record<Activation, string> = {
  gelu: `${ERF_WGSL}
fn actGrad(x: f32, dy: f32) -> f32 {
  let cdf = (erf_as(x * ${Math.SQRT1_2}) + 1.0) * 0.5;
  let pdf = exp((x * x) * -0.5) * ${1 / Math.sqrt(2 * Math.PI)};
  return dy * (cdf + x * pdf);
}`,
  gelu_tanh: `${TANH_AS_WGSL}
fn actGrad(x: f32, dy: f32) -> f32 {
  let t = ${TANH_AS(tanhArg)};
  let du = (x * x * ${3 * 0.044715} + 1.0) * ${Math.sqrt(2 / Math.PI)};
  return dy * ((t + 1.0) * 0.5 + ((x * 0.5) * (1.0 - t * t)) * du);
}`,
  relu: "fn actGrad(x: f32, dy: f32) -> f32 { return select(0.0, dy, x > 0.0); }",
};
/** GELU's gradient, one thread per element (x, dy → y): the tfjs op's backward (geluDevice). */
export const GELU_BWD = elementwise("gelu backward", ["x", "dy"], (y) => y("actGrad(x, dy[i])"), ACT_GRAD_WGSL.gelu);

const geluFused = tf.customGrad(((x: tf.Tensor, save: tf.GradSaveFunc) => {
  const [y] = run("qrag_gelu_fwd", GELU_FWD, [x], [x.shape], [{ type: "uint32", data: [x.size] }], x.size);
  save([x]);
  return {
    value: y,
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => run("qrag_gelu_bwd", GELU_BWD, [saved[0], dy], [dy.shape], [{ type: "uint32", data: [dy.size] }], dy.size),
  };
}) as CustomGradFn);

/** GELU x·Φ(x) (erf form) as one program forward and one backward. */
export function geluDevice<T extends tf.Tensor>(x: T): T {
  if (x.dtype !== "float32") throw new Error("geluDevice: float32 only");
  return geluFused(x) as T;
}

/**
 * LayerNorm forward over rows of n columns, a group of threads per row (row-reduce.ts): y and the
 * row's (mean, 1/√(var + eps)) in `stats`. `first` defines the row input's element `a` at column k
 * (and may store it: the fused residual program writes v = x + h·m), `src` is the array the
 * second and third passes read it back from; `post` multiplies each output (BERT's embedding
 * dropout after its LayerNorm: " * maskAt(o + k)"); `half` names the arrays stored as f16
 * (half-storage.ts: `src` and `y` are converted here, `first` converts its own).
 */
export function lnFwdShader(o: { n: number; fields: string[]; read: string[]; write: string[]; first: string; src: string; extra?: string; post?: string; half?: string[] }): string {
  const half = new Set(o.half ?? []);
  const typed = (names: string[]) => names.map((n) => (half.has(n) ? `${n}:f16` : n));
  const src = readAct(half.has(o.src), `${o.src}[o + k]`);
  return `${enableHalf(half.size > 0)}${uniformStruct(o.fields)}
${storageDecls(typed(o.read), typed(o.write))}
${o.extra ?? ""}
${rowProgramHead(rowLanes(o.n))}
  var s = 0.0;
  ${EACH_COL} {
    ${o.first}
    s += a;
  }
  let mean = rowSum(vec2<f32>(s, 0.0)).x / nf;
  var q = 0.0;
  ${EACH_COL} { let c = ${src} - mean; q += c * c; }
  let inv = inverseSqrt(rowSum(vec2<f32>(q, 0.0)).x / nf + u.eps);
  ${EACH_COL} { y[o + k] = ${writeAct(half.has("y"), `(((${src} - mean) * inv) * gamma[k] + beta[k])${o.post ?? ""}`)}; }
  if (cols > 0u && lane == 0u) {
    stats[2u * r] = mean;
    stats[2u * r + 1u] = inv;
  }
}`;
}

/** LayerNorm forward's program over rows of n columns (fields rows, n, eps; x, γ, β → y, stats), launched on rowWorkgroups. */
export const lnFwd = (n: number, half = false) => lnFwdShader({ n, fields: ["rows: u32", "n: u32", "eps: f32"], read: ["x", "gamma", "beta"], write: ["y", "stats"], first: `let a = ${readAct(half, "x[o + k]")};`, src: "x", half: half ? ["x", "y"] : [] });

/**
 * LayerNorm's dx per row, inv·(gy − mean(gy) − x̂·mean(gy·x̂)) with gy = dy·γ, over the row input
 * `x` (its `stats`: mean, inv), a group of threads per row; `store` writes each element's `d` (the
 * fused residual program writes two outputs from it). `fields`, `read`, `write` and `extra`
 * complete the program; `dy` is the gradient's element at (row r, column k), dy[o + k] unless
 * given (pooledDy).
 */
export function lnDxShader(o: { n: number; fields: string[]; read: string[]; write: string[]; x: string; store: string; extra?: string; half?: boolean; dy?: (r: string, o: string) => string; partials?: boolean }): string {
  const half = Boolean(o.half);
  const xAt = (off: string): string => readAct(half, `${o.x}[${off} + k]`);
  const dy = o.dy ?? ((_r: string, off: string) => `dy[${off} + k]`);
  const lanes = rowLanes(o.n);
  return `${enableHalf(half)}${uniformStruct(o.fields)}
${storageDecls(o.read.map((n) => (half && n === o.x ? `${n}:f16` : n)), [...o.write, ...(o.partials ? ["part"] : [])])}
${o.extra ?? ""}
${rowProgramHead(lanes)}
  let sr = select(0u, 2u * r, cols > 0u);
  let mean = stats[sr];
  let inv = stats[sr + 1u];
  var m = vec2<f32>(0.0, 0.0);
  ${EACH_COL} {
    let gy = ${dy("r", "o")} * gamma[k];
    m += vec2<f32>(gy, gy * ((${xAt("o")} - mean) * inv));
  }
  m = rowSum(m) / nf;
  ${EACH_COL} {
    let xh = (${xAt("o")} - mean) * inv;
    let d = ((${dy("r", "o")} * gamma[k] - m.x) - xh * m.y) * inv;
    ${o.store}
  }${o.partials ? lnPartials(dy, xAt) : ""}
}`;
}

/** Partial sums of a LayerNorm's dγ, dβ (lnPartials): at most this many, whatever the rows. */
export const LN_PARTS = 256;

/**
 * dγ and dβ as LN_PARTS partial sums at most: the row program's first `parts` = min(its
 * workgroups, LN_PARTS) workgroups each sum a block of ⌈rows/parts⌉ rows, in row order, a thread
 * per column (reading along the rows, where lnDgb's threads stride down a column), into `part`:
 * dγ's at [p·n, …), dβ's at [(parts + p)·n, …). Any workgroup can take any rows: they read only
 * the program's inputs. split-k.ts adds the parts up.
 */
function lnPartials(dy: (r: string, o: string) => string, xAt: (o: string) => string): string {
  return `
  let wgi = wid.y * nwg.x + wid.x;
  let parts = min(nwg.x * nwg.y, ${LN_PARTS}u);
  if (wgi < parts) {
    let per = (u.rows + parts - 1u) / parts;
    let end = min(u.rows, (wgi + 1u) * per);
    for (var k = lid.y * LANES + lane; k < u.n; k += ${WG}u) {
      var s = vec2<f32>(0.0, 0.0);
      for (var rp = wgi * per; rp < end; rp++) {
        let op = rp * u.n;
        let dp = ${dy("rp", "op")};
        s += vec2<f32>(dp * ((${xAt("op")} - stats[2u * rp]) * stats[2u * rp + 1u]), dp);
      }
      part[wgi * u.n + k] = s.x;
      part[(parts + wgi) * u.n + k] = s.y;
    }
  }`;
}

export const lnDx = (n: number, half = false, partials = false) => lnDxShader({ n, fields: ["rows: u32", "n: u32"], read: ["x", "gamma", "stats", "dy"], write: ["dx"], x: "x", store: "dx[o + k] = d;", half, partials });

/**
 * The gradient of a masked-mean pooling's input at (row r, column k), from the pooled gradient
 * `dy` [B, n] and the pooling weights `w` (sequences of u.T rows): dy[r / T, k]·w[r], read where
 * a LayerNorm's backward uses it (no program of its own writes it out).
 */
export const pooledDy = (r: string, k = "k"): string => `(dy[(${r} / u.T) * u.n + ${k}] * w[${r}])`;

/**
 * dγ = Σ_rows dy·x̂, dβ = Σ_rows dy: a workgroup per column, its threads striding over the rows
 * (parallel on long batches), summed in shared memory (the tfjs ops' backward; the recorded
 * backwards sum partials their dx programs write, lnPartials).
 */
export const LN_DGB = `${uniformStruct(["rows: u32", "n: u32"])}
${storageDecls(["x", "stats", "dy"], ["dgamma", "dbeta"])}
var<workgroup> acc: array<vec2<f32>, ${WG}>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {
  let k = threadIndex(gid) / ${WG}u;
  var sum = vec2<f32>(0.0, 0.0);
  if (k < u.n) {
    for (var r = lid.x; r < u.rows; r += ${WG}u) {
      let d = dy[r * u.n + k];
      sum += vec2<f32>(d * ((x[r * u.n + k] - stats[2u * r]) * stats[2u * r + 1u]), d);
    }
  }
  ${workgroupSum("sum")}
  if (lid.x == 0u && k < u.n) {
    dgamma[k] = acc[0].x;
    dbeta[k] = acc[0].y;
  }
}`;

function makeLayerNorm(eps: number) {
  return tf.customGrad(((x: tf.Tensor, gamma: tf.Tensor, beta: tf.Tensor, save: tf.GradSaveFunc) => {
    const n = x.shape[x.rank - 1];
    const rows = x.size / n;
    const lanes = rowLanes(n);
    const grid = rowWorkgroups(rows, n);
    const [y, stats] = run(`qrag_ln_fwd_${lanes}`, lnFwd(n), [x, gamma, beta], [x.shape, [rows, 2]], [{ type: "uint32", data: [rows] }, { type: "uint32", data: [n] }, { type: "float32", data: [eps] }], rows, grid);
    save([x, gamma, stats]);
    return {
      value: y,
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
        const [xs, g, st] = saved;
        const dims = [{ type: "uint32" as const, data: [rows] }, { type: "uint32" as const, data: [n] }];
        const [dx] = run(`qrag_ln_dx_${lanes}`, lnDx(n), [xs, g, st, dy], [xs.shape], dims, rows, grid);
        const [dgamma, dbeta] = run("qrag_ln_dgb", LN_DGB, [xs, st, dy], [[n], [n]], dims, n * WG);
        return [dx, dgamma, dbeta];
      },
    };
  }) as CustomGradFn);
}

const layerNorms = new Map<number, ReturnType<typeof makeLayerNorm>>();

/** LayerNorm over the last axis (ops.ts layerNorm's function) as one program forward, two backward. */
export function layerNormDevice<T extends tf.Tensor>(x: T, gamma: tf.Tensor1D, beta: tf.Tensor1D, eps: number): T {
  if (x.dtype !== "float32") throw new Error("layerNormDevice: float32 only");
  let f = layerNorms.get(eps);
  if (!f) layerNorms.set(eps, (f = makeLayerNorm(eps)));
  return f(x, gamma, beta) as T;
}
