# syncsim model profile: mlp, imported by 'syncsim profile import' from mlp.json and mlp.params.json
# measured cpu: mean step 0.010394 s over 20 steps at batch 64; layers 0.002945 s, host gap 0.007448 s
# format: traces/FORMAT.md
syncsim-profile 4
name mlp
description mlp measured by torch.profiler on cpu, batch 64, 20 steps (mlp.json)
batch 64
sample_bytes 3144
backward_factor 2
measured_device cpu
measured_batch 64
measured_steps 20
measured_step_s 0.01039382421875
measured_gap_s 0.0074483977050781251
# layer NAME PARAMS FORWARD_FLOPS BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES KERNELS KIND GEMM_N GEMM_K FORWARD_S|- BACKWARD_S|- (FLOPs and bytes per sample; seconds per step of measured_batch)
layer 0 0 0 0 0 0 1 eltwise 0 0 1.7114843749999999e-05 2.1744238281249997e-05
layer 1 200960 0 0 0 0 1 linear 256 784 0.00063645610351562498 0.00081159023437500004
layer 2 0 0 0 0 0 1 eltwise 0 0 2.7424414062499996e-05 1.0316894531249999e-05
layer 3 65792 0 0 0 0 1 linear 256 256 0.000140118115234375 0.00078410112304687504
layer 4 0 0 0 0 0 1 eltwise 0 0 9.628173828125e-06 1.8355078124999999e-05
layer 5 2570 0 0 0 0 1 linear 10 256 3.7884082031250003e-05 0.000113575
layer loss 0 0 0 0 0 1 eltwise 0 0 6.5848681640625004e-05 0.00025126953124999997
total 269322 0
