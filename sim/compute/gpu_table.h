/* GPU classes: peak FLOP/s per precision, memory bandwidth, the fractions of them that training
 * kernels reach, and the kernel launch overhead, for the per-layer compute model (compute.h) and
 * the generated platforms' host speed (platform_gen.h). Every number cites its source in
 * gpu_table.c and in docs/COMPUTE.md.
 *
 *     const gpu_class *g;  if (gpu_table_find("--gpu", "a100", &g) != SS_OK) ...;
 *     sim_precision p;     sim_precision_parse("--precision", "fp16", &p);
 *     double rate = gpu_class_achieved_flops(g, p);      // FLOP/s a large GEMM/conv reaches
 */
#ifndef SS_SIM_GPU_TABLE_H
#define SS_SIM_GPU_TABLE_H

typedef enum sim_precision {
    SIM_PRECISION_FP32 = 0, /* CUDA cores */
    SIM_PRECISION_TF32 = 1, /* tensor cores, fp32 storage (Ampere and later; else fp32) */
    SIM_PRECISION_FP16 = 2, /* tensor cores, fp16 storage (mixed precision, as AMP) */
    SIM_PRECISION_BF16 = 3, /* tensor cores, bf16 storage (Ampere and later; else fp32) */
    SIM_PRECISION_COUNT,    /* the table's columns */
    /* fp32 storage as PyTorch runs it by default: convolutions at tf32 where the class has it
     * (cuDNN: torch.backends.cudnn.allow_tf32 is True), every other product at fp32 (cuBLAS:
     * torch.backends.cuda.matmul.allow_tf32 is False since PyTorch 1.12) */
    SIM_PRECISION_PYTORCH = SIM_PRECISION_COUNT
} sim_precision;

typedef struct gpu_class {
    const char *name;                             /* "v100", "a100", "h100", "rtx3090" */
    const char *description;                      /* the exact part the numbers are for */
    double peak_flops[SIM_PRECISION_COUNT];       /* dense peak FLOP/s; 0: not supported */
    double mem_bw_Bps;                            /* peak memory bandwidth, bytes/s */
    double compute_fraction[SIM_PRECISION_COUNT]; /* of the peak reached by large GEMMs */
    double mem_fraction;                          /* of the peak bandwidth reached by streaming */
    double launch_s;                              /* per kernel launch, seconds */
    int sms;                                      /* streaming multiprocessors */
    double norm_mem_fraction; /* of the peak bandwidth reached by normalization (0: mem_fraction) */
    /* max pooling's rate in bytes/s of its fp32 traffic (4 bytes an element, whatever the
     * precision), [0][pass] at fp32 and tf32, [1][pass] at fp16 and bf16, pass 0 forward and 1
     * backward; 0: not measured (the streaming bandwidth, at the precision's element size) */
    double maxpool_Bps[2][2];
} gpu_class;

int gpu_table_count(void);
const gpu_class *gpu_table_at(int i);
/* Case-insensitive; SS_EUSAGE naming `option` and every class of the table otherwise. */
int gpu_table_find(const char *option, const char *name, const gpu_class **out);
/* The class names joined by sep ("v100|a100|...|h200" for "|") into buf; returns buf. */
const char *gpu_table_names(const char *sep, char *buf, unsigned long buf_bytes);
/* The same joined by "|", in a buffer of its own (the choices of --gpu). */
const char *gpu_table_choices(void);

/* "pytorch", "fp32", "tf32", "fp16", "bf16"; SS_EUSAGE naming `option` and the valid ones
 * otherwise. */
int sim_precision_parse(const char *option, const char *text, sim_precision *out);
const char *sim_precision_name(sim_precision p);
/* Bytes of one activation element: 4 (pytorch, fp32, tf32) or 2 (fp16, bf16). */
double sim_precision_element_bytes(sim_precision p);

/* The precision the class really runs p at: p where the class supports it, else fp32 (pytorch:
 * fp32; sim_compute_layer_precision tells a convolution's). */
sim_precision gpu_class_effective_precision(const gpu_class *g, sim_precision p);
/* peak x fraction of the effective precision, FLOP/s */
double gpu_class_achieved_flops(const gpu_class *g, sim_precision p);
/* peak x fraction, bytes/s */
double gpu_class_achieved_bw_Bps(const gpu_class *g);
/* The bandwidth normalization layers reach, bytes/s. */
double gpu_class_norm_bw_Bps(const gpu_class *g);
/* Max pooling's measured rate at precision p, forward (backward = 0) or backward (1), over the
 * bytes of its fp32 traffic; 0 where the class has none measured. */
double gpu_class_maxpool_bw_Bps(const gpu_class *g, sim_precision p, int backward);
/* The share of gpu_class_achieved_flops that a matrix product of n output columns and reduction
 * length k reaches: 1 / (1 + n0/n + k0/k), where the tile overheads n0, k0 grow with the rate of
 * one multiprocessor (docs/COMPUTE.md); 1 where n or k is 0 (not known). */
double gpu_class_matmul_efficiency(const gpu_class *g, sim_precision p, double n, double k);

#endif
