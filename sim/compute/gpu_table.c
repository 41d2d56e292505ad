/* GPU classes (gpu_table.h). Sources of every number:
 *
 * Peaks (dense, no structured sparsity) and memory bandwidth, vendor data sheets:
 *   [V100]  NVIDIA Tesla V100 data sheet (SXM2): FP32 15.7 TFLOP/s, tensor (FP16) 125 TFLOP/s,
 *           HBM2 900 GB/s. No TF32 or BF16 support.
 *           https://images.nvidia.com/content/technologies/volta/pdf/volta-v100-datasheet-update-us-1165301-r5.pdf
 *   [A100]  NVIDIA A100 data sheet (SXM4 80 GB): FP32 19.5, TF32 156, FP16/BF16 312 TFLOP/s,
 *           HBM2e 2039 GB/s.
 *           https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf
 *   [H100]  NVIDIA H100 data sheet (SXM5): FP32 67, TF32 494.7, FP16/BF16 989.4 TFLOP/s (the
 *           sheet's 989 / 1979 are with sparsity), HBM3 3.35 TB/s.
 *           https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet
 *   [H200]  NVIDIA H200 Tensor Core GPU product page (SXM): FP32 67, TF32 494.7, FP16/BF16 989.4
 *           TFLOP/s (the page's 989 / 1979 are with sparsity), HBM3e 4.8 TB/s; the H100's GH100
 *           chip with its 132 multiprocessors and a faster memory.
 *           https://www.nvidia.com/en-us/data-center/h200/
 *   [P100]  NVIDIA Tesla P100 PCIe 16 GB data sheet: FP32 9.3, FP16 18.7 TFLOP/s (no tensor
 *           cores: half2 on the CUDA cores), HBM2 732 GB/s. No TF32 or BF16 support. The Pascal
 *           servers of Horovod's published scaling benchmark (4 GPUs a server, PCIe).
 *           https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-PCIe-datasheet.pdf
 *   [P100-SXM2] NVIDIA Tesla P100 data sheet, "P100 for NVLink-optimized servers" (SXM2):
 *           FP32 10.6, FP16 21.2 TFLOP/s, HBM2 732 GB/s; the GPU of the DGX-1 whose TensorFlow
 *           throughputs traces/reference/compute/throughputs.csv holds (tf-p100-*).
 *           https://images.nvidia.com/content/tesla/pdf/nvidia-tesla-p100-datasheet.pdf
 *   [3090]  NVIDIA Ampere GA102 architecture white paper, GeForce RTX 3090: FP32 35.6, TF32 35.6,
 *           FP16 and BF16 tensor with FP32 accumulate 71 TFLOP/s, GDDR6X 936 GB/s.
 *           https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf
 *
 * Achieved fractions and launch overhead, published measurements:
 *   [GEMM]  an FP16 tensor-core GEMM (cuBLAS, M = N = K = 8192) reaches about 101 TFLOP/s on a
 *           V100 whose tensor peak at its clock is 112 TFLOP/s: 0.9 of peak.
 *           https://forums.developer.nvidia.com/t/understanding-ipc-and-issue-slot-utilization-when-using-tensor-cores/79781
 *           0.9 is applied to every class and precision (large GEMMs/convolutions of the model
 *           layers) except the H100, whose own measured ceilings [H100-MEAS] are used.
 *   [MEM]   Jia, Maggioni, Staiger, Scarpazza: Dissecting the NVIDIA Volta GPU Architecture via
 *           Microbenchmarking, 2018, https://arxiv.org/abs/1804.06826 : V100 global memory
 *           reaches 750 GB/s of 900 (0.83); applied to every class but the H100.
 *   [H100-MEAS] measured for the H100 itself with bench/torch_gpu.py (its "ceilings" table:
 *           the median of 3 windows of cuBLAS 8192^3 products through PyTorch 2.11, and a 1 GiB
 *           device copy counting bytes read plus written) on an H100 80GB HBM3 (SXM, driver
 *           580.159.04), 2026-11-22: FP32 51.5, TF32 404.7, FP16 783.4, BF16 809.4 TFLOP/s, copy
 *           3012 GB/s; traces/reference/compute/README.md gives the run.
 *   [SM]    multiprocessor counts, the architecture white papers: V100 80 (NVIDIA Tesla V100
 *           GPU Architecture, 2017), A100 108 (NVIDIA A100 Tensor Core GPU Architecture, 2020),
 *           H100 SXM5 132 (NVIDIA H100 Tensor Core GPU Architecture, 2022; PyTorch reported 132
 *           on the measured H100 and on the measured H200), RTX 3090 82 ([3090]), P100 56
 *           (NVIDIA Tesla P100 white paper, 2016).
 *   [TILE]  tile overheads of convolutions and dense layers, measured on the H100 [H100-MEAS]
 *           with bench/torch_layers.py (traces/reference/compute/h100-layers.csv: every layer of
 *           torchvision's ResNet-50 at batch 128 run alone, forward and backward, cuDNN's
 *           algorithm search on): n0, k0 of 1 / (1 + n0/N + k0/K) fitted (least squares of the
 *           log time, grid of 8 and 16) to ResNet-50's 53 convolutions and its dense layer, per
 *           precision: fp32 16, 112; tf32 272, 432; fp16 216, 672 (bf16 takes fp16's; not
 *           measured). A class's overheads are these times the rate of one of its
 *           multiprocessors over the H100's (peak / [SM]): the fixed costs of a tile (loading
 *           operands, writing results) take the same time whatever the tensor cores' speed, so a
 *           faster multiprocessor needs more channels to hide them. Checked on layers not fitted
 *           (ResNet-101, VGG-16) and on published throughputs of other classes
 * (docs/VALIDATION.md). [NORM]  the same measurement: ResNet-50's batch-norm layers (with their
 * ReLU and residual add) take 1.52 times (110.7 against 72.7 ms over fp32, tf32 and fp16) what the
 * model gives at the copy bandwidth, so the H100's normalization bandwidth is 3012 / 1.52 = 1981
 * GB/s, 0.591 of the peak. Other classes: not measured, their mem_fraction. [H200-MEAS] measured
 * for the H200 itself with bench/torch_gpu.py (ceilings table) on an H200 (SXM, driver 580.159.04),
 * 2026-11-23: FP32 51.2, TF32 382.6, FP16 703.8, BF16 784.4 TFLOP/s, copy 4219.6 GB/s;
 * traces/reference/compute/README.md gives the run. Its normalization bandwidth is the copy rate
 * over the H100's 1.52 [NORM] (same multiprocessors), and its tile overheads are the H100's [TILE]:
 * nothing was fitted on the H200, whose measured throughputs check the model (h200-measured.csv).
 *   [LAUNCH] NVIDIA, Getting Started with CUDA Graphs,
 *           https://developer.nvidia.com/blog/cuda-graphs/ : back-to-back launches of a short
 *           kernel cost about 3.8 us each against 2.9 us of execution; syncsim charges 4 us per
 *           kernel launch.
 *   [MAXPOOL] the same measurement as [TILE]: ResNet-50's 3x3 stride-2 max pool (128 x 64 x
 *           112 x 112 in) took 402.8 us forward and 1251.4 us backward at fp32 and tf32 (the mean
 *           of the two rows), 431.9 and 976.0 us at fp16: far from its traffic at the copy rate
 *           (171 and 307 us), and no faster at 16 bits. Over the bytes of its fp32 traffic
 *           (forward in + out, backward 2 x in + out, 4 bytes an element), less one launch: fp32
 *           1.29e12 forward, 0.741e12 backward; 16-bit 1.20e12 and 0.951e12 bytes/s. The H200
 *           (the same GH100 multiprocessors) takes the H100's: its own ResNet-50 max pool took
 *           402.4 and 1213.3 us at fp32, 416.0 and 971.7 us at fp16 (h200-layers.csv), within 4 %.
 *           Checked on layers not fitted: AlexNet's three max pools and VGG-16's five 2x2 ones
 *           (docs/VALIDATION.md). Other classes: not measured, their streaming bandwidth. */
#include "sim/compute/gpu_table.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "common/status.h"

#define T                  1e12
#define GEMM_FRACTION      0.9                      /* [GEMM] */
#define MEM_FRACTION       0.83                     /* [MEM] */
#define LAUNCH_S           4e-6                     /* [LAUNCH] */
#define H100_NORM_FRACTION (3012.0 / 1.52 / 3350.0) /* [NORM] */
#define H200_NORM_FRACTION (4219.6 / 1.52 / 4800.0) /* [H200-MEAS] */
#define NO_MAXPOOL                                                                                 \
    {                                                                                              \
        {0, 0}, {                                                                                  \
            0, 0                                                                                   \
        }                                                                                          \
    }
/* [MAXPOOL] the GH100's (H100 and H200) */
#define GH100_MAXPOOL                                                                              \
    {                                                                                              \
        {1.29e12, 0.741e12}, {                                                                     \
            1.20e12, 0.951e12                                                                      \
        }                                                                                          \
    }
#define FRACTIONS                                                                                  \
    { GEMM_FRACTION, GEMM_FRACTION, GEMM_FRACTION, GEMM_FRACTION }

static const gpu_class gpu_classes[] = {
    {"v100",
     "Tesla V100 SXM2 [V100]",
     {15.7 * T, 0, 125 * T, 0},
     900e9,
     FRACTIONS,
     MEM_FRACTION,
     LAUNCH_S,
     80, /* [SM] */
     0,
     NO_MAXPOOL},
    {"a100",
     "A100 SXM4 80 GB [A100]",
     {19.5 * T, 156 * T, 312 * T, 312 * T},
     2039e9,
     FRACTIONS,
     MEM_FRACTION,
     LAUNCH_S,
     108, /* [SM] */
     0,
     NO_MAXPOOL},
    {"h100",
     "H100 SXM5 [H100] [H100-MEAS]",
     {67 * T, 494.7 * T, 989.4 * T, 989.4 * T},
     3.35e12,
     {51.5 / 67, 404.7 / 494.7, 783.4 / 989.4, 809.4 / 989.4},
     3012.0 / 3350.0,
     LAUNCH_S,
     132, /* [SM] */
     H100_NORM_FRACTION,
     GH100_MAXPOOL},
    {"rtx3090",
     "GeForce RTX 3090 [3090]",
     {35.6 * T, 35.6 * T, 71 * T, 71 * T},
     936e9,
     FRACTIONS,
     MEM_FRACTION,
     LAUNCH_S,
     82, /* [SM] */
     0,
     NO_MAXPOOL},
    {"p100",
     "Tesla P100 PCIe 16 GB [P100]",
     {9.3 * T, 0, 18.7 * T, 0},
     732e9,
     FRACTIONS,
     MEM_FRACTION,
     LAUNCH_S,
     56, /* [SM] */
     0,
     NO_MAXPOOL},
    {"p100-sxm2",
     "Tesla P100 SXM2 (NVLink) [P100-SXM2]",
     {10.6 * T, 0, 21.2 * T, 0},
     732e9,
     FRACTIONS,
     MEM_FRACTION,
     LAUNCH_S,
     56, /* [SM] */
     0,
     NO_MAXPOOL},
    {"h200",
     "H200 SXM [H200] [H200-MEAS]",
     {67 * T, 494.7 * T, 989.4 * T, 989.4 * T},
     4.8e12,
     {51.2 / 67, 382.6 / 494.7, 703.8 / 989.4, 784.4 / 989.4},
     4219.6 / 4800.0,
     LAUNCH_S,
     132, /* [SM] */
     H200_NORM_FRACTION,
     GH100_MAXPOOL},
};

static const char *const precision_names[SIM_PRECISION_COUNT + 1] = {"fp32", "tf32", "fp16", "bf16",
                                                                     "pytorch"};

int gpu_table_count(void) {
    return (int)(sizeof gpu_classes / sizeof gpu_classes[0]);
}

const gpu_class *gpu_table_at(int i) {
    return i >= 0 && i < gpu_table_count() ? &gpu_classes[i] : NULL;
}

const char *gpu_table_names(const char *sep, char *buf, unsigned long buf_bytes) {
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < gpu_table_count() && used < buf_bytes; i++)
        used += (size_t)snprintf(buf + used, buf_bytes - used, "%s%s", i ? sep : "",
                                 gpu_classes[i].name);
    return buf;
}

const char *gpu_table_choices(void) {
    static char choices[160];
    if (!choices[0]) gpu_table_names("|", choices, sizeof choices);
    return choices;
}

int gpu_table_find(const char *option, const char *name, const gpu_class **out) {
    for (int i = 0; i < gpu_table_count(); i++)
        if (name && !strcasecmp(name, gpu_classes[i].name)) {
            *out = &gpu_classes[i];
            return SS_OK;
        }
    char names[160];
    gpu_table_names(", ", names, sizeof names);
    return ss_error_set(SS_EUSAGE, "%s: unknown GPU class '%s' (available: %s)", option,
                        name ? name : "", names);
}

int sim_precision_parse(const char *option, const char *text, sim_precision *out) {
    for (int i = 0; i <= SIM_PRECISION_PYTORCH; i++)
        if (text && !strcasecmp(text, precision_names[i])) {
            *out = (sim_precision)i;
            return SS_OK;
        }
    return ss_error_set(SS_EUSAGE,
                        "%s: unknown precision '%s' (valid: pytorch, fp32, tf32, fp16, bf16)",
                        option, text ? text : "");
}

const char *sim_precision_name(sim_precision p) {
    return (unsigned)p <= SIM_PRECISION_PYTORCH ? precision_names[p] : "?";
}

double sim_precision_element_bytes(sim_precision p) {
    return p == SIM_PRECISION_FP16 || p == SIM_PRECISION_BF16 ? 2.0 : 4.0;
}

sim_precision gpu_class_effective_precision(const gpu_class *g, sim_precision p) {
    return (unsigned)p < SIM_PRECISION_COUNT && g->peak_flops[p] > 0 ? p : SIM_PRECISION_FP32;
}

double gpu_class_achieved_flops(const gpu_class *g, sim_precision p) {
    sim_precision e = gpu_class_effective_precision(g, p);
    return g->peak_flops[e] * g->compute_fraction[e];
}

double gpu_class_achieved_bw_Bps(const gpu_class *g) {
    return g->mem_bw_Bps * g->mem_fraction;
}

double gpu_class_maxpool_bw_Bps(const gpu_class *g, sim_precision p, int backward) {
    const sim_precision e = gpu_class_effective_precision(g, p);
    const int half = e == SIM_PRECISION_FP16 || e == SIM_PRECISION_BF16;
    return g->maxpool_Bps[half][backward ? 1 : 0];
}

double gpu_class_norm_bw_Bps(const gpu_class *g) {
    return g->mem_bw_Bps * (g->norm_mem_fraction > 0 ? g->norm_mem_fraction : g->mem_fraction);
}

/* [TILE]: the overheads measured on the H100, and the rate of one of its multiprocessors */
static const double tile_n0[SIM_PRECISION_COUNT] = {16, 272, 216, 216};
static const double tile_k0[SIM_PRECISION_COUNT] = {112, 432, 672, 672};
static const double tile_ref_sm_flops[SIM_PRECISION_COUNT] = {67 * T / 132, 494.7 * T / 132,
                                                              989.4 * T / 132, 989.4 * T / 132};

double gpu_class_matmul_efficiency(const gpu_class *g, sim_precision p, double n, double k) {
    if (!(n > 0) || !(k > 0) || g->sms < 1) return 1.0;
    const sim_precision e = gpu_class_effective_precision(g, p);
    const double scale = g->peak_flops[e] / g->sms / tile_ref_sm_flops[e];
    return 1.0 / (1.0 + tile_n0[e] * scale / n + tile_k0[e] * scale / k);
}
