/**
 * WebGPU in Node for tfjs: the optional npm package `webgpu` (Dawn's Node bindings, a prebuilt
 * `dawn.node`; nothing downloaded at install) gives `navigator.gpu`, on which
 * `@tensorflow/tfjs-backend-webgpu` runs. Dawn reaches the GPU through Vulkan, so the machine needs
 * the Vulkan loader (Debian `libvulkan1`) and the GPU vendor's Vulkan driver (NVIDIA's ships with
 * its driver). Mesa's software driver (lavapipe, `mesa-vulkan-drivers` ≥ 24) also works: it is a
 * "fallback adapter", used only when asked for (tests on CPU-only machines), never picked on auto.
 */
import fs from "node:fs";
import path from "node:path";
import { errorText } from "../util/error-text.ts";
import { recordDeviceError } from "./webgpu-errors.ts";
import { installDawnPolling, spinMsFor } from "./dawn-poll.ts";

/** The adapter a webgpu backend runs on, as Dawn reports it. */
export interface WebgpuAdapter {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** A software (CPU) implementation such as lavapipe. */
  fallback: boolean;
  /** Limits we ask the device for (tfjs asks only for the defaults otherwise). */
  maxStorageBuffersPerShaderStage: number;
  maxBufferSize: number;
}

interface DawnModule {
  create(flags: string[]): GpuLike;
  globals: Record<string, unknown>;
}
interface AdapterLike {
  info: { vendor: string; architecture: string; device: string; description: string; isFallbackAdapter?: boolean };
  isFallbackAdapter?: boolean;
  limits: Record<string, number>;
  features?: { has(f: string): boolean };
  requestDevice(desc?: unknown): Promise<unknown>;
}
interface GpuLike {
  requestAdapter(opts?: unknown): Promise<AdapterLike | null>;
}

// held in a variable so TypeScript neither resolves nor requires its types
const DAWN_PKG: string = "webgpu";

/**
 * The Dawn instance must outlive its adapter and devices: once garbage-collected, Dawn stops
 * processing events (mapAsync never resolves) or aborts the process (std::system_error).
 */
const instances: GpuLike[] = [];

/**
 * Loads Dawn, finds an adapter and installs `navigator.gpu` (and the WebGPU globals tfjs checks
 * for). Throws one line that says what is missing: the package, the Vulkan loader, an adapter,
 * or (unless `allowFallback`) a GPU device node and a hardware adapter (`skipDeviceCheck`: ask
 * Dawn even without a device node; for tests).
 */
export async function installWebgpu(allowFallback: boolean, o: { skipDeviceCheck?: boolean } = {}): Promise<WebgpuAdapter> {
  // on auto, machines without a GPU do not load Dawn at all: starting it (and exiting after it)
  // costs seconds on a busy machine, for a software adapter we would not use
  if (!allowFallback) {
    if (!vulkanLoaderFound()) throw new Error(NO_LOADER);
    if (!o.skipDeviceCheck && !gpuDeviceFound()) throw new Error(NO_GPU);
  }
  let dawn: DawnModule;
  try {
    dawn = (await import(DAWN_PKG)) as DawnModule;
  } catch (e) {
    throw new Error(`the optional package "webgpu" is not installed or failed to load (${errorText(e)})`);
  }
  // Dawn prints its Vulkan diagnostics on stderr; an unset XDG_RUNTIME_DIR adds noise there only
  process.env.XDG_RUNTIME_DIR ??= "/tmp";
  // timestamps unquantized: gpu-timing.ts measures passes of microseconds (a browser rounds them for privacy)
  const gpu = dawn.create(["disable-dawn-features=timestamp_quantization"]);
  instances.push(gpu);
  let adapter: AdapterLike | null;
  try {
    adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  } catch (e) {
    throw new Error(`no WebGPU adapter (${errorText(e)})`);
  }
  if (!adapter) {
    throw new Error(vulkanLoaderFound() ? NO_DRIVER : NO_LOADER);
  }
  const info = adapter.info;
  const fallback = Boolean(adapter.isFallbackAdapter ?? info.isFallbackAdapter ?? info.architecture === "software");
  if (fallback && !allowFallback) {
    throw new Error(`only a software WebGPU adapter (${info.description || info.device}); not used unless QRAG_BACKEND=webgpu`);
  }
  // a read awaiting the GPU no longer spins a core: on a CPU adapter the GPU work needs it
  installDawnPolling(spinMsFor(fallback));
  Object.assign(globalThis, dawn.globals);
  // tfjs-backend-webgpu asks navigator.gpu for its adapter and device; pass ours, with the limits it
  // needs raised to what the adapter offers (the defaults allow only 8 storage buffers per stage)
  const requested = {
    maxStorageBuffersPerShaderStage: adapter.limits.maxStorageBuffersPerShaderStage,
    maxBufferSize: adapter.limits.maxBufferSize,
    maxStorageBufferBindingSize: adapter.limits.maxStorageBufferBindingSize,
    maxComputeWorkgroupStorageSize: adapter.limits.maxComputeWorkgroupStorageSize,
    maxComputeInvocationsPerWorkgroup: adapter.limits.maxComputeInvocationsPerWorkgroup,
  };
  const original = adapter.requestDevice.bind(adapter);
  // shader-f16 where offered: the no-grad forwards may then store activations as f16 (gpu_storage)
  const features = adapter.features?.has("shader-f16") ? ["shader-f16"] : [];
  adapter.requestDevice = async (desc?: unknown) => {
    const d = (desc ?? {}) as { requiredLimits?: Record<string, number>; requiredFeatures?: unknown[] };
    const requiredFeatures = [...(d.requiredFeatures ?? []), ...features];
    const device = (await original({ ...d, requiredFeatures, requiredLimits: { ...(d.requiredLimits ?? {}), ...requested } })) as EventTarget;
    // WebGPU reports a failed buffer or program here, not at the call (webgpu-errors.ts)
    device.addEventListener("uncapturederror", (ev) => recordDeviceError((ev as Event & { error?: { message?: unknown } }).error));
    return device;
  };
  const navigatorGpu = { requestAdapter: () => Promise.resolve(adapter) };
  const nav = (globalThis as { navigator?: object }).navigator;
  if (nav) Object.defineProperty(nav, "gpu", { value: navigatorGpu, configurable: true });
  else Object.defineProperty(globalThis, "navigator", { value: { gpu: navigatorGpu }, configurable: true });
  return {
    vendor: info.vendor,
    architecture: info.architecture,
    device: info.device,
    description: info.description,
    fallback,
    maxStorageBuffersPerShaderStage: requested.maxStorageBuffersPerShaderStage,
    maxBufferSize: requested.maxBufferSize,
  };
}

/** "nvidia nvidia-h100-80gb-hbm3 (NVIDIA: 580.159.4)" style label for the worker's device field. */
export function adapterLabel(a: WebgpuAdapter): string {
  const name = [a.vendor, a.device].filter(Boolean).join(" ") || "unknown adapter";
  return `webgpu: ${name}${a.description ? ` (${a.description})` : ""}${a.fallback ? ", software" : ""}`;
}

const NO_LOADER = "no WebGPU adapter: the Vulkan loader libvulkan.so.1 is not installed (Debian/Ubuntu: apt-get install libvulkan1)";
const NO_DRIVER = "no WebGPU adapter: the Vulkan loader found no driver for a GPU (NVIDIA's comes with its driver; check /usr/share/vulkan/icd.d or VK_DRIVER_FILES)";
const NO_GPU = "no GPU device (/dev/nvidia*, /dev/dri/renderD*)";

/** Whether the kernel shows a GPU a Vulkan driver could use (NVIDIA's device files, or a DRM render node). */
function gpuDeviceFound(): boolean {
  const list = (d: string) => {
    try {
      return fs.readdirSync(d);
    } catch {
      return [];
    }
  };
  return list("/dev").some((f) => /^nvidia\d+$/.test(f)) || list("/dev/dri").some((f) => f.startsWith("renderD"));
}

/** Whether libvulkan.so.1 is where the dynamic loader looks (Dawn opens it at run time). */
function vulkanLoaderFound(): boolean {
  const dirs = [...(process.env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean), "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu"];
  return dirs.some((d) => fs.existsSync(path.join(d, "libvulkan.so.1")));
}
