/* The option table of every subcommand (see options.h): its rows, the policies' options as rows
 * of their own, and looking rows up. */
#include "cli/options_internal.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/compute/gpu_table.h"
#include "sim/net/coll/collective.h"
#include "sim/policy/policy_registry.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(run_config, field), sizeof(((run_config *)0)->field)

/* The one table: these rows, then the policy options of the registry
 * (sim/policy/policy_registry.h), then tail_rows. Order is the order of --help and of config.ini.
 * The last column limits a row to some policies (0: any); setting such an option for another policy
 * is an error. The rows marked "registry" get their choices or default from the registry when the
 * table is built. */
#define SIM POL_SIMULATED
static const opt_def head_rows[] = {
    {"help", OPT_TYPE_FLAG, F(help), NULL, 0, 0, CMD_ALL, NULL, "", "print this help and exit", 0},
    {"config", OPT_TYPE_STRING, F(config_file), "", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_PLATFORM | CMD_BENCH_NETWORK, NULL, "FILE",
     "read options from an INI file (e.g. a run's config.ini) before the command line", 0},
    {"seed", OPT_TYPE_U64, F(seed), "1", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_VALIDATE | CMD_BENCH_EMULATION, NULL, "S",
     "seed of every random choice; the same seed gives the same run bit for bit", 0},
    {"out", OPT_TYPE_STRING, F(out_dir), "out", 0, 0,
     CMD_RUN | CMD_SWEEP | CMD_REPORT | CMD_REPLAY | CMD_BENCH_NETWORK | CMD_VALIDATE |
         CMD_BENCH_EMULATION,
     NULL, "DIR", "output directory (created if needed)", 0},
    {"device", OPT_TYPE_CHOICE, F(device), "auto", 0, 0,
     CMD_RUN | CMD_BENCH_KERNELS | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION, "auto|cpu|cuda", "D",
     "compute device; auto takes a usable GPU, else the CPU (the banner's device line says which; "
     "--device cuda says why no GPU is usable)",
     0},
    {"model", OPT_TYPE_STRING, F(model), "mlp", 0, 0,
     CMD_RUN | CMD_BENCH_KERNELS | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_VALIDATE, NULL,
     "M",
     "logreg | mlp | mlp:W1,W2,... (hidden widths) | cnn | cnn:C1,C2,D1,... (conv channels, "
     "dense widths) | cnn:lenet | resnet:D[,proj] (D = 6n+2: 20, 32, 44, 56, 110) | vgg:D "
     "(11, 13, 16, 19) | gpt:L,D,H,T[,P] (language model: layers, width, heads, tokens, dropout) "
     "| gpt:wlm (SelSync's Transformer LM, PyTorch's word_language_model)",
     0},
    {"dataset", OPT_TYPE_STRING, F(dataset), "fashion-mnist", 0, 0,
     CMD_RUN | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_VALIDATE, NULL, "NAME|PATH",
     "fashion-mnist | mnist | cifar10 | synthetic | a directory of IDX or CIFAR-10 files; text "
     "for gpt models: web-bible (their default) | wikitext-2 | wikitext-103 | ptb | a directory "
     "of their files",
     0},
    {"data-dir", OPT_TYPE_STRING, F(data_dir), "", 0, 0,
     CMD_RUN | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_VALIDATE, NULL, "DIR",
     "directory of the named data set (default: its Debian package's directory)", 0},
    {"epochs", OPT_TYPE_DOUBLE, F(epochs), "5", 0.001, 10000,
     CMD_RUN | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_VALIDATE, NULL, "E",
     "passes over the training set by all workers together (fractions allowed)", 0},
    {"batch", OPT_TYPE_INT, F(batch), "64", 1, 65536,
     CMD_RUN | CMD_BENCH_KERNELS | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_BENCH_REPLAY |
         CMD_REPLAY | CMD_VALIDATE,
     NULL, "B", "mini-batch size per worker (train: resnet, vgg 128, gpt 20 by their recipe)", 0},
    {"lr", OPT_TYPE_DOUBLE, F(lr), "0", 0, 100, CMD_RUN | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION,
     NULL, "X",
     "learning rate (0: resnet, vgg 0.1 x N x B / 128, gpt:wlm 2.0, gpt:L,D,H,T 0.5 by their "
     "recipe; one worker "
     "0.01 logreg, else 0.02; several workers 0.05, cnn 0.02)",
     0},
    {"momentum", OPT_TYPE_DOUBLE, F(momentum), "0.9", 0, 0.9999,
     CMD_RUN | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION, NULL, "X", "SGD momentum (0 = plain SGD)",
     0},
    {"nesterov", OPT_TYPE_FLAG, F(nesterov), "false", 0, 0, CMD_RUN, NULL, "",
     "Nesterov momentum, PyTorch's: w -= lr (g' + mu v) after v = mu v + g'", 0},
    {"layers", OPT_TYPE_FLAG, F(bench_layers), "false", 0, 0, CMD_BENCH_KERNELS, NULL, "",
     "also each layer's forward and backward time (events on a GPU, the wall clock after each "
     "layer on the CPU), its GFLOP/s, and the convolutions' rate against SGEMM",
     0},
    {"seconds", OPT_TYPE_DOUBLE, F(bench_seconds), "2", 0.05, 3600, CMD_BENCH_KERNELS, NULL, "S",
     "timed seconds per model: the best of 5 windows of S/5 seconds (at least 2 steps each) is "
     "reported; longer is steadier on a shared machine",
     0},
    {"weight-decay", OPT_TYPE_DOUBLE, F(weight_decay), "0", 0, 1, CMD_RUN, NULL, "X",
     "L2 weight decay in PyTorch SGD's coupled form: g' = g + X w", 0},
    {"lr-schedule", OPT_TYPE_STRING, F(lr_schedule), "constant", 0, 0, CMD_RUN, NULL, "S",
     "constant | step[:EPOCHS[:GAMMA]] (every EPOCHS) | step-iters:N[:GAMMA] (every N steps) | "
     "multistep:E1,E2,...[:GAMMA] (at those epochs) | cosine[:MIN_LR]; GAMMA defaults to 0.1",
     0},
    {"lr-warmup", OPT_TYPE_DOUBLE, F(lr_warmup), "0", 0, 10000, CMD_RUN, NULL, "E",
     "linear learning-rate warm-up over E epochs: step t < W = E x steps per epoch takes "
     "(t+1)/W of the scheduled rate (0: none)",
     0},
    {"augment", OPT_TYPE_CHOICE, F(augment), "auto", 0, 0, CMD_RUN, "auto|yes|no", "A",
     "image data: random crop of the image padded by 4 pixels and random horizontal flip, drawn "
     "per worker and step (auto: the model's recipe)",
     0},
    {"clip-norm", OPT_TYPE_DOUBLE, F(clip_norm), "0", 0, 1e6, CMD_RUN, NULL, "X",
     "clip the gradient's L2 norm to X before each optimizer step, as "
     "torch.nn.utils.clip_grad_norm_ (0: none)",
     0},
    {"bn-stats", OPT_TYPE_CHOICE, F(bn_stats), "average", 0, 0, CMD_RUN, "average|local", "S",
     "batch normalization's running statistics at a synchronization: average (over the same "
     "workers, whatever is exchanged; their bytes are sent) or local (each worker keeps its own)",
     SIM},
    {"eval-every", OPT_TYPE_LONG, F(eval_every), "0", 0, 1e12, CMD_RUN | CMD_BENCH_EMULATION, NULL,
     "K",
     "evaluate the test set every K steps (0: once per epoch for one worker, ten times per "
     "epoch with several); always at the end",
     0},
    {"progress", OPT_TYPE_AUTO, F(progress), "auto", 0, 0, CMD_RUN | CMD_REPLAY, NULL,
     "auto|yes|no", "progress bar on stderr (auto: when stderr is a terminal)", 0},

    {"policy", OPT_TYPE_CHOICE, F(policy), "", 0, 0,
     CMD_TRAIN | CMD_REPLAY | CMD_VALIDATE | CMD_BENCH_EMULATION, NULL /* registry */, "P",
     "synchronization policy; without it (and with one worker) train runs without simulation", 0},
    {"workers", OPT_TYPE_INT, F(workers), "1", 1, 4096,
     CMD_RUN | CMD_BENCH_NETWORK | CMD_BENCH_COUPLING | CMD_BENCH_EMULATION | CMD_VALIDATE, NULL,
     "N", "workers (each a SimGrid actor with a real replica)", 0},
    {"platform", OPT_TYPE_STRING, F(platform), "", 0, 0, CMD_TRAIN | CMD_REPLAY | CMD_BENCH_NETWORK,
     NULL, "FILE",
     "SimGrid platform file (default: a star cluster generated from the options below)", SIM},
    {"bandwidth", OPT_TYPE_STRING, F(bandwidth), "25Gbps", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK | CMD_VALIDATE, NULL, "BW",
     "generated platform: link bandwidth (5Gbps, 100Gbps, 1.25GBps...; compare: the one network "
     "when --networks is not given)",
     SIM},
    {"latency", OPT_TYPE_STRING, F(latency), "tier", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK | CMD_VALIDATE, NULL, "T",
     "generated platform: link latency (5us, 1ms...; tier: by bandwidth, 25us at 5Gbps down to "
     "1us at 100Gbps)",
     SIM},
    {"topology", OPT_TYPE_CHOICE, F(topology), "star", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, "star|fat-tree", "T",
     "generated platform: topology", SIM},
    {"gpu", OPT_TYPE_CHOICE, F(gpu), "v100", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "G",
     "generated platform: GPU class (host speed = its FP32 FLOP/s)", SIM},
    {"network-model", OPT_TYPE_CHOICE, F(network_model), "LV08", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_BENCH_NETWORK | CMD_PLATFORM, "LV08|CM02|ns-3|SMPI|TCP-stream", "M",
     "SimGrid network model (CM02: plain flows; ns-3: packet-level TCP, stars only; SMPI: LV08 "
     "with size-dependent TCP factors; TCP-stream: SMPI's below 64 KiB, a warm stream's above)",
     SIM},
    {"collective", OPT_TYPE_CHOICE, F(collective), "auto", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_BENCH_NETWORK | CMD_VALIDATE,
     NULL /* sim/net/coll/collective.h's, ps */, "C",
     "exchange of synchronous steps: all-reduce algorithm, or a parameter server", SIM},
    {"segment", OPT_TYPE_DOUBLE, F(segment_bytes), "0", 0, 1e12, CMD_RUN | CMD_REPLAY, NULL,
     "BYTES", "cut collective messages into segments of this size (0: whole)", SIM},
    {"channels", OPT_TYPE_INT, F(channels), "1", 1, 16, CMD_RUN | CMD_REPLAY | CMD_BENCH_NETWORK,
     NULL, "C",
     "ring and dbtree all-reduces: split the vector over C rings, or C trees (2 at least), run "
     "at once (on nodes, through different GPUs and NICs, as NCCL's channels)",
     SIM},
    {"protocol", OPT_TYPE_CHOICE, F(protocol), "auto", 0, 0,
     CMD_RUN | CMD_REPLAY | CMD_BENCH_NETWORK, "auto|LL|LL128|Simple", "P",
     "NCCL protocol of auto, hier, hier-coarse, dbtree", SIM},
    {"ps-servers", OPT_TYPE_INT, F(ps_servers), "1", 1, 1024, CMD_RUN | CMD_REPLAY, NULL, "K",
     "parameter servers (shards) for ssp, asp or --collective ps", SIM},
    {"compute", OPT_TYPE_STRING, F(compute), "model", 0, 0, CMD_RUN | CMD_REPLAY, NULL, "MODE",
     "compute time: model (per-layer GPU model: FLOPs, memory traffic, launches) | flops "
     "(counted FLOPs on the host's speed) | measured[:SCALE] (train); replay --profile: model "
     "(where the profile has per-layer data) | flops | measured[:SCALE] (the default for a "
     "profile imported by syncsim profile import: its measured times)",
     SIM},
    {"threads", OPT_TYPE_STRING, F(threads), "auto", 0, 0,
     CMD_RUN | CMD_BENCH_EMULATION | CMD_BENCH_COUPLING, NULL, "N|auto",
     "threads computing the workers' replicas at once, each with one BLAS thread, or on a GPU "
     "its own CUDA stream (1 to 1024; auto: every core, shared among compare's and sweep's runs "
     "at once); the results are the same for any N",
     SIM},
    {"precision", OPT_TYPE_CHOICE, F(precision), "pytorch", 0, 0, CMD_RUN | CMD_REPLAY,
     "pytorch|fp32|tf32|fp16|bf16", "P",
     "--compute model: arithmetic precision. pytorch: fp32 as PyTorch runs it by default, "
     "convolutions on TF32 tensor cores where the GPU has them (A100, H100, H200, RTX 3090; "
     "cudnn.allow_tf32 is True), other products in strict FP32 (matmul.allow_tf32 is False); "
     "fp32: strict FP32 everywhere; tf32: every product on TF32; fp16/bf16: mixed precision "
     "(AMP) on tensor cores",
     SIM},
    {"framework", OPT_TYPE_CHOICE, F(framework), "eager", 0, 0, CMD_RUN | CMD_REPLAY,
     "eager|graphs|ideal", "F",
     "--compute model: the framework's host time beside the GPU's. eager: PyTorch eager mode "
     "issuing every operation from the host (its measured costs per layer, pass, parameter "
     "tensor and read-back; a step ends when both timelines have); graphs: the step as a CUDA "
     "graph (no host time, cheaper launches); ideal: the GPU's time alone",
     SIM},
    {"compute-jitter", OPT_TYPE_STRING, F(compute_jitter), "auto", 0, 0, CMD_RUN, NULL, "CV",
     "CV of step compute times (auto: the model's measured CV, mlp 0.31, cnn 0.27; 0: none)", SIM},
    {"partition", OPT_TYPE_STRING, F(partition), "", 0, 0, CMD_RUN, NULL, "P",
     "defdp | seldp | seldp-perm | noniid:K (K labels per worker) | dirichlet:ALPHA (label skew, "
     "e.g. 0.5) (default: seldp for selsync, defdp otherwise)",
     SIM},
    {"target-accuracy", OPT_TYPE_DOUBLE, F(target_accuracy), "0", 0, 1, CMD_TRAIN, NULL, "A",
     "test accuracy whose first simulated time is reported as tta_s (0: none)", SIM},
    {"target-perplexity", OPT_TYPE_DOUBLE, F(target_perplexity), "0", 0, 1e12, CMD_TRAIN, NULL, "P",
     "language models: test perplexity whose first simulated time at or below it is reported as "
     "tta_s (0: none)",
     SIM},
    {"dump-gradients", OPT_TYPE_STRING, F(dump_gradients), "", 0, 0, CMD_TRAIN, NULL, "STEPS",
     "write a sample of each worker's gradient at these steps (comma-separated) to "
     "OUT/gradients/, for the report's density plots",
     SIM},
    {"trace", OPT_TYPE_FLAG, F(trace), "true", 0, 0, CMD_RUN, NULL, "",
     "write steps.trace (--trace=false to skip)", SIM},
    {"engine-trace", OPT_TYPE_FLAG, F(engine_trace), "false", 0, 0, CMD_TRAIN | CMD_BENCH_EMULATION,
     NULL, "",
     "emulated runs: write engine-trace.json, the compute engine's timeline (each thread's "
     "steps, averages, evaluations; the simulation thread's waits) as a Chrome trace for "
     "ui.perfetto.dev or chrome://tracing",
     SIM},

};

static const opt_def tail_rows[] = {
    {"straggler-prob", OPT_TYPE_DOUBLE, F(straggler_prob), "0", 0, 1, CMD_RUN, NULL, "P",
     "stragglers: chance that a worker's step is slowed (seeded)", SIM},
    {"straggler-factor", OPT_TYPE_DOUBLE, F(straggler_factor), "2", 1, 1000, CMD_RUN, NULL, "F",
     "stragglers: slowdown of such a step", SIM},
    {"slow-workers", OPT_TYPE_STRING, F(slow_workers), "", 0, 0, CMD_RUN, NULL, "LIST",
     "stragglers: ranks of workers always slower (e.g. 0,5)", SIM},
    {"slow-factor", OPT_TYPE_DOUBLE, F(slow_factor), "2", 1, 1000, CMD_RUN, NULL, "F",
     "stragglers: how much slower --slow-workers compute", SIM},
    {"background", OPT_TYPE_DOUBLE, F(background_load), "0", 0, 1, CMD_RUN, NULL, "LOAD",
     "cross traffic: seeded random flows between hosts taking this fraction of link capacity", SIM},

    {"policies", OPT_TYPE_STRING, F(policies), NULL /* registry */, 0, 0, CMD_COMPARE, NULL, "LIST",
     "compare: policies to run", 0},
    {"networks", OPT_TYPE_STRING, F(networks), "5Gbps,100Gbps", 0, 0, CMD_COMPARE, NULL, "LIST",
     "compare: link bandwidths of generated clusters, or platform files", 0},
    {"partitions", OPT_TYPE_STRING, F(partitions), "iid,dirichlet:0.1", 0, 0, CMD_COMPARE, NULL,
     "LIST",
     "compare: data partitions side by side, each a panel with its own BSP reference: iid (each "
     "policy's own: seldp for selsync, defdp otherwise) or a --partition value (noniid:K, "
     "dirichlet:ALPHA...); --partition P alone runs P only",
     0},
    {"jobs", OPT_TYPE_INT, F(jobs), "2", 1, 256, CMD_COMPARE | CMD_SWEEP, NULL, "J",
     "compare, sweep: runs at once (each in its own process)", 0},
    {"resume", OPT_TYPE_FLAG, F(resume), "false", 0, 0, CMD_SWEEP, NULL, "",
     "sweep: skip the points whose summary.json is complete; rerun the others", 0},
    {"shard", OPT_TYPE_STRING, F(shard), "", 0, 0, CMD_SWEEP, NULL, "I/K",
     "sweep: run only the points i with i mod K = I (0 <= I < K), for batch-scheduler arrays", 0},
    {"target-margin", OPT_TYPE_DOUBLE, F(target_margin), "0.005", 0, 1, CMD_REPORT, NULL, "X",
     "report: TTA target = BSP's final accuracy minus X (same platform, workers and seed); a "
     "language model's: BSP's final perplexity x (1 + X), lower is better",
     0},
    {"hosts", OPT_TYPE_INT, F(hosts), "16", 1, 65536, CMD_PLATFORM, NULL, "N",
     "platform: worker hosts", 0},
    {"ps", OPT_TYPE_INT, F(ps_hosts), "0", 0, 1024, CMD_PLATFORM, NULL, "K",
     "platform: parameter-server hosts (role=ps)", 0},
    {"gpu-efficiency", OPT_TYPE_DOUBLE, F(gpu_efficiency), "1", 1e-6, 1,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "F",
     "generated platform: host speed as a fraction of the GPU's peak FP32 FLOP/s", SIM},
    {"sizes", OPT_TYPE_STRING, F(bench_sizes), "8:1GiB:x2", 0, 0, CMD_BENCH_NETWORK, NULL,
     "LIST|B:E:xF",
     "bench network: message sizes in bytes, a list (1KiB,1GiB) or a range as nccl-tests' -b -e "
     "-f (8:1GiB:x2; B:E:+STEP adds); units K M G T = powers of 1024, KB MB GB TB = of 1000",
     0},
    {"hosts-list", OPT_TYPE_STRING, F(bench_hosts), "16,64,256,1024", 0, 0,
     CMD_BENCH_NETWORK | CMD_BENCH_REPLAY, NULL, "LIST",
     "bench network --smpi, bench replay: host counts", 0},
    {"csv", OPT_TYPE_STRING, F(bench_csv), "", 0, 0, CMD_BENCH_EMULATION, NULL, "FILE",
     "bench emulation: also write the table to FILE as CSV", 0},
    {"smpi", OPT_TYPE_FLAG, F(bench_smpi), "false", 0, 0, CMD_BENCH_NETWORK, NULL, "",
     "bench network: the ring against SMPI's MPI_Allreduce over --hosts-list at --bytes", 0},
    {"references", OPT_TYPE_STRING, F(validate_refs), "traces/reference/nccl", 0, 0, CMD_VALIDATE,
     NULL, "DIR", "validate network: directory of references (one subdirectory each)", 0},
    {"max-error-large", OPT_TYPE_DOUBLE, F(validate_max_large), "0.10", 0, 1000, CMD_VALIDATE, NULL,
     "X", "validate network: bound on the median relative error of sizes >= 1 MiB", 0},
    {"max-error-small", OPT_TYPE_DOUBLE, F(validate_max_small), "0.30", 0, 1000, CMD_VALIDATE, NULL,
     "X", "validate network: bound on the median relative error of sizes < 1 MiB", 0},
    {"throughputs", OPT_TYPE_STRING, F(validate_throughputs), "", 0, 0, CMD_VALIDATE, NULL, "CSV",
     "validate compute: throughputs, layer times (\"\": traces/reference/compute/throughputs.csv)",
     0},
    {"max-error", OPT_TYPE_DOUBLE, F(validate_max_error), "0.15", 0, 10, CMD_VALIDATE, NULL, "X",
     "validate compute: bound on the median relative error of the throughputs", 0},
    {"scaling-references", OPT_TYPE_STRING, F(validate_scaling), "", 0, 0, CMD_VALIDATE, NULL,
     "CSV", "validate scaling: published efficiencies (\"\": traces/reference/scaling/scaling.csv)",
     0},
    {"max-scaling-error", OPT_TYPE_DOUBLE, F(validate_scaling_max_error), "0.15", 0, 10,
     CMD_VALIDATE, NULL, "X",
     "validate scaling: bound on the median relative error of the efficiencies", 0},
    /* generated node platforms: multi-GPU servers (sim/platform/platform_gen.h,
       platforms/README.md) */
    {"nodes", OPT_TYPE_INT, F(nodes), "0", 0, 8192,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "N",
     "generated platform: servers of several GPUs each, filled in order (0: one GPU per host)",
     SIM},
    {"gpus-per-node", OPT_TYPE_INT, F(gpus_per_node), "0", 0, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "G",
     "generated platform with --nodes: GPUs per server (0: workers, or --hosts, / --nodes)", SIM},
    {"nics-per-node", OPT_TYPE_INT, F(nics_per_node), "1", 1, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "R",
     "generated platform with --nodes: NICs (rails) per server; GPU g uses NIC g*R/G", SIM},
    {"intra", OPT_TYPE_CHOICE, F(intra), "nvlink3", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, "nvlink3|nvlink4|pcie3|pcie4", "F",
     "generated platform with --nodes: GPU-to-GPU fabric inside a server (nvlink3 300GBps, "
     "nvlink4 450GBps, pcie3 15.75GBps, pcie4 31.5GBps per GPU and direction)",
     SIM},
    {"intra-bandwidth", OPT_TYPE_STRING, F(intra_bandwidth), "", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "BW",
     "generated platform with --nodes: per-GPU intra-node bandwidth (default: --intra's)", SIM},
    {"intra-latency", OPT_TYPE_STRING, F(intra_latency), "", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "T",
     "generated platform with --nodes: intra-node link latency (default: --intra's)", SIM},
    {"fabric", OPT_TYPE_CHOICE, F(fabric), "ethernet", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, "ethernet|infiniband|roce", "F",
     "generated platform with --nodes: what the NIC links are (LV08's TCP factors: ethernet only)",
     SIM},
    {"pcie-switch", OPT_TYPE_INT, F(pcie_switch), "0", 0, 1024,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, NULL, "K",
     "generated PCIe nodes: GPUs per PCIe switch, sharing its uplink (0: none)", SIM},
    {"p2p", OPT_TYPE_CHOICE, F(p2p), "on", 0, 0,
     CMD_RUN | CMD_PLATFORM | CMD_REPLAY | CMD_BENCH_NETWORK, "on|off", "M",
     "with --pcie-switch: off: GPUs exchange via host memory (GeForce)", SIM},
    {"bytes", OPT_TYPE_DOUBLE, F(bench_bytes), "1e8", 1, 1e13, CMD_BENCH_NETWORK, NULL, "M",
     "bench network --smpi: all-reduce size in bytes", 0},
    {"max-smpi-hosts", OPT_TYPE_INT, F(max_smpi_hosts), "256", 0, 65536,
     CMD_BENCH_NETWORK | CMD_BENCH_REPLAY, NULL, "N",
     "bench network --smpi, bench replay: run SMPI up to this many hosts (it is slow beyond)", 0},
    /* replay and trace (traces/FORMAT.md); "trace" and "workers" repeat names of train rows:
     * find_option_for() picks the row of the subcommand */
    {"trace", OPT_TYPE_STRING, F(replay_trace), "", 0, 0, CMD_REPLAY, NULL, "FILE",
     "replay: a recorded steps.trace (syncsim train writes OUT/steps.trace)", 0},
    {"profile", OPT_TYPE_STRING, F(replay_profile), "", 0, 0, CMD_REPLAY | CMD_BENCH_REPLAY, NULL,
     "NAME|FILE",
     "replay: synthesize the trace from a model profile: a NAME listed below, or a .profile file",
     0},
    {"import", OPT_TYPE_STRING, F(replay_import), "", 0, 0, CMD_REPLAY, NULL, "CSV",
     "replay: a per-step log of a real cluster (columns step,worker,compute_s,sync_s,decision)", 0},
    {"workers", OPT_TYPE_INT, F(replay_workers), "0", 0, 65536, CMD_REPLAY, NULL, "M",
     "replay: workers (0: as recorded, 16 for --profile; more than recorded scales out)", 0},
    {"steps", OPT_TYPE_LONG, F(replay_steps), "0", 0, 1e9, CMD_REPLAY | CMD_BENCH_REPLAY, NULL, "S",
     "replay: global steps (0: all recorded; for --profile the --decisions trace's, else 100)", 0},
    {"scale-out", OPT_TYPE_CHOICE, F(replay_scale_out), "round-robin", 0, 0, CMD_REPLAY,
     "round-robin|sample", "HOW",
     "replay, more workers than recorded: worker j replays recorded worker j mod N, or a "
     "recorded worker drawn each step (seeded)",
     0},
    {"sync-fraction", OPT_TYPE_DOUBLE, F(replay_sync_fraction), NULL, 0, 1, CMD_REPLAY, NULL, "F",
     "replay --profile --policy selsync: each step synchronizes with probability F (1 - LSSR, "
     "seeded draws); no default: this or --decisions is required",
     0},
    {"decisions", OPT_TYPE_STRING, F(replay_decisions), "", 0, 0, CMD_REPLAY, NULL, "FILE",
     "replay --profile --policy selsync: the per-step decisions of this recorded trace (its "
     "first --steps steps; more steps than it records are refused)",
     0},
    {"param-bytes", OPT_TYPE_DOUBLE, F(replay_param_bytes), "0", 0, 1e13, CMD_REPLAY, NULL, "B",
     "replay --import: bytes of one exchange (0: 4 x the parameters of --profile)", 0},
    {"record", OPT_TYPE_FLAG, F(replay_record), "false", 0, 0, CMD_REPLAY, NULL, "",
     "replay: write OUT/steps.trace of the replayed run", 0},
};
#undef SIM

#define HEAD_ROWS ((int)(sizeof head_rows / sizeof head_rows[0]))
#define TAIL_ROWS ((int)(sizeof tail_rows / sizeof tail_rows[0]))

static opt_def options_table[RUN_CONFIG_MAX_OPTIONS];
static int options_count;
#define OPTIONS_COUNT options_count
static pthread_once_t table_once = PTHREAD_ONCE_INIT;
static char policy_choices[256];                          /* "|bsp|ssp|..." */
static char compare_policies[RUN_CONFIG_TEXT];            /* compare's default --policies */
static char enum_choices[RUN_CONFIG_POLICY_OPTIONS][256]; /* "a|b|c" of an ENUM option */
static char
    collective_choices[128]; /* the all-reduce algorithms (sim/net/coll/collective.h), and ps */

/* The row of policy option k: its slot in run_config, and the policies whose row lists it. */
static opt_def policy_option_row(int k) {
    static const opt_type types[] = {
        [POLICY_OPTION_INT] = OPT_TYPE_INT,         [POLICY_OPTION_LONG] = OPT_TYPE_LONG,
        [POLICY_OPTION_DOUBLE] = OPT_TYPE_DOUBLE,   [POLICY_OPTION_ENUM] = OPT_TYPE_CHOICE,
        [POLICY_OPTION_DURATION] = OPT_TYPE_STRING, [POLICY_OPTION_THRESHOLD] = OPT_TYPE_STRING};
    const policy_option *o = policy_option_at(k);
    opt_def row = {o->name,
                   types[o->type],
                   offsetof(run_config, policy_options) + (size_t)k * sizeof(run_policy_value),
                   sizeof(run_policy_value),
                   o->def,
                   o->min,
                   o->max,
                   CMD_RUN | (o->replay & 1 ? CMD_REPLAY : 0u) |
                       (o->replay & 2 ? CMD_VALIDATE : 0u),
                   NULL,
                   o->metavar,
                   o->help,
                   0};
    if (o->type == POLICY_OPTION_ENUM) {
        size_t len = 0;
        for (int i = 0; o->names[i].name; i++)
            len += (size_t)snprintf(enum_choices[k] + len, sizeof enum_choices[k] - len, "%s%s",
                                    i ? "|" : "", o->names[i].name);
        row.choices = enum_choices[k];
    }
    for (int i = 0; i < policy_registry_count(); i++)
        if (policy_option_applies(o, policy_registry_at(i)))
            row.policies |= POL_OF(policy_registry_at(i)->kind);
    return row;
}

static void table_build(void) {
    int n = 0;
    SS_ASSERT(HEAD_ROWS + policy_option_count() + TAIL_ROWS <= RUN_CONFIG_MAX_OPTIONS);
    SS_ASSERT(policy_option_count() <= RUN_CONFIG_POLICY_OPTIONS);
    policy_choices[0] = '|';
    policy_registry_names("|", policy_choices + 1, sizeof policy_choices - 1);
    policy_registry_compare_default(compare_policies, sizeof compare_policies);
    size_t len =
        strlen(sim_allreduce_algo_names("|", collective_choices, sizeof collective_choices));
    snprintf(collective_choices + len, sizeof collective_choices - len, "|ps");
    for (int i = 0; i < HEAD_ROWS; i++)
        options_table[n++] = head_rows[i];
    for (int k = 0; k < policy_option_count(); k++)
        options_table[n++] = policy_option_row(k);
    for (int i = 0; i < TAIL_ROWS; i++)
        options_table[n++] = tail_rows[i];
    for (int i = 0; i < n; i++) {
        if (!strcmp(options_table[i].name, "policy")) options_table[i].choices = policy_choices;
        if (!strcmp(options_table[i].name, "policies")) options_table[i].def = compare_policies;
        if (!strcmp(options_table[i].name, "collective"))
            options_table[i].choices = collective_choices;
        if (!strcmp(options_table[i].name, "gpu")) options_table[i].choices = gpu_table_choices();
    }
    options_count = n;
}

static void table_init(void) {
    pthread_once(&table_once, table_build);
}

opt_def *opt_rows(void) {
    table_init();
    return options_table;
}

int opt_count(void) {
    table_init();
    return options_count;
}

void *field_of(run_config *cfg, const opt_def *o) {
    return (char *)cfg + o->offset;
}

const void *const_field_of(const run_config *cfg, const opt_def *o) {
    return (const char *)cfg + o->offset;
}

/* Edit distance, for "did you mean". */
int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int d[64][64];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
            d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
    return d[la][lb];
}

const char *closest_option(unsigned command, const char *name) {
    const char *best = NULL;
    int best_d = 4;
    for (int i = 0; i < OPTIONS_COUNT; i++) {
        if (!(options_table[i].commands & command)) continue;
        int dist = edit_distance(name, options_table[i].name);
        if (dist < best_d) best_d = dist, best = options_table[i].name;
    }
    return best;
}

int find_option(const char *name) {
    for (int i = 0; i < OPTIONS_COUNT; i++)
        if (strcmp(options_table[i].name, name) == 0) return i;
    return -1;
}

/* The row of `name` that `command` accepts (a name may have one row per subcommand, as replay's
 * --trace FILE and train's --trace flag), else the first row of that name. */
int find_option_for(unsigned command, const char *name) {
    for (int i = 0; i < OPTIONS_COUNT; i++)
        if ((options_table[i].commands & command) && strcmp(options_table[i].name, name) == 0)
            return i;
    return find_option(name);
}

/* The name messages give the subcommand: `syncsim real` parses train's options. */
static const char *command_label_override;

void options_name_command(const char *name) {
    command_label_override = name;
}

const char *command_name(unsigned command);
const char *command_label(unsigned command) {
    return command_label_override ? command_label_override : command_name(command);
}

const char *command_name(unsigned command) {
    switch (command) {
    case CMD_TRAIN:
        return "train";
    case CMD_COMPARE:
        return "compare";
    case CMD_PLATFORM:
        return "platform";
    case CMD_BENCH:
        return "bench";
    case CMD_BENCH_KERNELS:
        return "bench kernels";
    case CMD_BENCH_NETWORK:
        return "bench network";
    case CMD_BENCH_COUPLING:
        return "bench coupling";
    case CMD_BENCH_REPLAY:
        return "bench replay";
    case CMD_BENCH_EMULATION:
        return "bench emulation";
    case CMD_REPLAY:
        return "replay";
    case CMD_SWEEP:
        return "sweep";
    case CMD_REPORT:
        return "report";
    case CMD_VALIDATE:
        return "validate";
    default:
        return "?";
    }
}

void describe_range(const opt_def *o, char *buf, size_t n) {
    switch (o->type) {
    case OPT_TYPE_INT:
    case OPT_TYPE_LONG:
        snprintf(buf, n, "an integer in [%.0f, %.0f]", o->min, o->max);
        break;
    case OPT_TYPE_DOUBLE:
        snprintf(buf, n, "a decimal number in [%g, %g]", o->min, o->max);
        break;
    case OPT_TYPE_U64:
        snprintf(buf, n, "an integer in [0, 18446744073709551615]");
        break;
    case OPT_TYPE_CHOICE: /* a leading '|' lets the value be empty (unset): not worth saying */
        snprintf(buf, n, "one of %s", o->choices + (o->choices[0] == '|'));
        break;
    case OPT_TYPE_AUTO:
        snprintf(buf, n, "one of auto|yes|no");
        break;
    case OPT_TYPE_FLAG:
        snprintf(buf, n, "true or false");
        break;
    default:
        snprintf(buf, n, "a text");
        break;
    }
}

/* The policy option behind a row of the table (NULL for the other rows). */
const policy_option *row_policy_option(const opt_def *o) {
    const size_t first = offsetof(run_config, policy_options);
    if (o->offset < first || o->offset >= first + sizeof(((run_config *)0)->policy_options))
        return NULL;
    return policy_option_at((int)((o->offset - first) / sizeof(run_policy_value)));
}

/* Defaults that differ by subcommand: compare runs 8 workers unless --workers is given (one
 * worker has nothing to synchronize). Applied by options_parse and shown by --help. */
static const struct {
    const char *name;
    unsigned command;
    const char *def;
} command_defaults[] = {{"workers", CMD_COMPARE, "8"},
                        {"workers", CMD_VALIDATE, "4"},
                        {"bandwidth", CMD_VALIDATE, "1Gbps"},
                        {"latency", CMD_VALIDATE, "0s"},
                        {"epochs", CMD_VALIDATE, "0.2"}};
#define COMMAND_DEFAULTS ((int)(sizeof command_defaults / sizeof command_defaults[0]))

/* What --help says of a row for some subcommands instead of its own help and default, where the
 * subcommand resolves it otherwise (replay takes a profile's batch; bench replay its own steps).
 * Nothing here is applied: the code of the subcommand does what the text says. */
static const struct {
    const char *name;
    unsigned command;
    const char *help, *def;
} command_help[] = {
    {"batch", CMD_REPLAY,
     "replay --profile, --import: mini-batch size per worker (a trace replays its recorded batch)",
     "the profile's, listed under --profile (64 where it gives none); 64 for --import"},
    {"batch", CMD_BENCH_REPLAY, "mini-batch size per worker", "the profile's"},
    {"batch", CMD_BENCH_KERNELS, "mini-batch size of the training step timed", "64"},
    {"policy", CMD_REPLAY, "synchronization policy",
     "the trace's; bsp for --profile and --import (selsync for a log with local steps)"},
    {"profile", CMD_BENCH_REPLAY, "model profile replayed: a NAME or a .profile file", "resnet101"},
    {"steps", CMD_BENCH_REPLAY, "global steps of each replay", "1000"},
    {"out", CMD_BENCH_NETWORK, "also write the table to DIR/bench_network.csv",
     "none: the table on stdout only"},
    {"gpu", CMD_BENCH_NETWORK,
     "generated platform: GPU class, the hosts' speed as in a replay's platform; the all-reduce "
     "computes nothing, so its times do not depend on it",
     NULL},
    {"gpu-efficiency", CMD_BENCH_NETWORK,
     "generated platform: host speed as a fraction of the GPU's peak FP32 FLOP/s (no effect on "
     "the all-reduce's times, as --gpu)",
     NULL},
    {"workers", CMD_BENCH_NETWORK, "workers mapped on the platform's hosts",
     "every worker host of --platform FILE, 16 on a generated platform"},
    {"workers", CMD_BENCH_COUPLING, "workers", "8"},
    {"epochs", CMD_BENCH_COUPLING, "passes over the training set by all workers together", "1"},
    {"threads", CMD_BENCH_COUPLING,
     "threads computing the replicas in both runs, each with one BLAS thread", "auto"},
    {"hosts-list", CMD_BENCH_REPLAY, "worker counts replayed", "1024,4096,65536"},
    {"model", CMD_BENCH_KERNELS,
     "the model timed: any --model form of train (logreg, mlp, cnn, cnn:lenet, resnet:20, vgg:11, "
     "gpt:wlm, ...; gpt:... on random tokens of a 10,000-word vocabulary)",
     "logreg, mlp and cnn"},
    {"workers", CMD_BENCH_EMULATION, "workers", "8"},
    {"policy", CMD_BENCH_EMULATION, "synchronization policy", "bsp"},
    {"out", CMD_BENCH_EMULATION, "the runs' directories go under DIR/bench-emulation/", NULL},
    {"epochs", CMD_BENCH_EMULATION, "passes over the training set by all workers together", "0.05"},
    {"threads", CMD_BENCH_EMULATION, "threads of the parallel run, beside one thread", "auto"},
};
#define COMMAND_HELP ((int)(sizeof command_help / sizeof command_help[0]))

int command_help_of(unsigned command, int i, const char **help, const char **def) {
    for (int k = 0; k < COMMAND_HELP; k++)
        if ((command_help[k].command & command) &&
            !strcmp(command_help[k].name, options_table[i].name)) {
            *help = command_help[k].help;
            if (command_help[k].def) *def = command_help[k].def;
            return 1;
        }
    return 0;
}

/* The default of row i for `command`: the subcommand's own, else the row's. */
int command_default_at(int k, const char **name, unsigned *command, const char **def) {
    if (k < 0 || k >= COMMAND_DEFAULTS) return 0;
    *name = command_defaults[k].name;
    *command = command_defaults[k].command;
    *def = command_defaults[k].def;
    return 1;
}

const char *default_for(unsigned command, int i) {
    for (int k = 0; k < COMMAND_DEFAULTS; k++)
        if ((command_defaults[k].command & command) &&
            !strcmp(command_defaults[k].name, options_table[i].name))
            return command_defaults[k].def;
    return options_table[i].def;
}

/* The policy bit of the configured policy. */
unsigned policy_bit(const run_config *cfg) {
    const policy_info *p = policy_registry_find(cfg->policy);
    if (p) return POL_OF(p->kind);
    return cfg->workers > 1 ? POL_OF(policy_registry_baseline()->kind) : POL_SINGLE;
}

void format_value(const opt_def *o, const run_config *cfg, char *buf, size_t n) {
    const void *src = const_field_of(cfg, o);
    switch (o->type) {
    case OPT_TYPE_U64:
        snprintf(buf, n, "%llu", (unsigned long long)*(const uint64_t *)src);
        break;
    case OPT_TYPE_INT:
        snprintf(buf, n, "%d", *(const int *)src);
        break;
    case OPT_TYPE_LONG:
        snprintf(buf, n, "%ld", *(const long *)src);
        break;
    case OPT_TYPE_DOUBLE:
        snprintf(buf, n, "%.17g", *(const double *)src);
        break;
    case OPT_TYPE_FLAG:
        snprintf(buf, n, "%s", *(const int *)src ? "true" : "false");
        break;
    case OPT_TYPE_AUTO: {
        int v = *(const int *)src;
        snprintf(buf, n, "%s", v < 0 ? "auto" : v ? "yes" : "no");
        break;
    }
    default: {
        /* a threshold given as a number is written as the other reals are */
        const policy_option *po = row_policy_option(o);
        double x;
        if (po && po->type == POLICY_OPTION_THRESHOLD &&
            number_parse_double((const char *)src, &x) == 0)
            snprintf(buf, n, "%.17g", x);
        else
            snprintf(buf, n, "%s", (const char *)src);
        break;
    }
    }
}

/* Options that describe the invocation rather than the run are not written to config.ini. */
int is_meta(const opt_def *o) {
    return !strcmp(o->name, "help") || !strcmp(o->name, "config");
}

int options_lookup(unsigned command, const char *name, unsigned *policies) {
    table_init();
    int i = find_option_for(command, name);
    if (i < 0 || !(options_table[i].commands & command) || is_meta(&options_table[i])) return 0;
    if (policies) *policies = options_table[i].policies;
    return 1;
}

int options_row_count(void) {
    table_init();
    return OPTIONS_COUNT;
}

void options_row_at(int i, options_row_info *out) {
    static const char *const kinds[] = {
        [OPT_TYPE_U64] = "u64",       [OPT_TYPE_INT] = "int",       [OPT_TYPE_LONG] = "long",
        [OPT_TYPE_DOUBLE] = "double", [OPT_TYPE_STRING] = "string", [OPT_TYPE_CHOICE] = "choice",
        [OPT_TYPE_FLAG] = "flag",     [OPT_TYPE_AUTO] = "auto"};
    table_init();
    SS_ASSERT(i >= 0 && i < OPTIONS_COUNT);
    const opt_def *o = &options_table[i];
    *out = (options_row_info){o->name, kinds[o->type], o->metavar, o->choices,
                              o->min,  o->max,         o->commands};
}

int options_takes_value(unsigned command, const char *arg) {
    table_init();
    if (strncmp(arg, "--", 2) != 0 || strchr(arg, '=')) return 0;
    int i = find_option_for(command, arg + 2);
    return i >= 0 && (options_table[i].commands & command) &&
           options_table[i].type != OPT_TYPE_FLAG;
}

const char *options_closest(unsigned command, const char *name) {
    table_init();
    return closest_option(command, name);
}

unsigned options_policy_bit(const char *policy, int workers) {
    table_init();
    run_config cfg;
    memset(&cfg, 0, sizeof cfg);
    snprintf(cfg.policy, sizeof cfg.policy, "%s", policy);
    cfg.workers = workers;
    return policy_bit(&cfg);
}
