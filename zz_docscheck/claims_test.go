package zzdocscheck

import (
	"testing"

	"github.com/trnsim/trnsim/configs"
	"github.com/trnsim/trnsim/isa/asm"
)

func TestClaims(t *testing.T) {
	cfg, _ := configs.Load("../examples/assembly-run.yaml", configs.LoadOptions{})
	lim := cfg.Hardware.Limits()
	srcs := []string{`.version 1
.target trn2
.core 0 0
.buffer a_hbm hbm bf16 [128, 512]
.buffer a     sbuf bf16 [128, 512]
.buffer y     sbuf bf16 [128, 512]

sync   dma_copy a, a_hbm queue=0 signal=s0          ; 16 engines: s0 += 16
scalar activation y, a func=gelu wait=s0>=16 signal=s1
sync   dma_copy a_hbm, y queue=1 wait=s1>=1
`, `.version 1
.buffer x  hbm  fp32 [1024, 2048]              ; addr=0
.buffer y  hbm  bf16 [64]          addr=8192
.buffer t  sbuf fp32 [128, 4, 512]             ; offset=0 (8 KiB per partition)
.buffer u  sbuf bf16 [128, 512]    offset=65536
.buffer v  sbuf bf16 [32, 64]      part=32     ; offset=66560: after u, 64-aligned
.buffer p1 psum fp32 [128, 300]                ; offset=0, 1200 bytes
.buffer p2 psum fp32 [128, 512]                ; offset=2048: would straddle bank 0/1
.buffer a sbuf bf16 [128, 1024]
.buffer c_hbm hbm bf16 [128, 512]
vector tensor_scalar u, u alu0=multiply imm0=1e-3 imm1=-1 alu1=add
vector tensor_copy a{p=0:64, off=256, ap=[[512, 2], [1, 256]]}, a{p=0:64, off=256, ap=[[512, 2], [1, 256]]}
sync dma_copy t[0:64, 3], c_hbm{off=0, ap=[[512, 64], [1, 512]]}
vector tensor_copy t[0:64, 3], x[0:64, 0:512]
.buffer q sbuf bf16 [128, 010]
`}
	for _, s := range srcs {
		p, err := asm.Parse(s, "x.asm", asm.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, _ := asm.String(p)
		t.Log("\n" + out)
		for _, src := range p.Streams {
			st := src.Open()
			for in, _ := st.Next(); in != nil; in, _ = st.Next() {
				if err := lim.Check(in); err != nil {
					t.Logf("line %d: %v", in.Line, err)
				}
			}
		}
	}
	_, err := asm.Parse("; nothing\n", "e.asm", asm.Options{})
	t.Log(err)
}
