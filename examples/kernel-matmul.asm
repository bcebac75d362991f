; kernel-matmul.asm: C[128, 512] = A[128, 256] @ B[256, 512] in BF16 on one
; Trainium2 NeuronCore, written by hand.
;
; A is stored transposed in HBM (A^T, [K=256, M=128]: the NKI "lhsT"
; layout), so each 128-row K-tile of A^T loads straight into the stationary
; layout: contraction (K) on the partition axis, M on the free axis.
; The K dimension is 2 tiles of 128; TensorE accumulates both into one PSUM
; bank (start on the first matmul, stop on the last).
;
; Semaphores (each starts at 0 and only counts up):
;   s0  A^T tiles loaded  (+16 per DMA transfer: one per DMA engine)
;   s1  B tiles loaded    (+16 per DMA transfer)
;   s2  accumulation group closed in PSUM
;   s3  result copied to SBUF
;   s4  result written back to HBM (+16)
.version 1
.target trn2
.core 0 0

; HBM tensors (placed automatically at 4 KiB-aligned addresses).
.buffer at_hbm hbm bf16 [256, 128]        ; A^T: [K, M]
.buffer b_hbm  hbm bf16 [256, 512]        ; B:   [K, N]
.buffer c_hbm  hbm bf16 [128, 512]        ; C:   [M, N]

; On-chip tiles of core 0. Dimension 0 is the partition axis.
.buffer at_sb sbuf bf16 [128, 2, 128]     ; two K-tiles of A^T
.buffer b_sb  sbuf bf16 [128, 2, 512]     ; two K-tiles of B
.buffer c_ps  psum fp32 [128, 512]        ; 2 KiB per partition: one PSUM bank
.buffer c_sb  sbuf bf16 [128, 512]

; Loads: the sync sequencer triggers them through a hardware DGE block;
; A^T on queue 0, B on queue 1, so the two streams of transfers overlap.
sync dma_copy at_sb[0:128, 0], at_hbm[0:128, 0:128] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 0], b_hbm[0:128] queue=1 dge=hw signal=s1
sync dma_copy at_sb[0:128, 1], at_hbm[128:256, 0:128] queue=0 dge=hw signal=s0
sync dma_copy b_sb[0:128, 1], b_hbm[128:256] queue=1 dge=hw signal=s1

; matmul DST, STATIONARY, MOVING expands to load_stationary + multiply_moving.
; Waits go on the load_stationary, signals on the multiply_moving.
tensor matmul c_ps, at_sb[0:128, 0, 0:128], b_sb[0:128, 0, 0:512] start wait=s0>=16 wait=s1>=16 op=1
tensor matmul c_ps, at_sb[0:128, 1, 0:128], b_sb[0:128, 1, 0:512] stop wait=s0>=32 wait=s1>=32 signal=s2 op=1

; Evacuate PSUM to SBUF on VectorE, casting FP32 to BF16.
vector tensor_copy c_sb, c_ps wait=s2>=1 signal=s3 op=1

; Store. The HBM side is written as a raw access pattern for illustration:
; the first [stride, size] pair is the row dimension (128 rows of 512
; elements), the second the elements within a row.
sync dma_copy c_hbm{off=0, ap=[[512, 128], [1, 512]]}, c_sb queue=0 dge=hw wait=s3>=1 signal=s4
