; A program that uses every opcode, view kind and attribute.
.version 1   // format version
.target trn2
.buffer A hbm bf16 [1024, 512]
.buffer B hbm bf16 [512, 1024] addr=1048576
.buffer C hbm fp32 [128, 512] chip=0
.buffer idx sbuf int32 [128, 4]
.buffer x sbuf bf16 [128, 512]
.buffer w sbuf bf16 [128, 128] part=0 offset=4096
.buffer y sbuf fp32 [128, 512]
.buffer st sbuf fp32 [128, 6]
.buffer cube sbuf bf16 [128, 4, 64]
.buffer acc psum fp32 [128, 512]
.buffer t psum bf16 [128, 128] offset=4096
.buffer q psum fp32 [64, 8] part=64 offset=6144

sync dma_copy x, A[0:128, 0:512] queue=0 dge=none signal=s1
sync dma_copy w, B{off=0, ap=[[1024, 128], [1, 128]]} queue=1 signal=s2+16 op=3
scalar dma_transpose w, B[0:128, 0:128] queue=2 dge=hw
gpsimd dma_gather x, A, idx queue=3 dge=sw wait=s1>=16
gpsimd dma_scatter A, x, idx queue=4 dge=sw
vector dma_copy C, y[0:128, 0:512] queue=15
tensor load_stationary w wait=s2>=16
tensor multiply_moving acc, x start stop signal=s3
tensor matmul acc[0:128, 0:512], w, x start wait=s1>=16 signal=s3 op=9
tensor matmul acc{p=0:128, off=0, ap=[[1, 256]]}, w{p=0:128, off=0, ap=[[1, 128]]}, x{p=0:128, off=256, ap=[[1, 256]]} stop perf=2
tensor transpose t, w
tensor nop
vector tensor_tensor y, acc, x alu=add wait=s3>=2
vector tensor_scalar x, x alu0=multiply imm0=0.5 alu1=add imm1=-1.25
vector scalar_tensor_tensor x, x, x alu0=subtract imm0=2e-3 alu1=multiply
vector tensor_reduce st[0:128, 0], y alu=max axis=1
vector tensor_copy x[0:64, 0:512:2], y[64:128, 1:512:2]
vector tensor_copy cube[0:128, 1:3, 0:64:4], cube[0:128, 3, 0:16]
vector memset y value=0
vector bn_stats st, x
vector bn_aggr st[0:128, 0:2], st
vector reciprocal y, y
vector select y, y, acc, y
vector transpose w[0:32, 0:32], w[32:64, 32:64]
vector tensor_copy q, q{p=0:64, off=0, ap=[[2, 4], [1, 2]]}
scalar activation x, y func=gelu scale=2 acc=add
scalar activation x, y, y func=exp
scalar activation x, y, y, y func=identity scale=-1
scalar act_read_accumulator st[0:128, 0:1]
scalar tensor_copy x, y
scalar tensor_scalar y, y alu0=max imm0=0
scalar reciprocal y, y
gpsimd iota idx base=0 step=1
gpsimd iota idx base=-3 step=0.5
gpsimd memset y value=1.5
gpsimd tensor_tensor y, y, y alu=subtract
gpsimd tensor_scalar y, y alu0=min imm0=6
gpsimd scalar_tensor_tensor y, y, y alu0=add imm0=1 alu1=max
gpsimd tensor_reduce st[0:128, 1], y alu=add
gpsimd tensor_copy y, y
gpsimd select y, y, y, y
sync nop
sync sem_wait wait=s3>=1 wait=s4@1>=2 wait=s5@0.1>=3
sync sem_inc signal=s5@0.1+2 signal=s6
sync barrier sem=s7 cores=[0.0, 0.1] target=2
.core 0 1
.buffer r sbuf bf16 [128, 64]
.buffer rp psum fp32 [128, 512]
vector tensor_copy r, r op=7
sync sem_inc signal=s1@0 signal=s2@0.0+4
sync barrier sem=s7 cores=[0, 1] target=2
tensor matmul rp, r[0:128, 0:64], r
