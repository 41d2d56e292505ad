# syncsim model profile: cnn, imported by 'syncsim profile import' from cnn.json and cnn.params.json
# measured cpu: mean step 0.205470 s over 20 steps at batch 64; layers 0.192749 s, host gap 0.012721 s
# format: traces/FORMAT.md
syncsim-profile 4
name cnn
description cnn measured by torch.profiler on cpu, batch 64, 20 steps (cnn.json)
batch 64
sample_bytes 3144
backward_factor 2
measured_device cpu
measured_batch 64
measured_steps 20
measured_step_s 0.20547033793945313
measured_gap_s 0.012721095751953126
# layer NAME PARAMS FORWARD_FLOPS BACKWARD_FLOPS|- FORWARD_BYTES BACKWARD_BYTES KERNELS KIND GEMM_N GEMM_K FORWARD_S|- BACKWARD_S|- (FLOPs and bytes per sample; seconds per step of measured_batch)
layer 0 832 0 0 0 0 1 conv 32 25 0.013521438818359374 0.0089666529785156247
layer 1 0 0 0 0 0 1 eltwise 0 0 0.0039198543945312501 0.0098681325683593751
layer 2 0 0 0 0 0 1 eltwise 0 0 0.022257297119140623 0.0036514604980468746
layer 3 51264 0 0 0 0 1 conv 64 800 0.033274882666015623 0.069712206787109376
layer 4 0 0 0 0 0 1 eltwise 0 0 0.0012014371582031249 0.001970178173828125
layer 5 0 0 0 0 0 1 eltwise 0 0 0.012626398291015624 0.001324342529296875
layer 6 0 0 0 0 0 1 eltwise 0 0 3.6495117187500001e-05 2.1751806640624998e-05
layer 7 401536 0 0 0 0 1 linear 128 3136 0.0030571331542968748 0.005652978613281249
layer 8 0 0 0 0 0 1 eltwise 0 0 6.0992480468749999e-05 0.00062566201171875002
layer 9 1290 0 0 0 0 1 linear 10 128 0.00031448046874999998 0.00056656884765624992
layer loss 0 0 0 0 0 1 eltwise 0 0 7.0081640624999997e-05 4.8816064453125001e-05
total 454922 0
