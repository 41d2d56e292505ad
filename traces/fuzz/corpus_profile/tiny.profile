syncsim-profile 1
name tiny
description two layers
batch 8
sample_bytes 16
layer a 10 100
layer b 5 50 70
total 15 150
