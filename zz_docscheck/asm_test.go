package zzdocscheck

import (
	"testing"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa/asm"
)

const prog1 = `.version 1
.target trn2
// comment
.buffer x hbm fp32 [1024, 2048]
.buffer y hbm bf16 [64]  addr=8192
.buffer t sbuf fp32 [128, 4, 512]
.buffer u sbuf bf16 [128, 512] part=0 offset=65536
.buffer v sbuf bf16 [32, 64]   part=32
.buffer w sbuf bf16 [128, 100]
.buffer ps psum fp32 [128, 300]
.buffer ps2 psum fp32 [128, 512]
.buffer idx sbuf int32 [128, 1]
.core 0 1
.buffer z sbuf fp32 [128, 16]
.core 0 0
sync dma_copy t, x[0:128, 0:2048] queue=3 signal=s1
sync dma_copy t[0:128, 0:4:2, 0:512:2], x{off=0, ap=[[2048, 128], [512, 2], [2, 256]]} queue=4
scalar activation u, t[0:128, 0, 0:512] func=gelu scale=0.5 acc=add wait=s1>=16 signal=s2+2 op=7
vector tensor_scalar w, w alu0=multiply imm0=2 alu1=add imm1=-1
vector tensor_tensor u, u, u alu=add
vector tensor_reduce w[0:128, 0:1], u alu=max axis=1
gpsimd iota w base=0 step=1
vector memset w value=0
vector transpose v[0:32, 0:32], v{p=0:32, off=32, ap=[[1, 32]]}
tensor matmul ps2, u[0:128, 0:128], u perf=0 start stop signal=s5@1
sync sem_inc signal=s9@0.1
sync barrier sem=s4 cores=[0.0, 0.1] target=2
vector nop wait=s2>=2
`

func TestAsm(t *testing.T) {
	cfg, err := configs.Load("../examples/assembly-run.yaml", configs.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	prog, err := asm.Parse(prog1, "p.asm", asm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, _ := asm.String(prog)
	t.Log("\n" + s)
	lim := cfg.Hardware.Limits()
	for _, src := range prog.Streams {
		st := src.Open()
		for {
			in, _ := st.Next()
			if in == nil {
				break
			}
			if err := lim.Check(in); err != nil {
				t.Logf("line %d: %v", in.Line, err)
			}
			t.Logf("line %d: outs=%+v ins=%+v", in.Line, in.Outs[0:min(1, len(in.Outs))], "")
		}
	}
	bad := []string{
		".target trn2\n",
		".version 1\nvector tensor_copy a, b\n",
		".version 1\n.buffer a sbuf bf16 [128, 64]\ntensor tensor_copy a, a\n",
		".version 1\n.buffer a sbuf bf16 [128, 64]\nvector tensor_copy a, a queue=1\n",
		".version 1\n.buffer a sbuf bf16 [128, 64]\nvector tensor_copy a[0:128:2], a\n",
		".version 1\n.buffer a sbuf bf16 [128, 64]\nvector tensor_copy a[0:129], a\n",
		".version 1\n.buffer a hbm bf16 [128, 64] offset=5\n",
		".version 1\n.buffer start sbuf bf16 [128, 64]\n",
		".version 1\n.buffer a sbuf bf16 [128, 64]\nvector tensor_copy a, a wait=s1>16\n",
	}
	for _, b := range bad {
		_, err := asm.Parse(b, "k.asm", asm.Options{})
		t.Logf("%q -> %v", b, err)
	}
}
