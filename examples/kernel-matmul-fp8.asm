; kernel-matmul-fp8.asm: C[128, 512] = A[128, 1024] @ B[1024, 512] in FP8
; (fp8e4) on one Trainium2 NeuronCore, in TensorE's double-row mode, written
; by hand.
;
; Double-row FP8 (perf=2, NeuronCore-v3) packs two rows of the contraction
; into each PE row: the logical array is 256x128, and a load_stationary /
; multiply_moving pair takes the time of a BF16 pair while doing twice the
; FLOPs (reference §2.2). In trnsim's ISA, as on the hardware, a
; double-row stationary tile is [128, 2 x 128] and a moving tile
; [128, 2 x 512] (two K rows per partition each), so one matmul contracts
; K = 256 into an output of 512 columns. K = 1024 is four such matmuls,
; accumulated in one PSUM bank. Both inputs are stored in HBM the same
; way: row p of K-pair j holds K rows 256j + p and 256j + 128 + p.
;
; The peak that HFU divides by follows the mode: 2 x 78.64 = 157.29 TFLOPS
; per core for these matmuls (a BF16 kernel would be measured against
; 78.64).
;
; Semaphores: s0 A^T tiles loaded (+16 per transfer), s1 B tiles loaded,
; s2 accumulation closed, s3 result in SBUF, s4 result in HBM.
.version 1
.target trn2
.core 0 0

.buffer at_hbm hbm fp8e4 [512, 256]      ; A^T, four K-pairs of [128, 2 x 128]
.buffer b_hbm  hbm fp8e4 [512, 1024]     ; B, four K-pairs of [128, 2 x 512]
.buffer c_hbm  hbm bf16 [128, 512]

.buffer at_sb sbuf fp8e4 [128, 4, 256]
.buffer b_sb  sbuf fp8e4 [128, 4, 1024]
.buffer c_ps  psum fp32 [128, 512]
.buffer c_sb  sbuf bf16 [128, 512]

sync dma_copy at_sb[0:128, 0], at_hbm[0:128] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 0], b_hbm[0:128] queue=1 dge=hw signal=s1
sync dma_copy at_sb[0:128, 1], at_hbm[128:256] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 1], b_hbm[128:256] queue=1 dge=hw signal=s1
sync dma_copy at_sb[0:128, 2], at_hbm[256:384] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 2], b_hbm[256:384] queue=1 dge=hw signal=s1
sync dma_copy at_sb[0:128, 3], at_hbm[384:512] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 3], b_hbm[384:512] queue=1 dge=hw signal=s1

tensor matmul c_ps, at_sb[0:128, 0], b_sb[0:128, 0] start perf=2 wait=s0>=16 wait=s1>=16 op=1
tensor matmul c_ps, at_sb[0:128, 1], b_sb[0:128, 1] perf=2 wait=s0>=32 wait=s1>=32 op=1
tensor matmul c_ps, at_sb[0:128, 2], b_sb[0:128, 2] perf=2 wait=s0>=48 wait=s1>=48 op=1
tensor matmul c_ps, at_sb[0:128, 3], b_sb[0:128, 3] stop perf=2 wait=s0>=64 wait=s1>=64 signal=s2 op=1

vector tensor_copy c_sb, c_ps wait=s2>=1 signal=s3 op=1
sync dma_copy c_hbm, c_sb queue=0 dge=hw wait=s3>=1 signal=s4
