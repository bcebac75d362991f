.version 1
.target trn2
.buffer A hbm bf16 [1024, 512] addr=0
.buffer B hbm bf16 [512, 1024] addr=1048576
.buffer C hbm fp32 [128, 512] addr=2097152
.buffer idx sbuf int32 [128, 4] part=0 offset=0
.buffer x sbuf bf16 [128, 512] part=0 offset=64
.buffer w sbuf bf16 [128, 128] part=0 offset=4096
.buffer y sbuf fp32 [128, 512] part=0 offset=4352
.buffer st sbuf fp32 [128, 6] part=0 offset=6400
.buffer cube sbuf bf16 [128, 4, 64] part=0 offset=6464
.buffer acc psum fp32 [128, 512] part=0 offset=0
.buffer t psum bf16 [128, 128] part=0 offset=4096
.buffer q psum fp32 [64, 8] part=64 offset=6144
.buffer r sbuf bf16 [128, 64] core=1 part=0 offset=0
.buffer rp psum fp32 [128, 512] core=1 part=0 offset=0
tensor load_stationary w wait=s2>=16
tensor multiply_moving acc, x start stop signal=s3
tensor load_stationary w wait=s1>=16 op=9
tensor multiply_moving acc[0:128, 0:512], x start signal=s3 op=9
tensor load_stationary w{p=0:128, off=0, ap=[[1, 128]]} perf=2
tensor multiply_moving acc{p=0:128, off=0, ap=[[1, 256]]}, x{p=0:128, off=256, ap=[[1, 256]]} stop perf=2
tensor transpose t, w
tensor nop
vector dma_copy C, y[0:128, 0:512] queue=15 dge=none
vector tensor_tensor y, acc, x alu=add wait=s3>=2
vector tensor_scalar x, x alu0=multiply imm0=0.5 alu1=add imm1=-1.25
vector scalar_tensor_tensor x, x, x alu0=subtract imm0=0.002 alu1=multiply
vector tensor_reduce st[0:128, 0], y alu=max axis=1
vector tensor_copy x[0:64, 0:512:2], y[64:128, 1:512:2]
vector tensor_copy cube[0:128, 1:3, 0:64:4], cube[0:128, 3, 0:16]
vector memset y
vector bn_stats st, x
vector bn_aggr st[0:128, 0:2], st
vector reciprocal y, y
vector select y, y, acc, y
vector transpose w[0:32, 0:32], w[32:64, 32:64]
vector tensor_copy q, q{p=0:64, off=0, ap=[[2, 4], [1, 2]]}
scalar dma_transpose w, B[0:128, 0:128] queue=2 dge=hw
scalar activation x, y func=gelu scale=2 acc=add
scalar activation x, y, y func=exp
scalar activation x, y, y, y func=identity scale=-1
scalar act_read_accumulator st[0:128, 0:1]
scalar tensor_copy x, y
scalar tensor_scalar y, y alu0=max
scalar reciprocal y, y
gpsimd dma_gather x, A, idx queue=3 dge=sw wait=s1>=16
gpsimd dma_scatter A, x, idx queue=4 dge=sw
gpsimd iota idx step=1
gpsimd iota idx base=-3 step=0.5
gpsimd memset y value=1.5
gpsimd tensor_tensor y, y, y alu=subtract
gpsimd tensor_scalar y, y alu0=min imm0=6
gpsimd scalar_tensor_tensor y, y, y alu0=add imm0=1 alu1=max
gpsimd tensor_reduce st[0:128, 1], y alu=add
gpsimd tensor_copy y, y
gpsimd select y, y, y, y
sync dma_copy x, A[0:128, 0:512] queue=0 dge=none signal=s1
sync dma_copy w, B{off=0, ap=[[1024, 128], [1, 128]]} queue=1 dge=none signal=s2+16 op=3
sync nop
sync sem_wait wait=s3>=1 wait=s4@1>=2 wait=s5@1>=3
sync sem_inc signal=s5@1+2 signal=s6
sync barrier sem=s7 cores=[0.0, 0.1] target=2
.core 0 1
tensor load_stationary r[0:128, 0:64]
tensor multiply_moving rp, r
vector tensor_copy r, r op=7
sync sem_inc signal=s1@0 signal=s2@0+4
sync barrier sem=s7 cores=[0.0, 0.1] target=2
