/* The framework's share of a step: what the host spends issuing the step's operations, beside
 * what the GPU spends running them (compute.h's per-layer model), on two timelines.
 *
 * A training loop in eager PyTorch issues every operation from the host: zero_grad, each layer's
 * forward (with autograd recording), the loss, the backward pass (autograd's engine, one node at
 * a time), the optimizer. A layer's kernels start once the host has issued them and the GPU has
 * finished the layer before; the step ends when the last kernel has run. Small models, small
 * batches and fast GPUs are bound by the host, where the device model alone is several times
 * too fast (docs/COMPUTE.md, "The framework's host time").
 *
 * Frameworks:
 * - eager (the command line's default): PyTorch eager mode as bench/torch_gpu.py runs it
 *   (zero_grad(set_to_none=False), SGD with momentum and weight decay, foreach), with the host
 *   costs below and, on the device, their per-parameter kernels (compute.c, [PARAMS]: the zero
 *   fill, each gradient added into the kept one, the foreach update's four passes);
 * - graphs: the step captured in a CUDA graph (torch.cuda.graphs, torch.compile with
 *   mode="reduce-overhead"): no host costs, and each kernel launched from the graph;
 * - ideal: the device's time alone (the library's default: compute.h as it was).
 *
 * The host costs were measured on one H100 machine with a 16-core host (PyTorch 2.11.0,
 * bench/torch_host.py; traces/reference/compute/h100-host.csv) and are used for every GPU class:
 * they belong to the host's processor and the framework, not the GPU.
 */
#ifndef SS_SIM_FRAMEWORK_H
#define SS_SIM_FRAMEWORK_H

typedef enum sim_framework {
    SIM_FRAMEWORK_IDEAL = 0,
    SIM_FRAMEWORK_EAGER = 1,
    SIM_FRAMEWORK_GRAPHS = 2
} sim_framework;

/* "eager", "graphs", "ideal"; SS_EUSAGE naming `option` and the valid forms otherwise. */
int sim_framework_parse(const char *option, const char *text, sim_framework *out);
const char *sim_framework_name(sim_framework f);

struct sim_layer_cost;

/* One step on the two timelines. On entry fwd_s[i], bwd_s[i] and *optimizer_s hold the device's
 * times (compute.h); on return each holds that part's share of the step: the time from the end
 * of the part before it (in the order forward 0..n-1, backward n-1..0, optimizer) to its own
 * end, so that the shares add up to the step and a layer's gradient is ready when its backward
 * share ends. launch_s is the device model's time per kernel launch (graphs replace it with a
 * graph's). host_sync: the policy reads a value of the step back to the host (SelSync's norm),
 * which costs a round trip after the step. Returns the step's total. ideal: the device's times,
 * unchanged. */
double sim_framework_step(sim_framework fw, int host_sync, double launch_s,
                          const struct sim_layer_cost *layers, int n, double *fwd_s, double *bwd_s,
                          double *optimizer_s);

/* Host seconds the framework spends on one step of these layers (eager; 0 otherwise): the sum of
 * the host timeline, for the banner and the tests. */
double sim_framework_host_s(sim_framework fw, int host_sync, const struct sim_layer_cost *layers,
                            int n);

#endif
